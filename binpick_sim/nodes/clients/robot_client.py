"""The time-indexed interface's frontend over ROS: the same API as the in-process one, its series
filled from `robot/steps`, actions sent on `robot/desired_actions` (see robot_node.py)."""
from __future__ import annotations

import itertools
import threading

import numpy as np
import rclpy
from rclpy.context import Context
from rclpy.experimental import EventsExecutor
from rclpy.qos import DurabilityPolicy, QoSProfile
from sensor_msgs.msg import Image
from std_msgs.msg import Float64MultiArray, Int64MultiArray, String

from ...control.camera_series import CameraObservation, CameraSeries
from ...control.robot_interface import Action, Observation, RobotFrontend, Status
from ...control.time_series import TimeSeries
from ..common.teardown import destroy_fully
from ..common.wire import ACTION_SIZE, CAMERA_QOS, CAMERA_TOPICS, IN_ERROR, REJECTED, STEP_LAYOUT, STEPS_QOS


class RosRobotFrontend(RobotFrontend):
    """`with RosRobotFrontend() as robot: t = robot.append_desired_action(Action()); ...`"""

    def __init__(self, namespace: str = "", context: Context | None = None, timeout: float | None = 30.0):
        super().__init__(_TopicBackend(namespace, context, timeout), timeout)

    def get_camera_observation(self, t: int) -> CameraObservation:
        """As in process (the camera observation of a time index), from the robot node's robot/camera/* topics (its `camera_rate`)."""
        if self.backend.camera_index.get_publisher_count() == 0:
            raise RuntimeError("the robot node publishes no camera frames: start it with camera_rate > 0")
        return super().get_camera_observation(t)

    def close(self) -> None:
        self.backend.close()

    def __enter__(self) -> "RosRobotFrontend":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _TopicBackend:
    """What RobotFrontend needs from a backend (series, append, current), over topics."""

    def __init__(self, namespace: str, context: Context | None, timeout: float | None):
        self.own_context = context is None
        self.context = context or Context()
        if self.own_context:
            rclpy.init(context=self.context)
        self.timeout = timeout
        self.desired, self.applied = TimeSeries(), TimeSeries()
        self.observations, self.status, self.timestamps = TimeSeries(), TimeSeries(), TimeSeries()
        self.node = rclpy.create_node("robot_frontend", namespace=namespace, context=self.context)
        self.publisher = self.node.create_publisher(Float64MultiArray, "robot/desired_actions", 100)
        self.node.create_subscription(Float64MultiArray, "robot/steps", self._on_step, STEPS_QOS)
        self.node.create_subscription(Int64MultiArray, "robot/accepted", self._on_accepted, 100)
        self.node.create_subscription(String, "robot/error", self._on_error,
                                      QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        # camera observations by time index: the robot node's three camera topics joined by stamp
        self.camera_series = CameraSeries(None, self, 1)
        self.camera_parts: dict[tuple[int, int], dict] = {}
        for topic, kind in zip(CAMERA_TOPICS, ("rgb", "depth", "index")):
            subscription = self.node.create_subscription(Float64MultiArray if kind == "index" else Image, topic,
                                                         lambda msg, kind=kind: self._on_camera(kind, msg), CAMERA_QOS)
        self.camera_index = subscription
        self.answers: dict[int, int] = {}
        self.answered = threading.Condition()
        self.requests = itertools.count(1)
        self.error_message = ""
        # EventsExecutor: the closed loop's round trip p50 2.1 -> 1.0 ms against SingleThreadedExecutor (doc/how-it-is-built.md)
        self.executor = EventsExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self._spin, name="robot_frontend", daemon=True)
        self.thread.start()
        with self.answered:  # the robot node must hear us before the first action is worth sending
            if not self.answered.wait_for(lambda: self.publisher.get_subscription_count() > 0, timeout):
                raise TimeoutError(f"no robot node on {self.node.get_namespace()}/robot/desired_actions")

    def _spin(self) -> None:
        while self.context.ok():
            try:
                self.executor.spin_once(timeout_sec=0.05)
            except Exception:  # shutting down
                return
            with self.answered:
                self.answered.notify_all()

    def append(self, action: Action) -> int:
        request = next(self.requests)
        self.publisher.publish(Float64MultiArray(data=[float(request), *action.as_array().tolist()]))
        with self.answered:
            if not self.answered.wait_for(lambda: request in self.answers, self.timeout):
                raise TimeoutError("the robot node did not answer the action")
            t = self.answers.pop(request)
        if t == REJECTED:
            raise ValueError("the robot node rejected the action (see its log and /diagnostics)")
        if t == IN_ERROR:
            raise RuntimeError(f"the robot is in error and takes no more actions: {self.error_message}")
        return t

    def current(self) -> int:
        return self.observations.newest

    def _on_accepted(self, msg: Int64MultiArray) -> None:
        request, t = msg.data
        with self.answered:
            self.answers[int(request)] = int(t)
            self.answered.notify_all()

    def _on_error(self, msg: String) -> None:
        self.error_message = msg.data

    def _on_step(self, msg: Float64MultiArray) -> None:
        parts, offset = {}, 0
        values = np.asarray(msg.data)
        for name, size in STEP_LAYOUT:
            parts[name] = values[offset:offset + size]
            offset += size
        t = int(parts["t"][0])
        self.desired.append(t, Action(*parts["desired"].reshape(4, -1)))
        self.applied.append(t, Action(*parts["applied"].reshape(4, -1)))
        self.status.append(t, Status(int(parts["action_repetitions"][0]), int(parts["error_status"][0]),
                                     self.error_message if parts["error_status"][0] else ""))
        self.timestamps.append(t, float(parts["timestamp_ms"][0]))
        self.observations.append(t, Observation(parts["position"], parts["velocity"], parts["torque"],
                                                parts["tip_force"]))

    def _on_camera(self, kind: str, msg) -> None:
        if kind == "index":
            key = (int(msg.data[2]), int(msg.data[3]))
        else:
            key = (msg.header.stamp.sec, msg.header.stamp.nanosec)
        parts = self.camera_parts.setdefault(key, {})
        parts[kind] = msg
        if len(parts) < 3:
            while len(self.camera_parts) > 3 * CAMERA_QOS.depth:  # a part whose others never came
                self.camera_parts.pop(next(iter(self.camera_parts)))
            return
        del self.camera_parts[key]
        rgb, depth, index = parts["rgb"], parts["depth"], np.asarray(parts["index"].data)
        self.camera_series._append(CameraObservation(
            int(index[0]), float(index[1]), key[0] + key[1] * 1e-9,
            np.frombuffer(bytes(rgb.data), np.uint8).reshape(rgb.height, rgb.step)[:, :rgb.width * 3]
            .reshape(rgb.height, rgb.width, 3),
            np.frombuffer(bytes(depth.data), np.float32).reshape(depth.height, depth.width), index[4:13].reshape(3, 3)))

    def close(self) -> None:
        self.executor.shutdown()
        destroy_fully(self.node)  # with any action client a caller put on it (teardown.py: why)
        if self.own_context:
            rclpy.try_shutdown(context=self.context)
        self.thread.join(2.0)


assert sum(size for _, size in STEP_LAYOUT) == 4 + 3 * 9 + 2 + 2 * ACTION_SIZE
