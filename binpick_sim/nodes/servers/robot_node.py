"""The `robot` node: the time-indexed robot interface (TriFinger's robot_interfaces) over ROS, standard types only.

    robot/desired_actions  in   std_msgs/Float64MultiArray  [request id, torque x9, position x9, kp x9, kd x9]
    robot/accepted         out  std_msgs/Int64MultiArray    [request id, t]  (t = -1 rejected, -2 robot in error)

A request id is a whole number from 0 to 2**53 (every such number survives the trip through a float64);
any other id (NaN, inf, 1e300, -3, 2.5) rejects the action, answered [-1, -1]: no Int64 can echo it. So is a
message of more than MAX_ACTION_BYTES serialized, refused by its size before it is decoded.
    robot/steps            out  std_msgs/Float64MultiArray  one per time index (layout in STEP_LAYOUT)
    robot/error            out  std_msgs/String (transient local)  the error message, once in error

With `camera_rate` > 0 (camera observations by time index), each camera frame the backend records:
    robot/camera/image_raw         out  sensor_msgs/Image (rgb8)   stamped with the frame's sim time
    robot/camera/depth/image_raw   out  sensor_msgs/Image (32FC1)  the same stamp
    robot/camera/frames            out  std_msgs/Float64MultiArray [t, timestamp_ms, stamp sec, stamp nanosec, K x9]
(the frontend joins the three by stamp).
"""
from __future__ import annotations

import numpy as np
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile
from rclpy.serialization import deserialize_message
from std_msgs.msg import Float64MultiArray, Int64MultiArray, String

from ...cell.loop import PhysicsLoop
from ...control.robot_interface import N, Action, RobotBackend
from ...cell.bin_picking_sim import BinPickingSim
from ..common.diagnostics import NodeDiagnostics
from ..common import convert
from ..common.params import declare
from ..common.wire import ACTION_SIZE, CAMERA_QOS, CAMERA_TOPICS, IN_ERROR, REJECTED, STEPS_QOS

NO_ID = -1  # the id answered when the request's own cannot be echoed
MAX_REQUEST_ID = 2 ** 53
# Fast DDS (as rmw_fastrtps sets it up) keeps a payload per slot of a subscription's queue, each as large as
# the largest message it ever held: a queue of 100 under a flood of 8 MB messages kept 800 MB for good.
ACTION_QUEUE = 10
# A request's serialized size: 37 doubles and the layout; a layout with a few labelled dimensions fits too.
MAX_ACTION_BYTES = 4096


