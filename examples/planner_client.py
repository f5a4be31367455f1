"""A motion planner in a process of its own that picks an object from the cell, knowing only what the
simulation publishes: the URDF and SRDF (robot_description, robot_description_semantic), the planning
scene (planning_scene_world: bins and object meshes), joint_states, and the task node's status.

It builds its own collision model from them (a PyBullet client of its own: the URDF, the scene's boxes
and meshes; the SRDF's disabled pairs skipped, as MoveIt does), plans with OMPL's RRTConnect in joint
space, times the path within the limits the simulation enforces (config/joint_limits.yaml's
numbers are the URDF's velocities; this client stays at a fraction of them), and executes through
FollowJointTrajectory and GripperCommand: open, above the highest object, down, close, up until the
task node counts the grab. It reports the arm-bin contacts the task node saw (there must be none).

    make planner-example        # installs requirements-planning.txt, starts `sim`, picks one object

Needs: ompl (requirements-planning.txt), control_msgs and moveit_msgs (a ROS 2 install, or
../shared/ros-tools), pybullet (the package's own requirements).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pybullet
from pybullet_utils import bullet_client

from binpick_sim.extras import MissingExtra, require

ARM = [f"panda_joint{i}" for i in range(1, 8)]
FINGERS = ["panda_finger_joint1", "panda_finger_joint2"]
TIP = "panda_grasptarget"
HAND_LINKS = {"panda_hand", "panda_leftfinger", "panda_rightfinger"}
MARGIN = 0.005  # metres kept from obstacles while planning
SPEED = 0.3  # share of each joint's velocity limit the timed path uses
OPEN, CLOSED, SQUEEZE = 0.04, 0.0, 20.0  # finger position [m], closed, grasp force [N]
FLOOR_GAP = 0.007  # metres between the fingertips and the bin's floor at the grasp (more than MARGIN)


# --- the planner's own collision model -------------------------------------------------------------------------

class CollisionModel:
    """The robot from its URDF and the world from a PlanningSceneWorld, in a PyBullet client of its own."""

    def __init__(self, urdf: str, srdf: str, scene_world):
        self.client = c = bullet_client.BulletClient(connection_mode=pybullet.DIRECT)
        from binpick_sim.description import local_meshes  # package://binpick_sim/... as the ament index resolves it

        text = local_meshes(urdf)  # the mesh URIs as this machine's paths: PyBullet reads no package:// URI
        with tempfile.NamedTemporaryFile("w", suffix=".urdf", delete=False) as file:
            file.write(text)
        self.robot = c.loadURDF(file.name, useFixedBase=True)
        os.unlink(file.name)
        infos = [c.getJointInfo(self.robot, j) for j in range(c.getNumJoints(self.robot))]
        self.link = {i[12].decode(): i[0] for i in infos}
        by_joint = {i[1].decode(): i for i in infos}
        self.joints = [by_joint[n][0] for n in ARM + FINGERS]
        self.lower = np.array([by_joint[n][8] for n in ARM])
        self.upper = np.array([by_joint[n][9] for n in ARM])
        self.velocity = np.array([by_joint[n][11] for n in ARM])
        self.movable = [i[0] for i in infos if i[2] != pybullet.JOINT_FIXED]  # IK's order
        semantic = ET.fromstring(srdf)
        disabled = {frozenset((e.get("link1"), e.get("link2"))) for e in semantic.iter("disable_collisions")}
        ignored = {e.get("link") for e in semantic.iter("disable_default_collisions")}  # the bins' URDF copy
        solid = {name: k for name, k in self.link.items() if c.getCollisionShapeData(self.robot, k)}
        self.robot_links = {name: k for name, k in solid.items() if name not in ignored}
        names = sorted(self.robot_links)
        self.self_pairs = [(self.robot_links[a], self.robot_links[b]) for i, a in enumerate(names)
                           for b in names[i + 1:] if frozenset((a, b)) not in disabled]
        self.obstacles = {o.id: self._body(o) for o in scene_world.collision_objects}
        self.allowed: set[str] = set()  # obstacle ids the hand may touch (the object it grasps)
        self.tip_offset = self._tip_offset()

    def _tip_offset(self) -> float:
        """Height of the grasp target above the fingertips, with the hand pointing down."""
        c = self.client
        q = self.ik(np.array([0.5, 0.0, 0.4]), top_down(0.0), (self.lower + self.upper) / 2)
        self.set(q, OPEN)
        tip = c.getLinkState(self.robot, self.link[TIP], computeForwardKinematics=True)[4][2]
        lowest = min(c.getAABB(self.robot, self.link[f])[0][2] for f in ("panda_leftfinger", "panda_rightfinger"))
        return float(tip - lowest)

    def _body(self, obj) -> int:
        """A static body for a moveit_msgs/CollisionObject (its boxes or its meshes)."""
        c = self.client
        shapes, frames = [], []
        for primitive, pose in zip(obj.primitives, obj.primitive_poses):
            if primitive.type == primitive.BOX:
                shapes.append(c.createCollisionShape(c.GEOM_BOX, halfExtents=[d / 2 for d in primitive.dimensions]))
            elif primitive.type == primitive.SPHERE:
                shapes.append(c.createCollisionShape(c.GEOM_SPHERE, radius=primitive.dimensions[0]))
            else:
                shapes.append(c.createCollisionShape(c.GEOM_CYLINDER, height=primitive.dimensions[0],
                                                     radius=primitive.dimensions[1]))
            frames.append(pose)
        for mesh, pose in zip(obj.meshes, obj.mesh_poses):
            vertices = [[v.x, v.y, v.z] for v in mesh.vertices]
            indices = [int(i) for t in mesh.triangles for i in t.vertex_indices]
            shapes.append(c.createCollisionShape(c.GEOM_MESH, vertices=vertices, indices=indices))
            frames.append(pose)
        base = (position(obj.pose), orientation(obj.pose))
        if len(shapes) == 1:
            placed = c.multiplyTransforms(*base, position(frames[0]), orientation(frames[0]))
            return c.createMultiBody(0, shapes[0], -1, *placed)
        return c.createMultiBody(0, -1, -1, *base, linkMasses=[0] * len(shapes), linkCollisionShapeIndices=shapes,
                                 linkVisualShapeIndices=[-1] * len(shapes),
                                 linkPositions=[position(f) for f in frames],
                                 linkOrientations=[orientation(f) for f in frames],
                                 linkInertialFramePositions=[[0, 0, 0]] * len(shapes),
                                 linkInertialFrameOrientations=[[0, 0, 0, 1]] * len(shapes),
                                 linkParentIndices=[0] * len(shapes), linkJointTypes=[c.JOINT_FIXED] * len(shapes),
                                 linkJointAxis=[[0, 0, 1]] * len(shapes))

    def set(self, q, fingers: float) -> None:
        for joint, value in zip(self.joints, list(q) + [fingers, fingers]):
            self.client.resetJointState(self.robot, joint, float(value))

    def valid(self, q, fingers: float) -> bool:
        c = self.client
        self.set(q, fingers)
        for a, b in self.self_pairs:
            if c.getClosestPoints(self.robot, self.robot, 0.0, linkIndexA=a, linkIndexB=b):
                return False
        for name, body in self.obstacles.items():
            for link_name, link in self.robot_links.items():
                if name in self.allowed and link_name in HAND_LINKS:
                    continue
                if c.getClosestPoints(self.robot, body, MARGIN, linkIndexA=link):
                    return False
        return True

    def arm_bin_gap(self, q, fingers: float, bins) -> float:
        """The smallest distance from the arm to the bins in a pose (for reports)."""
        self.set(q, fingers)
        gaps = [p[8] for b in bins for p in self.client.getClosestPoints(self.robot, self.obstacles[b], 1.0)]
        return min(gaps) if gaps else np.inf

    def ik(self, target_position, target_xyzw, seed) -> np.ndarray | None:
        """Arm joints that put the grasp target at the pose (None if PyBullet's IK does not get within 2 mm)."""
        c = self.client
        tip = self.link[TIP]
        for attempt in range(20):
            start = seed if attempt == 0 else np.random.default_rng(attempt).uniform(self.lower, self.upper)
            self.set(start, OPEN)
            q = np.array(c.calculateInverseKinematics(self.robot, tip, list(target_position), list(target_xyzw),
                                                      maxNumIterations=200, residualThreshold=1e-5)[:7])
            q = np.clip(q, self.lower, self.upper)
            self.set(q, OPEN)
            reached = np.array(c.getLinkState(self.robot, tip, computeForwardKinematics=True)[4])
            if np.linalg.norm(reached - target_position) < 0.002:
                return q
        return None


def position(pose):
    return [pose.position.x, pose.position.y, pose.position.z]


def orientation(pose):
    return [pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w]


def plan(model: CollisionModel, start, goal, fingers: float, seconds: float = 10.0) -> list[np.ndarray] | None:
    """A collision-free joint path from `start` to `goal` by OMPL's RRTConnect, simplified and densified."""
    from ompl import base as ob, geometric as og

    space = ob.RealVectorStateSpace(7)
    bounds = ob.RealVectorBounds(7)
    for i in range(7):
        bounds.setLow(i, float(model.lower[i]))
        bounds.setHigh(i, float(model.upper[i]))
    space.setBounds(bounds)
    setup = og.SimpleSetup(space)
    setup.setStateValidityChecker(lambda state: model.valid([state[i] for i in range(7)], fingers))
    setup.getSpaceInformation().setStateValidityCheckingResolution(0.002)  # thin walls: check densely
    states = []
    for values in (start, goal):
        state = space.allocState()
        for i in range(7):
            state[i] = float(values[i])
        states.append(state)
    setup.setStartAndGoalStates(*states)
    setup.setPlanner(og.RRTConnect(setup.getSpaceInformation()))
    if not setup.solve(seconds) or not setup.haveExactSolutionPath():
        return None
    setup.simplifySolution()
    path = setup.getSolutionPath()
    path.interpolate()
    return [np.array([path.getState(k)[i] for i in range(7)]) for k in range(path.getStateCount())]


def timed(path: list[np.ndarray], velocity: np.ndarray) -> list[tuple[float, np.ndarray]]:
    """(time_from_start, positions): each step at `SPEED` of the slowest joint's velocity limit."""
    times, t = [], 0.0
    for previous, current in zip(path, path[1:]):
        t += max(float(np.max(np.abs(current - previous) / (SPEED * velocity))), 0.02)
        times.append((t, current))
    return times


# --- the ROS side ----------------------------------------------------------------------------------------------

class PickClient:
    """Subscriptions and action clients of one rclpy node (namespace: the simulation's)."""

    def __init__(self, context=None, namespace: str = ""):
        import rclpy
        from control_msgs.action import FollowJointTrajectory, GripperCommand
        from moveit_msgs.msg import PlanningSceneWorld
        from rclpy.action import ActionClient
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import JointState
        from std_msgs.msg import String

        from rclpy.executors import SingleThreadedExecutor

        self.node = rclpy.create_node("planner_client", namespace=namespace, context=context)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.latest: dict[str, object] = {}
        self.statuses: list[dict] = []
        for topic, kind, qos in (("robot_description", String, latched), ("robot_description_semantic", String, latched),
                                 ("planning_scene_world", PlanningSceneWorld, latched), ("joint_states", JointState, 10)):
            self.node.create_subscription(kind, topic, lambda msg, topic=topic: self.latest.__setitem__(topic, msg), qos)
        self.node.create_subscription(String, "task/status", lambda msg: self.statuses.append(json.loads(msg.data)), 10)
        self.FollowJointTrajectory, self.GripperCommand = FollowJointTrajectory, GripperCommand
        self.arm = ActionClient(self.node, FollowJointTrajectory, "panda_arm_controller/follow_joint_trajectory")
        self.hand = ActionClient(self.node, GripperCommand, "panda_hand_controller/gripper_cmd")

    def spin_until(self, done, timeout: float, what: str) -> None:
        end = time.monotonic() + timeout
        while not done():
            if time.monotonic() > end:
                raise TimeoutError(f"waited {timeout:.0f} s for {what}")
            self.executor.spin_once(timeout_sec=0.05)

    def wait_for_cell(self, timeout: float = 60.0) -> None:
        self.spin_until(lambda: all(k in self.latest for k in ("robot_description", "robot_description_semantic",
                                                               "planning_scene_world", "joint_states")),
                        timeout, "the descriptions, the planning scene and joint_states")
        self.spin_until(lambda: self.arm.server_is_ready() and self.hand.server_is_ready(), timeout, "the actions")

    def joints(self) -> np.ndarray:
        msg = self.latest["joint_states"]
        by_name = dict(zip(msg.name, msg.position))
        return np.array([by_name[n] for n in ARM])

    def result(self, client, goal, timeout: float = 120.0):
        sent = client.send_goal_async(goal)
        self.spin_until(sent.done, timeout, "the goal's acceptance")
        if not sent.result().accepted:
            raise RuntimeError("goal rejected (the simulation's log says why)")
        done = sent.result().get_result_async()
        self.spin_until(done.done, timeout, "the goal's result")
        return done.result().result

    def follow(self, path: list[np.ndarray], velocity: np.ndarray) -> None:
        from builtin_interfaces.msg import Duration
        from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

        points = [JointTrajectoryPoint(positions=[float(v) for v in q],
                                       time_from_start=Duration(sec=int(t), nanosec=int(t % 1 * 1e9)))
                  for t, q in timed(path, velocity)]
        goal = self.FollowJointTrajectory.Goal(trajectory=JointTrajectory(joint_names=ARM, points=points))
        result = self.result(self.arm, goal)
        if result.error_code != self.FollowJointTrajectory.Result.SUCCESSFUL:
            raise RuntimeError(f"FollowJointTrajectory failed ({result.error_code}): {result.error_string}")

    def grip(self, position_: float, effort: float = SQUEEZE):
        from control_msgs.msg import GripperCommand as Command

        return self.result(self.hand, self.GripperCommand.Goal(command=Command(position=position_, max_effort=effort)))

    def close(self) -> None:
        self.arm.destroy()
        self.hand.destroy()
        self.executor.shutdown()
        self.node.destroy_node()


def top_down(yaw: float) -> list[float]:
    """The grasp target pointing down (roll pi), turned by `yaw` about the world's z."""
    return list(pybullet.getQuaternionFromEuler([np.pi, 0.0, yaw]))


def pick(client: PickClient, log=print) -> dict:
    """Pick the highest object of the pick bin and lift it until the task node counts the grab. Returns a
    report: planning times, the grabbed object, the task node's arm-bin contacts."""
    client.wait_for_cell()
    world = client.latest["planning_scene_world"]
    model = CollisionModel(client.latest["robot_description"].data, client.latest["robot_description_semantic"].data,
                           world)
    bins = [o for o in world.collision_objects if o.primitives and len(o.primitives) == 5]
    pick_bin = next(b for b in bins if b.id == "pick_bin")
    rims = [b.pose.position.z + max(p.position.z + d.dimensions[2] / 2 for p, d in zip(b.primitive_poses, b.primitives))
            for b in bins]
    lift_z = max(rims) + max(max(d.dimensions[2] for d in b.primitives) for b in bins) + 0.06  # the task's rule + margin
    objects = [o for o in world.collision_objects if o.id not in {b.id for b in bins}]
    inside = [o for o in objects if abs(o.pose.position.x - pick_bin.pose.position.x) < 0.2
              and abs(o.pose.position.y - pick_bin.pose.position.y) < 0.2]
    floor = pick_bin.pose.position.z + min(p.position.z + d.dimensions[2] / 2
                                           for p, d in zip(pick_bin.primitive_poses, pick_bin.primitives))
    report = {"plans": [], "attempts": []}
    for target in sorted(inside, key=lambda o: -o.pose.position.z):
        centre = np.array(position(target.pose))
        vertices = np.array([centre + np.array(quat_rotate(orientation(target.pose), [v.x, v.y, v.z]))
                             for v in target.meshes[0].vertices] if target.meshes else [centre])
        top = vertices[:, 2].max()
        spread = vertices[:, :2] - centre[:2]
        narrow = np.linalg.eigh(spread.T @ spread)[1][:, 0] if len(vertices) > 2 else np.array([1.0, 0.0])
        across = float(np.abs(spread @ narrow).max()) if len(vertices) > 2 else 0.015
        fingers = min(OPEN, across + 0.012)  # open just wide enough: the neighbours are close
        base_yaw = np.arctan2(narrow[1], narrow[0]) + np.pi / 2  # (the fingers close along the hand's y)
        for turn in (0.0, np.pi / 2, np.pi / 4, -np.pi / 4):
            yaw = base_yaw + turn
            report["attempts"].append(target.id)
            grasp = centre.copy()
            grasp[2] = max(top - 0.012, floor + model.tip_offset + FLOOR_GAP)
            above = grasp + [0, 0, 0.12]
            model.allowed = {target.id}
            q_above = model.ik(above, top_down(yaw), client.joints())
            q_grasp = model.ik(grasp, top_down(yaw), q_above) if q_above is not None else None
            if q_grasp is None or not model.valid(q_above, fingers) or not model.valid(q_grasp, fingers):
                continue
            started = time.monotonic()
            to_above = plan(model, client.joints(), q_above, OPEN)
            down = plan(model, q_above, q_grasp, fingers) if to_above else None
            report["plans"].append(time.monotonic() - started)
            if not down:
                continue
            log(f"picking {target.id}: to above it ({len(to_above)} waypoints), down ({len(down)})")
            client.grip(OPEN)
            client.follow(to_above, model.velocity)
            client.grip(fingers)
            client.follow(down, model.velocity)
            grasped = client.grip(CLOSED)
            log(f"gripper: position {grasped.position:.4f} m, effort {grasped.effort:.1f} N, stalled {grasped.stalled}")
            model.obstacles.pop(target.id, None)  # it goes with the hand now
            client.follow([client.joints()] + down[::-1], model.velocity)  # back out the way it came in
            q_lift = model.ik(np.array([grasp[0], grasp[1], lift_z]), top_down(yaw), client.joints())
            up = plan(model, client.joints(), q_lift, grasped.position) if q_lift is not None else None
            if up is None:
                raise RuntimeError("no path up with the object")
            client.follow(up, model.velocity)
            client.spin_until(lambda: any(s.get("grabs", 0) >= 1 for s in client.statuses), 30, "the task node's grab")
            report["grabbed"] = [g for s in client.statuses for g in s.get("grabbed", [])]
            report["arm_bin_collisions"] = [c for s in client.statuses for c in s.get("arm_bin_collisions", [])]
            report["task_statuses"] = len(client.statuses)
            return report
    raise RuntimeError(f"no object could be picked (tried {report['attempts']})")


def quat_rotate(xyzw, vector):
    return pybullet.multiplyTransforms([0, 0, 0], xyzw, vector, [0, 0, 0, 1])[0]


def main(argv: list[str] | None = None) -> int:
    """Start `sim` (task node on, camera off) in its own process, pick one object, report, stop it."""
    import rclpy

    from binpick_sim.nodes.process.spawn import SimProcess  # only to start the simulation, as `ros2 run` would

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--namespace", default="/planner_example")
    args = parser.parse_args(argv)
    try:
        require("make planner-example", "ompl", "control_msgs", "moveit_msgs")
    except MissingExtra as exc:
        print(f"planner example: error: {exc}", file=sys.stderr)
        return 2
    log = Path(tempfile.mkdtemp(prefix="planner_example_")) / "sim.log"
    sim = SimProcess({"task": True, "camera": False}, log=log, namespace=args.namespace)
    rclpy.init()
    client = PickClient(namespace=args.namespace)
    try:
        report = pick(client)
        print(json.dumps({k: v for k, v in report.items() if k != "attempts"}, indent=1))
        ok = bool(report["grabbed"]) and not report["arm_bin_collisions"]
        print("picked and lifted, no arm-bin contact" if ok else "FAILED", file=sys.stderr)
        return 0 if ok else 1
    finally:
        client.close()
        rclpy.shutdown()
        sim.stop()


if __name__ == "__main__":
    sys.exit(main())
