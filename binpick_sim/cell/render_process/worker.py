"""Rendering in a process of its own, from a mirror of the scene, so that frames do not stall physics.

The physics thread only copies what the picture depends on (`capture`: every arm's joint positions,
the bins' poses (a shaken bin moves), each object's URDF, scale and pose, the camera's config, the sim
time), well under a millisecond, and sends it to the worker; the worker keeps a copy of the cell
(ground, bins, arm: built from the same scene file), brings it to that state (objects added, moved or
removed by name), renders with the same renderer and sends the images back (with the point cloud built
from them, when asked: on the physics thread that was most of a large frame's cost), stamped with the sim
time of the state they show. Whoever asked collects the frame (`poll` / `wait`: the camera node's frame
thread, nodes/servers/camera_frames.py) and publishes it. While the worker renders, one more state at most
waits for it (in its socket: the worker starts it the moment the frame is done) and no more are captured:
a slow renderer lowers the frame rate, not the physics rate.

The reasoner's `visible` / `occluding` are answered by a worker of their own (`VisibilityRequest`): the
same mirror, masks drawn by the scene file's renderer (visibility.py), which the live process cannot
do when that renderer is `egl` and the live world already holds the process's one EGL client.

The worker is a fresh Python (`python -m binpick_sim.cell.render_process.worker`), never a fork (a process
with DDS threads must not fork), and not multiprocessing's spawn either: spawn runs the parent's main
script again in the child, so a plain script without an `if __name__ == "__main__":` guard that asked a
reasoner `visible` would start its whole program again in the worker (and fail there). The two talk
over a socket pair with multiprocessing's Connection (pickled messages); a frame's arrays go through a
file in shared memory beside it (shared_frames.py), not through the socket: one copy on each side, and the
worker does not wait for the node to read a 2 MB frame in pieces.
"""
from __future__ import annotations

import dataclasses
import os
import socket
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Callable

import numpy as np

from ...config import CameraConfig, Config, config_from_dict, config_to_dict
from .shared_frames import FrameReader, FrameWriter, InSharedMemory, shared_file
from ..rendering.renderers import spelled
from ..vision.camera import organised_cloud
from ..vision.visibility import View, object_visibility


AHEAD = 2  # requests a camera keeps one worker holding: the frame it draws and the next state, in its socket


@dataclass(frozen=True)
class SceneState:
    """What a frame shows: everything a render of the cell depends on, at sim time `stamp`."""

    stamp: float
    camera: CameraConfig
    joints: tuple[tuple[float, ...], ...]  # per arm (the scene's order), every joint of its body in index order
    bins: tuple[tuple[tuple, tuple], ...]  # per bin (the scene's order): position, xyzw
    objects: tuple[tuple[str, int, str, float, tuple, tuple], ...]  # name, marker id, urdf, scale, position, xyzw
    segmentation: bool
    points: bool = False  # the organised XYZRGB cloud too, built here rather than on the physics thread


@dataclass(frozen=True)
class RenderedFrame:
    stamp: float
    rgb: np.ndarray
    depth: np.ndarray
    labels: np.ndarray | None  # segmentation as cell/labels.py ids (the worker's body ids mean nothing here)
    k: np.ndarray  # the intrinsics of the camera as it was for this frame
    cloud: np.ndarray | None = None  # H x W x 4 float32, camera.pack_cloud's layout; None unless asked
    draw_seconds: float = 0.0  # the worker's Camera.render of this frame (wall time)
    work_seconds: float = 0.0  # all the worker did for it: mirror, draw, labels, cloud (not the send)


class WorkerGone(RuntimeError):
    """The worker process has ended (killed, crashed, or it could not start): a new one is needed."""


class FrameFailed(RuntimeError):
    """The worker could not draw the frame asked for, and is still serving."""


@dataclass(frozen=True)
class VisibilityRequest:
    """visible / occluding of `objects` (names) in the captured `state`, seen from `view`; `arm_names`:
    what the answers call each arm (the scene's order)."""

    state: SceneState
    view: View
    objects: tuple[str, ...]
    arm_names: tuple[str, ...]


@dataclass(frozen=True)
class VisibilityAnswer:
    stamp: float
    objects: dict[str, dict]  # visibility.object_visibility's answer
    renderer: str  # what drew the masks (rendering.Renderer.describe), as the worker's world has it


