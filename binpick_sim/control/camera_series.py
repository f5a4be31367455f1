"""Camera frames on the time-indexed robot interface (robot_interfaces' `get_camera_observation(t)`).

The camera runs slower than the robot: a frame is captured every `period` robot time indices (as the
render worker keeps up: while it draws one frame no other is asked for, so a slow renderer lowers the
frame rate, never the physics rate). Each frame keeps the robot time index t of the state it shows (the
state of observation t, before action t acts), and `get(t)` answers the first frame captured at or
after t: it blocks until there is one, and refuses a t older than the robot's buffer, or whose frame has
left the camera's own (shorter) buffer, as the robot series refuse a time index no longer kept.

Frames are drawn in a render worker (cell/render_process/worker.py) from a capture of the live state, as
the camera node's are, so rendering does not stall the physics thread that runs the robot.
"""
from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass

import numpy as np

from ..cell.render_process.worker import RenderWorker, capture
from .time_series import TimeIndexError

CAMERA_BUFFER = 30  # frames kept (a 640x480 frame with its depth is 2.1 MB)


@dataclass(frozen=True)
class CameraObservation:
    t: int  # the robot time index whose state the frame shows (the first captured at or after the one asked)
    timestamp_ms: float  # that index's robot timestamp
    stamp: float  # sim time of the frame [s]
    rgb: np.ndarray  # H x W x 3 uint8
    depth: np.ndarray  # H x W float32, metres along the optical axis
    k: np.ndarray  # 3x3 intrinsics (ROS convention)


class CameraSeries:
    """Frames of `sim.camera` by robot time index; `on_step(t)` runs on the physics thread after each step
    of `backend` (RobotBackend.on_step), `get` on any thread."""

    def __init__(self, sim, backend, period: int, maxlen: int = CAMERA_BUFFER):
        if period < 1:
            raise ValueError(f"a camera period is at least 1 time index, got {period}")
        self.sim, self.backend, self.period, self.maxlen = sim, backend, int(period), maxlen
        self.frames: deque[CameraObservation] = deque()
        self.dropped = -1  # the robot time index of the newest frame that left the buffer
        self.changed = threading.Condition()
        self.worker: RenderWorker | None = None
        self.pending: tuple[int, float] | None = None  # (t, timestamp_ms) of the frame being drawn
        self.next_capture = 0
        self.error = ""
        self.on_frame: list = []  # callbacks(frame) after a frame is recorded (the robot node publishes it)

    def on_step(self, t: int) -> None:
        """Physics thread: collect a finished frame, and ask for the next once `period` indices passed."""
        if self.error:
            return
        try:
            if self.worker is not None and self.worker.busy:
                frame = self.worker.poll()
                if frame is None:
                    return
                self._append(CameraObservation(*self.pending, frame.stamp, frame.rgb, frame.depth, frame.k))
            if t >= self.next_capture:
                if self.worker is None:
                    self.worker = RenderWorker(self.sim.config, self.sim.world.renderer.name)
                self.worker.request(capture(self.sim, self.sim.camera, segmentation=False))
                self.pending = (t, self.backend.timestamps.get(t))
                self.next_capture = t + self.period
        except RuntimeError as exc:  # the worker failed: every waiting and later get() hears why
            with self.changed:
                self.error = str(exc)
                self.changed.notify_all()

    def _append(self, frame: CameraObservation) -> None:
        with self.changed:
            self.frames.append(frame)
            while len(self.frames) > self.maxlen:
                self.dropped = self.frames.popleft().t
            self.changed.notify_all()
        for callback in self.on_frame:
            callback(frame)

    def get(self, t: int, timeout: float | None = None) -> CameraObservation:
        """The first frame captured at or after robot time index `t`; blocks until there is one."""
        with self.changed:
            if t < 0:
                raise TimeIndexError(f"time index {t} does not exist (indices start at 0)")
            oldest = self.backend.observations.newest - self.backend.observations.maxlen + 1
            if t < oldest:
                raise TimeIndexError(f"time index {t} is no longer kept (the oldest now is {oldest})")
            if not self.changed.wait_for(lambda: self.error or (self.frames and self.frames[-1].t >= t), timeout):
                raise TimeoutError(f"no camera frame at or after time index {t} within {timeout} s")
            if self.error:
                raise RuntimeError(f"the camera stopped: {self.error}")
            frame = next(f for f in self.frames if f.t >= t)
            if frame is self.frames[0] and self.dropped >= t:
                raise TimeIndexError(f"the camera frame for time index {t} is no longer kept (only the last "
                                     f"{self.maxlen} frames are; the oldest is of time index {frame.t})")
            return frame

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()
            self.worker = None
