"""The layouts the servers and their clients agree on: topic names, the order of values in a flat message,
the codes in it, the queue depths.

Written once here, below both: a client (nodes/clients, envs/backends.py) reads these without importing
the server node, and a change to a layout changes both ends at once.
"""
from __future__ import annotations

from rclpy.qos import QoSProfile

from ...control.robot_interface import N

# The robot node (servers/robot_node.py) and RosRobotFrontend (clients/robot_client.py).
ACTION_SIZE = 4 * N
# robot/steps: name and length of each part, in order
STEP_LAYOUT = [("t", 1), ("timestamp_ms", 1), ("action_repetitions", 1), ("error_status", 1),
               ("position", N), ("velocity", N), ("torque", N), ("tip_force", 2),
               ("desired", ACTION_SIZE), ("applied", ACTION_SIZE)]
CAMERA_QOS = QoSProfile(depth=30)  # the camera series' buffer
CAMERA_TOPICS = ("robot/camera/image_raw", "robot/camera/depth/image_raw", "robot/camera/frames")
REJECTED, IN_ERROR = -1, -2
STEPS_QOS = QoSProfile(depth=1000)  # a whole buffer's worth, so a slow reader loses nothing

# The task node's lock-step (servers/task_node.py) and the envs' ROS backend (envs/backends.py).
# task/step: [request id, command, physics steps, command values...]; command codes (the last two: step
# until the arm reaches its targets, `physics steps` the bound, as an env made with until_reached=True):
STEP_COMMANDS = ("none", "position", "velocity", "delta", "position_until_reached", "delta_until_reached")
UNTIL_REACHED = "_until_reached"
STEP_TOPIC, OBSERVATION_TOPIC = "task/step", "task/observation"