def capture(sim, camera, segmentation: bool, points: bool = False) -> SceneState:
    """The state of the live world a frame of `camera` depends on (physics thread)."""
    c = sim.world.client
    joints = tuple(tuple(s[0] for s in c.getJointStates(arm.body, range(c.getNumJoints(arm.body)))) for arm in sim.arms)
    bins = tuple(tuple(map(tuple, c.getBasePositionAndOrientation(b.body))) for b in sim.scene.bins)
    objects = []
    for obj in sim.scene.objects:
        position, orientation = c.getBasePositionAndOrientation(obj.body)
        objects.append((obj.name, obj.index, str(obj.urdf), float(obj.scale), tuple(position), tuple(orientation)))
    return SceneState(sim.world.time, camera.config, joints, bins, tuple(objects), segmentation, points)


class RenderWorker:
    """One worker process rendering the cell described by `config` with `renderer`: one camera's frames
    (`SceneState` requests, through RenderWorkers) or the reasoner's masks (`VisibilityRequest`)."""

    def __init__(self, config: Config, renderer: str):
        data = config_to_dict(config)  # read (and checked) by the worker: config_from_dict
        data["simulation"].update(renderer=renderer, gui=False)
        ours, theirs = socket.socketpair()
        self.connection = Connection(ours.detach())
        self.frames = FrameReader(shared_file())  # where the worker puts its frames' arrays
        try:
            self.process = WorkerProcess(theirs.fileno(), self.frames.fd)
        except BaseException:  # e.g. no process could be started: nothing of this worker stays open
            self.connection.close()
            self.frames.close()
            raise
        finally:
            theirs.close()
        self.connection.send(data)  # the first message: the scene the worker builds
        self.pending = 0  # requests sent whose reply has not been taken; the worker serves them in order

    @property
    def pid(self) -> int | None:
        return self.process.pid

    @property
    def busy(self) -> bool:
        """Whether a request has not been answered yet."""
        return self.pending > 0

    def fileno(self) -> int:
        """The socket a reply arrives on, for `multiprocessing.connection.wait` (or select)."""
        return self.connection.fileno()

    def request(self, state: SceneState | VisibilityRequest) -> None:
        """Send a request. One may be sent while another is served: it waits in the socket, and the worker
        starts it the moment the one before is done (the camera's frame thread keeps one ahead)."""
        self.pending += 1
        try:
            self.connection.send(state)
        except OSError:  # the worker is gone (e.g. it could not start): poll says why, or that it stopped
            pass

    def poll(self) -> RenderedFrame | VisibilityAnswer | None:
        """The oldest request's finished frame, if the worker has one; WorkerGone if the worker has ended,
        FrameFailed (both RuntimeErrors) if it could not draw this one."""
        if not self.pending or not self.connection.poll():
            return None
        try:
            reply = self.connection.recv()
            if isinstance(reply, InSharedMemory):
                reply = self.frames.receive(reply)
        except (EOFError, OSError):
            self.pending = 0
            raise WorkerGone(f"the render worker stopped (pid {self.pid}, {_ending(self.process)})") from None
        self.pending -= 1
        if isinstance(reply, BaseException):
            raise FrameFailed(f"the render worker failed: {reply}")
        return reply

    def wait(self, timeout: float) -> RenderedFrame | VisibilityAnswer | None:
        """Block until the oldest request's frame is done (or `timeout` seconds pass)."""
        if self.pending and self.connection.poll(timeout):
            return self.poll()
        return None

    def close(self) -> None:
        """Stop the worker. One that is drawing a frame would hear the stop only once the frame is done
        (seconds for a large TinyRenderer frame on a busy machine), and shutdown must not wait for a
        picture nobody will see: it is killed at once; an idle one stops when told."""
        if not self.pending:
            try:
                self.connection.send(None)
            except (BrokenPipeError, OSError):
                pass
            self.process.join(1.0)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(1.0)
        self.connection.close()
        self.frames.close()


