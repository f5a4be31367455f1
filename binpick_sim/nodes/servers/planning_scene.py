"""The cell as MoveIt's planning scene, in MoveIt's own messages, where moveit_msgs is installed
(imported here only; on a plain machine the world node logs that it is absent and carries on):

- `planning_scene_world` (moveit_msgs/PlanningSceneWorld, reliable, transient local): the bins as boxes
  and every free object as its mesh (shape_msgs/Mesh, embedded: no file of this machine needed) or
  primitive, poses in `world`; sent whole whenever the scene changes;
- `collision_object` (moveit_msgs/CollisionObject): each change as MoveIt's planning scene monitor
  applies it: ADD for a new object (spawn, reset), REMOVE for one gone (delete, a grab the task node
  counted), MOVE for one that moved more than `MOVED` / `TURNED`;
- `attached_collision_object` (moveit_msgs/AttachedCollisionObject): an object both fingers hold is
  attached to `panda_hand` (touch links: the hand and fingers) and leaves the world; released, it is
  detached and back in the world.

The world node calls `update` on the physics thread at its objects rate and after each reset, so a
change is out within one period of `objects_rate`, while anyone subscribes to one of the three.

A subscriber that joins later gets everything again within one period: MoveIt's planning scene monitor
subscribes to all three with a volatile QoS (rclcpp::ServicesQoS() in moveit_ros/planning/
planning_scene_monitor/src/planning_scene_monitor.cpp, jazzy), so it never receives what a transient
local publisher kept from before it came. Whenever one of the three counts more subscribers than at the
last update, the world, the bins, the objects and the attached ones go out afresh (MoveIt clears its world
before applying a PlanningSceneWorld, and an ADD replaces an object of the same name: nothing doubles).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ...cell.objects import shapes
from ...cell.objects.meshes import obj_mesh
from ..common import convert

MOVED, TURNED = 0.002, 0.02  # metres, radians an object must move to be sent again
HAND_LINK, TOUCH_LINKS = "panda_hand", ("panda_hand", "panda_leftfinger", "panda_rightfinger")


def available() -> bool:
    try:
        import moveit_msgs.msg  # noqa: F401
        import shape_msgs.msg  # noqa: F401
    except ImportError:
        return False
    return True


class PlanningScene:
    def __init__(self, node):
        from moveit_msgs.msg import AttachedCollisionObject, CollisionObject, PlanningSceneWorld
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

        self.CollisionObject, self.AttachedCollisionObject = CollisionObject, AttachedCollisionObject
        self.PlanningSceneWorld = PlanningSceneWorld
        self.sim = node.sim
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.world_publisher = node.create_publisher(PlanningSceneWorld, "planning_scene_world", latched)
        self.object_publisher = node.create_publisher(CollisionObject, "collision_object", 100)
        self.attached_publisher = node.create_publisher(AttachedCollisionObject, "attached_collision_object", 100)
        self.sent: dict[str, tuple] = {}  # object name -> (position, xyzw, attached link or None, body)
        self.bins = [self.bin_object(b) for b in self.sim.scene.bins]
        self.world_sent = False
        self.idle = False  # whether nobody subscribed at the last update
        self.subscribers = (0, 0, 0)  # per publisher (world, objects, attached), at the last update

    def reset(self) -> None:
        """After a world reset: every object is sent again (an ADD replaces one of the same name), and
        those of the last episode that are gone are removed (physics thread)."""
        self.sent = {name: (*values[:3], None) for name, values in self.sent.items()}
        self.update()

    # --- physics thread -----------------------------------------------------------------------
    def subscriber_counts(self) -> tuple[int, int, int]:
        return tuple(p.get_subscription_count() for p in (self.world_publisher, self.object_publisher,
                                                          self.attached_publisher))

    def update(self) -> None:
        """Publish what changed since the last call (nothing if nothing did). While nobody subscribes,
        nothing is computed (it costs the physics thread); a subscriber that joins gets everything afresh."""
        counts = self.subscriber_counts()
        joined = any(now > before for now, before in zip(counts, self.subscribers))
        self.subscribers = counts
        if not any(counts):
            self.idle = True
            return
        if self.idle or joined:
            self.idle, self.world_sent = False, False
            self.sent = {name: (*values[:3], None) for name, values in self.sent.items()}
        held = self.held_links()
        now = {obj.name: (np.array(position), np.array(orientation), held.get(obj.body), obj)
               for obj, position, orientation in self.sim.object_poses()}
        stamp = self.sim.world.time
        changed = False
        for name in [n for n in self.sent if n not in now]:  # gone: deleted, grabbed and removed, reset
            if self.sent[name][2] is not None:
                self.attached_publisher.publish(self.detach(name, stamp))
            else:
                self.object_publisher.publish(self.CollisionObject(header=convert.header(stamp), id=name,
                                                                   operation=self.CollisionObject.REMOVE))
            del self.sent[name]
            changed = True
        for name, (position, orientation, link, obj) in now.items():
            before = self.sent.get(name)
            if before is not None and before[3] != obj.body:
                before = None  # a new object under an old name (a reset): sent afresh (ADD replaces)
            if before is not None and before[2] == link and (link is not None or not moved(before, position, orientation)):
                continue
            if link is not None:  # picked up: out of the world, onto the hand
                self.attached_publisher.publish(self.attach(obj, position, orientation, link, stamp))
            elif before is not None and before[2] is not None:  # let go: off the hand, back in the world
                self.attached_publisher.publish(self.detach(name, stamp))
                self.object_publisher.publish(self.collision_object(obj, position, orientation, stamp))
            elif before is None:
                self.object_publisher.publish(self.collision_object(obj, position, orientation, stamp))
            else:
                self.object_publisher.publish(self.CollisionObject(
                    header=convert.header(stamp), id=name, pose=convert.pose(position, orientation),
                    operation=self.CollisionObject.MOVE))
            self.sent[name] = (position, orientation, link, obj.body)
            changed = True
        if not self.world_sent:  # the first message: the bins go out as objects too
            for bin_object in self.bins:
                bin_object.header = convert.header(stamp)
                self.object_publisher.publish(bin_object)
        if changed or not self.world_sent:
            self.world_sent = True
            free = [self.collision_object(o, p, q, stamp) for p, q, link, o in now.values() if link is None]
            self.world_publisher.publish(self.PlanningSceneWorld(collision_objects=self.bins + free))

    def held_links(self) -> dict[int, str]:
        """Body -> the hand link of the arm whose both fingers touch it."""
        held = {}
        for arm in self.sim.arms:
            prefix = self.sim.joint_names(arm)[0].removesuffix("panda_joint1")
            for body in arm.gripped_bodies():
                held[body] = prefix + HAND_LINK
        return held

    # --- messages -----------------------------------------------------------------------------
    def collision_object(self, obj, position, orientation, stamp: float):
        msg = self.CollisionObject(header=convert.header(stamp), id=obj.name, pose=convert.pose(position, orientation),
                                   operation=self.CollisionObject.ADD)
        geometry = self.sim.object_geometry(obj)
        identity = convert.pose((0, 0, 0), (0, 0, 0, 1))
        if geometry.kind == shapes.MESH:
            msg.meshes, msg.mesh_poses = [mesh_message(geometry.mesh, tuple(geometry.size))], [identity]
        else:
            msg.primitives, msg.primitive_poses = [primitive_message(geometry)], [identity]
        return msg

    def attach(self, obj, position, orientation, link: str, stamp: float):
        prefix = link.removesuffix(HAND_LINK)
        return self.AttachedCollisionObject(link_name=link, object=self.collision_object(obj, position, orientation, stamp),
                                            touch_links=[prefix + name for name in TOUCH_LINKS])

    def detach(self, name: str, stamp: float):
        link = self.sent[name][2]
        return self.AttachedCollisionObject(link_name=link, object=self.CollisionObject(
            header=convert.header(stamp), id=name, operation=self.CollisionObject.REMOVE))

    def bin_object(self, bin_):
        from shape_msgs.msg import SolidPrimitive

        msg = self.CollisionObject(header=convert.header(0.0), id=bin_.name, operation=self.CollisionObject.ADD,
                                   pose=convert.pose(bin_.position, bin_.orientation))
        for half, centre in bin_.boxes():
            msg.primitives.append(SolidPrimitive(type=SolidPrimitive.BOX, dimensions=[2.0 * h for h in half]))
            msg.primitive_poses.append(convert.pose(centre, (0, 0, 0, 1)))
        return msg


def moved(before, position, orientation) -> bool:
    turned = 2 * np.arccos(min(1.0, abs(float(np.dot(before[1], orientation)))))
    return bool(np.linalg.norm(before[0] - position) > MOVED or turned > TURNED)


@lru_cache(maxsize=64)
def mesh_message(path: str, scale: tuple[float, float, float]):
    """An OBJ file as a shape_msgs/Mesh, scaled (built once per file and scale)."""
    from geometry_msgs.msg import Point
    from shape_msgs.msg import Mesh, MeshTriangle

    vertices, triangles = obj_mesh(path)
    scaled = vertices * np.asarray(scale, dtype=float)
    return Mesh(vertices=[Point(x=float(x), y=float(y), z=float(z)) for x, y, z in scaled],
                triangles=[MeshTriangle(vertex_indices=[int(i) for i in t]) for t in triangles])


def primitive_message(geometry: shapes.Geometry):
    """A box, sphere or cylinder Geometry as a shape_msgs/SolidPrimitive."""
    from shape_msgs.msg import SolidPrimitive

    size = [float(v) for v in geometry.size]
    if geometry.kind == shapes.SPHERE:
        return SolidPrimitive(type=SolidPrimitive.SPHERE, dimensions=[size[0] / 2])
    if geometry.kind == shapes.CYLINDER:
        return SolidPrimitive(type=SolidPrimitive.CYLINDER, dimensions=[size[2], size[0] / 2])
    return SolidPrimitive(type=SolidPrimitive.BOX, dimensions=size)