class RobotNode(Node):
    parameter_table = "robot"  # config/parameters.py

    def __init__(self, sim: BinPickingSim, loop: PhysicsLoop, **kwargs):
        super().__init__("robot", **kwargs)
        repetitions = declare(self, "max_action_repetitions", "Steps without a new action before the robot "
                              "goes into error (0: never).", read_only=True)
        gravity = declare(self, "gravity_compensation", "Add the torques that hold the arm up below the "
                          "interface, as the Panda's own controller does.", read_only=True)
        self.backend = RobotBackend(sim.arm, loop, repetitions, gravity)
        self.sim = sim
        self.steps = self.create_publisher(Float64MultiArray, "robot/steps", STEPS_QOS)
        self.accepted = self.create_publisher(Int64MultiArray, "robot/accepted", 100)
        self.errors = self.create_publisher(String, "robot/error",
                                            QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        # Taken serialized (raw): a message is measured before it becomes Python objects, so a flood of
        # oversized ones is refused without copying each into a list (doc/robustness.md "Bad input").
        self.create_subscription(Float64MultiArray, "robot/desired_actions", self.on_raw_action, ACTION_QUEUE,
                                 raw=True)
        self.diagnostics = NodeDiagnostics(self, lambda: sim.world.time,
                                           values=lambda: {"time_index": self.backend.current(),
                                                           "time_epoch": self.backend.time_epoch})
        self.backend.on_step.append(self.publish_step)
        self.error_sent = False
        camera_rate = declare(self, "camera_rate", "Frames per second of sim time of the scene's camera "
                              "on robot/camera/* for get_camera_observation (at most: drawn in a render worker "
                              "while the robot runs on); 0: none.", read_only=True)
        self.camera_series = None
        if camera_rate > 0:
            self.add_camera(sim, camera_rate)

    def add_camera(self, sim: BinPickingSim, rate: float) -> None:
        from sensor_msgs.msg import Image

        from ...control.camera_series import CameraSeries

        period = max(1, round(1.0 / (sim.world.timestep * rate)))
        self.camera_series = self.backend.camera_series = CameraSeries(sim, self.backend, period)
        self.backend.on_step.append(self.camera_series.on_step)
        self.camera_publishers = [self.create_publisher(kind, topic, CAMERA_QOS)
                                  for kind, topic in zip((Image, Image, Float64MultiArray), CAMERA_TOPICS)]
        self.camera_series.on_frame.append(self.publish_camera)
        self.optical_frame = sim.camera.optical_frame

    def publish_camera(self, frame) -> None:
        """Physics thread: one recorded frame on the three camera topics, the index message last."""
        rgb, depth, index = self.camera_publishers
        image = convert.rgb_image(frame.stamp, frame.rgb, self.optical_frame)
        rgb.publish(image)
        depth.publish(convert.depth_image(frame.stamp, frame.depth, self.optical_frame))
        stamp = image.header.stamp
        index.publish(Float64MultiArray(data=[float(frame.t), float(frame.timestamp_ms), float(stamp.sec),
                                              float(stamp.nanosec), *np.asarray(frame.k, float).ravel().tolist()]))

    def destroy_node(self):
        if self.camera_series is not None:
            self.camera_series.close()
        return super().destroy_node()

    def on_raw_action(self, raw: bytes) -> None:
        """A serialized request: refused by its size alone when it cannot be one action, else decoded."""
        if len(raw) > MAX_ACTION_BYTES:
            self.diagnostics.reject("robot/desired_actions", f"a message of {len(raw)} bytes cannot be one action "
                                    f"({1 + ACTION_SIZE} values; at most {MAX_ACTION_BYTES} bytes are read)")
            self.accepted.publish(Int64MultiArray(data=[NO_ID, REJECTED]))
            return
        self.on_action(deserialize_message(raw, Float64MultiArray))

    def on_action(self, msg: Float64MultiArray) -> None:
        data = np.asarray(msg.data, dtype=float)
        request = request_id(data[0]) if data.size else None
        try:
            if data.size != 1 + ACTION_SIZE:
                raise ValueError(f"expected {1 + ACTION_SIZE} values (request id, torque, position, kp, kd x {N}), "
                                 f"got {data.size}")
            if request is None:
                raise ValueError(f"the request id must be a whole number from 0 to 2^53, got {data[0]!r}")
            t = self.backend.append(Action.from_array(data[1:]))
        except ValueError as exc:
            self.diagnostics.reject("robot/desired_actions", str(exc))
            t = REJECTED
        except RuntimeError as exc:
            self.diagnostics.reject("robot/desired_actions", str(exc))
            t = IN_ERROR
        self.accepted.publish(Int64MultiArray(data=[NO_ID if request is None else request, t]))

    def publish_step(self, t: int) -> None:
        """After step t (physics thread): everything about it in one message."""
        b = self.backend
        status, observation = b.status.get(t), b.observations.get(t)
        parts = [[t, b.timestamps.get(t), status.action_repetitions, status.error_status], observation.position,
                 observation.velocity, observation.torque, observation.tip_force,
                 b.desired.get(t).as_array(), b.applied.get(t).as_array()]
        self.steps.publish(Float64MultiArray(data=np.concatenate(parts).tolist()))
        if status.error_status and not self.error_sent:
            self.error_sent = True
            self.errors.publish(String(data=status.error_message))


def request_id(value: float) -> int | None:
    """The id as an integer, or None where it is not a whole number in [0, MAX_REQUEST_ID]."""
    if not (np.isfinite(value) and 0 <= value <= MAX_REQUEST_ID and float(value).is_integer()):
        return None
    return int(value)