class RenderWorkers:
    """A camera's render workers: one to start with, and one more each time the camera's frame thread finds
    them behind its rate (`grow`), up to `most`. They draw the frames in turn, answered in the order they were
    asked for; the camera's frame thread (nodes/servers/camera_frames.py) sees only this (`request`, `poll`,
    `pending`, `ahead`, `fileno`, `grow`, `settled`, `close`, `pids`).

    Why more than one: a frame is drawn on the one thread that asks PyBullet for it, and much of that is
    serial. With llvmpipe about half of a 640x480 frame runs on one core while the other waits, and with
    NVIDIA's EGL the asking thread's CPU is the whole frame (doc/benchmarks.md, "per thread"). Raw egl 640x480
    frames drawn by two processes at once came to 1.66x one process's on a 2-core machine, and to 1.7x (four
    processes: 2.9x) on an H200. Why only when behind: each worker is a process with its own copy of the cell
    (150-250 MB) and a second or two of CPU to start, which a camera whose one worker keeps its rate (the
    default 10 Hz at 640x480 with egl on a 2-core CPU; a GPU draws such a frame in a few ms) never pays.

    A worker started by `grow` first builds its cell and draws the newest state asked for, a frame thrown
    away; only then does it take turns, so the frames, answered in order, never wait for its start.
    """

    def __init__(self, start: Callable[[], RenderWorker], most: int = 1):
        if most < 1:
            raise ValueError(f"a camera needs one render worker at least, not {most}")
        self.start, self.most = start, most
        self.workers = [start()]
        self.warming: RenderWorker | None = None  # started by `grow`, drawing its first frame: no turns yet
        self.settled = False  # a frame came back since the workers last changed: their pace can be judged
        self.growth_error: str | None = None  # why a worker started by `grow` did not join (said once, then None)
        self._asked: deque[RenderWorker] = deque()  # who holds each request, oldest first
        self._turn = 0
        self._newest: SceneState | None = None  # the latest state asked for: what a new worker draws first

    @property
    def ahead(self) -> int:
        return len(self.workers) + AHEAD - 1  # each draws one; the next state waits in one's socket

    @property
    def pids(self) -> tuple[int | None, ...]:
        return tuple(worker.pid for worker in self._processes())

    @property
    def pending(self) -> int:
        return len(self._asked)

    def fileno(self) -> int:
        """The socket the next frame in order arrives on."""
        return (self._asked[0] if self._asked else self.workers[0]).fileno()

    def request(self, state: SceneState) -> None:
        worker = self.workers[self._turn]
        self._turn = (self._turn + 1) % len(self.workers)
        self._asked.append(worker)
        self._newest = state
        worker.request(state)

    def grow(self) -> bool:
        """Start one more worker, unless `most` are there, one is starting, or nothing was asked for yet."""
        if self.warming is not None or len(self.workers) >= self.most or self._newest is None:
            return False
        self.warming = self.start()
        self.warming.request(self._newest)
        self.settled = False
        return True

    def poll(self) -> RenderedFrame | None:
        """The oldest request's frame if its worker has it (a later one that is done waits its turn); WorkerGone
        or FrameFailed as RenderWorker.poll raises them."""
        self._look_at_the_new_worker()
        if not self._asked:
            return None
        try:
            done = self._asked[0].poll()
        except FrameFailed:
            self._asked.popleft()  # that request is answered, with an error
            raise
        if done is not None:
            self._asked.popleft()
            self.settled = self.warming is None
        return done

    def wait(self, timeout: float) -> RenderedFrame | None:
        if self._asked and self._asked[0].connection.poll(timeout):
            return self.poll()
        return None

    def close(self) -> None:
        for worker in self._processes():
            worker.close()

    def _processes(self) -> list[RenderWorker]:
        """Every worker started, the one still drawing its first frame last."""
        return self.workers + ([self.warming] if self.warming else [])

    def _look_at_the_new_worker(self) -> None:
        """A started worker takes turns from when its first frame is back; one that failed is not tried again."""
        warming = self.warming
        if warming is None:
            return
        try:
            first = warming.poll()
        except (WorkerGone, FrameFailed) as exc:
            self.warming, self.most = None, len(self.workers)
            self.growth_error = f"{exc}; the camera goes on with {len(self.workers)} render worker(s)"
            warming.close()
            return
        if first is not None:
            self.warming = None
            self.workers.append(warming)


def _ending(process) -> str:
    process.join(0.5)
    code = process.exitcode
    if code is None:
        return "still running, its pipe closed"
    return f"killed by signal {-code}" if code < 0 else f"exit status {code}"


