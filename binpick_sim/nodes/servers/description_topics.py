"""What a planner needs about the cell besides joint states, from the simulation itself (the world node
owns them):

- `robot_description` (std_msgs/String): the cell's URDF (description.py), and
  `robot_description_semantic`: its SRDF (config/binpick_cell.srdf, semantics.py); both reliable and transient
  local, as robot_state_publisher and MoveIt publish them, so a planner started later gets them;
- `/tf_static`: the description's fixed frames (world -> scene, the cameras', world -> each arm's base),
  and `/tf`: the objects' frames at the world's objects rate; with `publish_robot_tf`, also every arm
  link's, for a simulation run without robot_state_publisher. TF's message type (tf2_msgs) is imported
  here only: where it is not installed the node says so once and publishes the descriptions alone.

One publisher per topic and per transform: where robot_state_publisher runs beside the simulation (the
world node's `robot_state_publisher` parameter, which sim.launch.py sets), it publishes
`robot_description` and every fixed frame of the same URDF, so the simulation publishes neither; it then
sends only what is not in the URDF: the objects (and, with `publish_robot_tf`, the links).
"""
from __future__ import annotations

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String

from ...cell import tf_frames
from ...description import cell_description
from ...semantics import load_semantic_description
from ..common import convert

LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def tf_available() -> bool:
    try:
        import tf2_msgs.msg  # noqa: F401
    except ImportError:
        return False
    return True


class DescriptionTopics:
    def __init__(self, node, publish_robot_tf: bool, state_publisher: bool = False):
        """`state_publisher`: robot_state_publisher publishes the description and its fixed frames."""
        self.node, self.sim, self.publish_robot_tf = node, node.sim, publish_robot_tf
        self.state_publisher = state_publisher
        self.urdf = cell_description(node.config)
        self.srdf = load_semantic_description(node.config)
        if not state_publisher:
            node.create_publisher(String, "robot_description", LATCHED).publish(String(data=self.urdf))
        self.semantic_publisher = node.create_publisher(String, "robot_description_semantic", LATCHED)
        if self.srdf is not None:
            self.semantic_publisher.publish(String(data=self.srdf))
        else:
            node.get_logger().warning("no robot_description_semantic: config/binpick_cell.srdf describes a cell "
                                      "of one arm (write one for this scene with binpick_sim.tools.moveit_config)")
        self.tf = tf_available()
        if self.tf:
            from tf2_msgs.msg import TFMessage

            self.TFMessage = TFMessage
            self.static_publisher = None if state_publisher else node.create_publisher(TFMessage, "/tf_static", LATCHED)
            self.tf_publisher = node.create_publisher(TFMessage, "/tf", 100)
            self.static_sent = None
        else:
            node.get_logger().info("tf2_msgs is not installed: no /tf or /tf_static from the simulation "
                                   "(robot_description and robot_description_semantic are published)")

    def publish_tf(self) -> None:
        """Physics thread: the objects' (and, if asked, the links') frames; the fixed ones if they changed
        (none where robot_state_publisher publishes them)."""
        if not self.tf:
            return
        now = self.sim.world.time
        static = [] if self.state_publisher else tf_frames.cell_frames(self.sim, bases=not self.publish_robot_tf)
        if static and static != self.static_sent:
            self.static_publisher.publish(self.message(static, now))
            self.static_sent = static
        moving = tf_frames.object_frames(self.sim) + (tf_frames.robot_frames(self.sim) if self.publish_robot_tf else [])
        if moving and self.tf_publisher.get_subscription_count():
            self.tf_publisher.publish(self.message(moving, now))

    def message(self, frames_, seconds: float):
        from geometry_msgs.msg import TransformStamped

        transforms = []
        for parent, child, position, xyzw in frames_:
            t = TransformStamped(header=convert.header(seconds, parent), child_frame_id=child)
            t.transform.translation.x, t.transform.translation.y, t.transform.translation.z = map(float, position)
            q = t.transform.rotation
            q.x, q.y, q.z, q.w = map(float, xyzw)
            transforms.append(t)
        return self.TFMessage(transforms=transforms)
