"""The `robot` node: the time-indexed interface of seeds 002/003 over ROS, standard types only.

    robot/desired_actions  in   std_msgs/Float64MultiArray  [request id, torque x9, position x9, kp x9, kd x9]
    robot/accepted         out  std_msgs/Int64MultiArray    [request id, t]  (t = -1 rejected, -2 robot in error)

A request id is a whole number from 0 to 2**53 (every such number survives the trip through a float64);
any other id (NaN, inf, 1e300, -3, 2.5) rejects the action, answered [-1, -1]: no Int64 can echo it. So is a
message of more than MAX_ACTION_BYTES serialized, refused by its size before it is decoded.
    robot/steps            out  std_msgs/Float64MultiArray  one per time index (layout in STEP_LAYOUT)
    robot/error            out  std_msgs/String (transient local)  the error message, once in error
"""
from __future__ import annotations

import numpy as np
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile
from rclpy.serialization import deserialize_message
from std_msgs.msg import Float64MultiArray, Int64MultiArray, String

from ...cell.loop import PhysicsLoop
from ...control.robot_interface import N, Action, RobotBackend
from ...cell.sim import BinPickingSim
from ..common.diagnostics import NodeDiagnostics
from ..common.params import declare

ACTION_SIZE = 4 * N
# robot/steps: name and length of each part, in order
STEP_LAYOUT = [("t", 1), ("timestamp_ms", 1), ("action_repetitions", 1), ("error_status", 1),
               ("position", N), ("velocity", N), ("torque", N), ("tip_force", 2),
               ("desired", ACTION_SIZE), ("applied", ACTION_SIZE)]
REJECTED, IN_ERROR = -1, -2
MAX_REPETITIONS = 10 ** 9  # about 11 days at 1 kHz
NO_ID = -1  # the id answered when the request's own cannot be echoed
MAX_REQUEST_ID = 2 ** 53
STEPS_QOS = QoSProfile(depth=1000)  # a whole buffer's worth, so a slow reader loses nothing
# Fast DDS (as rmw_fastrtps sets it up) keeps a payload per slot of a subscription's queue, each as large as
# the largest message it ever held: a queue of 100 under a flood of 8 MB messages kept 800 MB for good.
ACTION_QUEUE = 10
# A request's serialized size: 37 doubles and the layout; a layout with a few labelled dimensions fits too.
MAX_ACTION_BYTES = 4096


class RobotNode(Node):
    def __init__(self, sim: BinPickingSim, loop: PhysicsLoop, **kwargs):
        super().__init__("robot", **kwargs)
        repetitions = declare(self, "max_action_repetitions", 0, "Steps without a new action before the robot "
                              "goes into error (0: never).", read_only=True, low=0, high=MAX_REPETITIONS)
        gravity = declare(self, "gravity_compensation", True, "Add the torques that hold the arm up below the "
                          "interface, as the Panda's own controller does.", read_only=True)
        self.backend = RobotBackend(sim.arm, loop, repetitions, gravity)
        self.sim = sim
        self.steps = self.create_publisher(Float64MultiArray, "robot/steps", STEPS_QOS)
        self.accepted = self.create_publisher(Int64MultiArray, "robot/accepted", 100)
        self.errors = self.create_publisher(String, "robot/error",
                                            QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        # Taken serialized (raw): a message is measured before it becomes Python objects, so a flood of
        # oversized ones is refused without copying each into a list (README "Bad input").
        self.create_subscription(Float64MultiArray, "robot/desired_actions", self.on_raw_action, ACTION_QUEUE,
                                 raw=True)
        self.diagnostics = NodeDiagnostics(self, lambda: sim.world.time,
                                           values=lambda: {"time_index": self.backend.current(),
                                                           "time_epoch": self.backend.time_epoch})
        self.backend.on_step.append(self.publish_step)
        self.error_sent = False

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