def _serve(connection, frames: FrameWriter, data: dict, parent: int) -> None:
    """The worker: a copy of the cell without objects, brought to each state it is sent, then rendered."""
    from ..rendering.frame_memory import keep_frame_buffers
    from ..bin_picking_sim import BinPickingSim
    from ..vision.labels import ROBOT, relabel

    keep_frame_buffers()  # this process only draws frames: their buffers stay on the heap (rendering/frame_memory.py)

    try:
        sim = BinPickingSim(config_from_dict(data))
    except Exception as exc:  # e.g. the renderer cannot start here: the first request hears why
        connection.send(RuntimeError(f"{type(exc).__name__}: {exc}"))
        return
    c, camera, bodies = sim.world.client, sim.camera, {}  # object name -> (body, urdf, scale)
    try:
        while True:
            try:
                state = connection.recv()
            except EOFError:
                return
            received = time.perf_counter()
            if state is None or os.getppid() != parent:
                return
            try:
                if isinstance(state, VisibilityRequest):
                    connection.send(_visibility(sim, bodies, state))
                    continue
                _mirror(c, sim, bodies, state)
                if state.camera != camera.config:
                    camera.reconfigure(**{f.name: getattr(state.camera, f.name)
                                          for f in dataclasses.fields(CameraConfig)})
                drawing = time.perf_counter()
                frame = camera.render(segmentation=state.segmentation)
                drawn = time.perf_counter()
                labels = None
                if state.segmentation:
                    labels = relabel(frame.segmentation, {**{arm.body: ROBOT for arm in sim.arms}, **{
                        bodies[name][0]: index for name, index, *_ in state.objects}})
                k = camera.intrinsics()
                cloud = organised_cloud(frame.depth, k, frame.rgb) if state.points else None
                frames.send(connection, RenderedFrame(state.stamp, frame.rgb, frame.depth, labels, k, cloud,
                                                      drawn - drawing, time.perf_counter() - received))
            except Exception as exc:  # tell the camera node, keep serving
                connection.send(RuntimeError(f"{type(exc).__name__}: {exc}"))
    finally:
        sim.close()


def _visibility(sim, bodies: dict, request: VisibilityRequest) -> VisibilityAnswer:
    """The request's state mirrored, then its masks drawn and compared (visibility.py)."""
    _mirror(sim.world.client, sim, bodies, request.state)
    names = {body: name for name, body in sim.scene.environment_bodies.items()}
    names.update({arm.body: name for arm, name in zip(sim.arms, request.arm_names)})
    names.update({body: name for name, (body, *_) in bodies.items()})
    objects = {name: bodies[name][0] for name in request.objects}
    answers = object_visibility(sim.world.client, sim.world.renderer.flag, request.view, objects, names)
    return VisibilityAnswer(request.state.stamp, answers, sim.world.renderer.describe())


def _mirror(c, sim, bodies: dict, state: SceneState) -> None:
    """Objects added, moved and removed by name, the arms' joints and the bins' poses, as in `state`."""
    wanted = {name: (urdf, scale, position, orientation)
              for name, _, urdf, scale, position, orientation in state.objects}
    for name in [n for n, (_, urdf, scale) in bodies.items() if n not in wanted or wanted[n][:2] != (urdf, scale)]:
        c.removeBody(bodies.pop(name)[0])
    for name, (urdf, scale, position, orientation) in wanted.items():
        if name not in bodies:
            bodies[name] = (c.loadURDF(spelled(urdf, ("scale", scale)), globalScaling=scale), urdf, scale)
        # after loading, not at it: loadURDF places the link frame, while the captured pose is the centre of
        # mass's (PyBullet's base), which a body with an inertial offset (pybullet_data's duck) has apart
        c.resetBasePositionAndOrientation(bodies[name][0], position, orientation)
    for arm, joints in zip(sim.arms, state.joints):
        for joint, position in enumerate(joints):
            c.resetJointState(arm.body, joint, position)
    for bin_, pose in zip(sim.scene.bins, state.bins):
        c.resetBasePositionAndOrientation(bin_.body, *pose)


class WorkerProcess:
    """The worker's Python, with the few calls of multiprocessing.Process that its owners use."""

    def __init__(self, fd: int, frames_fd: int):
        self.popen = subprocess.Popen([sys.executable, "-m", __name__, str(fd), str(frames_fd), str(os.getpid())],
                                      pass_fds=(fd, frames_fd))
        self.pid = self.popen.pid

    def is_alive(self) -> bool:
        return self.popen.poll() is None

    @property
    def exitcode(self) -> int | None:
        return self.popen.poll()

    def kill(self) -> None:
        if self.is_alive():
            self.popen.kill()

    def join(self, timeout: float | None = None) -> None:
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            pass


def main(argv: list[str]) -> None:
    """The worker process: its end of the socket pair, the shared file for its frames and its parent's pid
    from the command line, the scene as the first message."""
    connection, frames = Connection(int(argv[0])), FrameWriter(int(argv[1]))
    try:
        data = connection.recv()
    except EOFError:
        return
    try:
        _serve(connection, frames, data, int(argv[2]))
    finally:
        frames.close()


if __name__ == "__main__":
    # Through the package's own module, not this __main__ copy: the messages' classes must be the ones the
    # parent pickles (binpick_sim.cell.render_process.worker.SceneState, ...), or isinstance would not know them.
    from binpick_sim.cell.render_process.worker import main as _main

    _main(sys.argv[1:])
