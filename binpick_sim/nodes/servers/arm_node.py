"""The `arm` node: joint position / velocity / delta commands in, joint states and forces out.

A command only changes the motor targets; the physics thread then moves the arm toward them.
Commands are checked on the executor thread and applied on the physics thread, so a rejected
command never reaches the world.
"""
from __future__ import annotations

import functools
from typing import Callable

import numpy as np
from geometry_msgs.msg import PoseStamped, WrenchStamped
from rclpy.node import Node
from sensor_msgs.msg import JointState
from rclpy.qos import DurabilityPolicy, QoSProfile
from std_msgs.msg import Float64MultiArray, UInt64
from trajectory_msgs.msg import JointTrajectory
from std_srvs.srv import Trigger

from ...cell.arm.panda import FINGER_LINKS, JOINT_NAMES, check_joint_names
from ...config import CONTROLLER_TYPES
from ...cell.loop import PhysicsLoop
from ...control.trajectory import BadTrajectory, Trajectory, TrajectoryFollower
from ...cell.bin_picking_sim import BinPickingSim
from ..common import convert
from . import trajectory_actions
from ..common.diagnostics import BadCommand, NodeDiagnostics, finite_vector
from ..common.long_requests import SERVICE_QOS
from ..common.params import declare
from .trajectory_actions import TrajectoryActions

POSITION_TOPIC = "arm/position_commands"
VELOCITY_TOPIC = "arm/velocity_commands"
DELTA_TOPIC = "arm/delta_commands"
TRAJECTORY_TOPIC = "arm/joint_trajectory"
JOINT_COMMANDS_TOPIC = "arm/joint_commands"
CONTROLLER_TOPIC = "arm/controller_commands"


class ArmNode(Node):
    parameter_table = "arm"  # config/parameters.py (with trajectory_actions.py's)

    def __init__(self, sim: BinPickingSim, loop: PhysicsLoop, owner: str | None = None, arm=None,
                 cell_namespace: str | None = None, **kwargs):
        """`owner`: who else drives the arm (the robot interface); then every command here is refused.
        `arm`: which of the scene's arms (default the first); with several, each node runs in a namespace
        named after its arm (the stack sets it) and prefixes its joint names. `cell_namespace` (several
        arms): the stack's namespace, whose `joint_states` gets every arm's too (`joint_states_topics`)."""
        super().__init__("arm", **kwargs)
        self.sim, self.arm, self.loop, self.owner = sim, arm or sim.arm, loop, owner
        self.joint_names = sim.joint_names(self.arm)
        self.joint_prefix = self.joint_names[0].removesuffix(JOINT_NAMES[0])
        rate = declare(self, "publish_rate", "Rate of joint_states, arm/ee_pose and the finger wrenches, "
                       "in Hz of sim time.", read_only=True)
        self.velocity_timeout = declare(self, "velocity_timeout", "Sim seconds a velocity command lasts; then the arm holds its position "
                                        "(0 = until the next command).", read_only=True)
        self.last_velocity_command: float | None = None

        self.joint_states_publishers = [self.create_publisher(JointState, topic, 10)
                                        for topic in joint_states_topics(cell_namespace)]
        self.ee_pose_publisher = self.create_publisher(PoseStamped, "arm/ee_pose", 10)
        self.wrench_publishers = [self.create_publisher(WrenchStamped, f"arm/{side}_finger/wrench", 10)
                                  for side in ("left", "right")]
        self.create_subscription(Float64MultiArray, POSITION_TOPIC, self.on_position, 10)
        self.create_subscription(Float64MultiArray, VELOCITY_TOPIC, self.on_velocity, 10)
        self.create_subscription(Float64MultiArray, DELTA_TOPIC, self.on_delta, 10)
        self.create_subscription(JointTrajectory, TRAJECTORY_TOPIC, self.on_trajectory, 10)
        self.create_subscription(JointState, JOINT_COMMANDS_TOPIC, self.on_joint_commands, 10)
        self.create_service(Trigger, "arm/open_gripper", self.trigger(lambda: self.arm.set_gripper(True), "opening"),
                            qos_profile=SERVICE_QOS)
        self.create_service(Trigger, "arm/close_gripper", self.trigger(lambda: self.arm.set_gripper(False), "closing"),
                            qos_profile=SERVICE_QOS)
        self.create_service(Trigger, "arm/home", self.trigger(self.go_home, "moving home"), qos_profile=SERVICE_QOS)
        controller = declare(self, "controller_name", "Name under which the "
                             "FollowJointTrajectory action is served (<name>/follow_joint_trajectory), where "
                             "control_msgs is installed.", read_only=True, check=action_name_problem)
        gripper = declare(self, "gripper_controller_name", "Name under which the "
                          "GripperCommand action is served (<name>/gripper_cmd), where control_msgs is installed.",
                          read_only=True, check=action_name_problem)
        kind = declare(self, "controller", "Torque-level controller served on "
                       "arm/controller_commands: none, joint_position, joint_velocity, joint_torque, osc or ik "
                       "(default: the scene file's controller.type).", read_only=True, scene=sim.config,
                       check=lambda v: None if v in CONTROLLER_TYPES else f"needs one of {', '.join(CONTROLLER_TYPES)}")
        self.torque_controller = None if kind == "none" else loop.run(_make_controller, self.arm, kind,
                                                                      sim.config.controller.options)
        # kind -> (topic, apply on the physics thread, clip to count, values expected)
        self.commands = {
            "position": (POSITION_TOPIC, self.apply_position, self.arm.limits.clip_position, len(JOINT_NAMES)),
            "velocity": (VELOCITY_TOPIC, self.apply_velocity, self.arm.limits.clip_velocity, len(JOINT_NAMES)),
            "delta": (DELTA_TOPIC, self.apply_delta, None, 5)}
        if self.torque_controller is not None:
            self.commands["controller"] = (CONTROLLER_TOPIC, self.apply_controller, None,
                                           self.torque_controller.control_dim)
            self.create_subscription(Float64MultiArray, CONTROLLER_TOPIC, self.on_controller, 10)
        self.commands_received = 0
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.count_publisher = self.create_publisher(UInt64, "arm/commands_received", latched)
        self.diagnostics = NodeDiagnostics(self, lambda: self.sim.world.time)
        self.loop.every(1.0 / rate, self.publish_state)
        self.loop.every(1.0 / rate, self.expire_velocity, wall_cap=False)  # in sim time, however fast
        self.loop.when_settled(self.publish_state)
        self.serve_actions(controller, gripper)

    def serve_actions(self, controller: str, gripper: str) -> None:
        """FollowJointTrajectory and GripperCommand under the two names, where control_msgs is installed and
        ros2_control's controllers do not serve them."""
        serve = declare(self, "trajectory_actions", "Serve FollowJointTrajectory and GripperCommand under "
                        "controller_name / gripper_controller_name (where control_msgs is installed); false when "
                        "ros2_control's controllers of those names serve them (sim.launch.py ros2_control:=true).",
                        read_only=True)
        available = trajectory_actions.available()
        self.actions = TrajectoryActions(self, controller, gripper) if serve and available else None
        if serve and not available:
            self.get_logger().info("control_msgs is not installed: no FollowJointTrajectory / GripperCommand "
                                   "actions (arm/joint_trajectory and arm/joint_commands still serve planners)")

    # --- commands (executor threads) ----------------------------------------------------------
    def on_position(self, msg: Float64MultiArray) -> None:
        self.take(self.prepared("position", msg.data))

    def on_velocity(self, msg: Float64MultiArray) -> None:
        self.take(self.prepared("velocity", msg.data))

    def on_delta(self, msg: Float64MultiArray) -> None:
        self.take(self.prepared("delta", msg.data))

    def refused(self, interface: str) -> bool:
        """Whether the arm belongs to someone else; counted and logged as a rejection if so."""
        if self.owner is not None:
            self.diagnostics.reject(interface, f"{self.owner} drives the arm")
        return self.owner is not None

    def take(self, apply: Callable[[], None] | None) -> None:
        """A command message taken: applied on the physics thread unless refused, counted either way."""
        if apply is not None:
            self.loop.call(apply)
        self.count_received()

    def prepared(self, kind: str, data) -> Callable[[], None] | None:
        """A `position`, `velocity`, `delta` or `controller` command checked as on its topic (rejections
        logged and counted on /diagnostics, clips counted), as one call for the physics thread; None if
        refused. task/step hands it over together with its steps, in one hand-off."""
        topic, apply, clip, length = self.commands[kind]
        if self.refused(topic):
            return None
        try:
            values = finite_vector(data, length)
        except BadCommand as exc:
            self.diagnostics.reject(topic, str(exc))
            return None
        if clip is not None and not np.array_equal(clip(values), values):
            self.diagnostics.clip(topic, "targets outside the joint limits were")
        return functools.partial(apply, values)

    def on_controller(self, msg: Float64MultiArray) -> None:
        self.take(self.prepared("controller", msg.data))

    def apply_controller(self, action) -> None:
        """Engage the configured controller (if a fixed-topic command had taken over) and give it the action."""
        if self.arm.controller != self.torque_controller.step:
            self.take_over()
            self.torque_controller.engage()
        self.torque_controller.set_goal(action)
        if self.torque_controller.clipped:
            self.diagnostics.clip(CONTROLLER_TOPIC, "an action outside the controller's limits was")

    def on_trajectory(self, msg: JointTrajectory) -> None:
        if self.refused(TRAJECTORY_TOPIC):
            return self.count_received()
        try:
            msg.joint_names = self.local_names(msg.joint_names)
            trajectory = convert.trajectory(msg, self.arm.limits)
        except BadTrajectory as exc:
            self.diagnostics.reject(TRAJECTORY_TOPIC, str(exc))
        else:
            start = convert.to_seconds(msg.header.stamp)  # 0: now, as in ros2_control
            self.loop.call(self.start_trajectory, trajectory, start)
        self.count_received()

    def on_joint_commands(self, msg: JointState) -> None:
        if self.refused(JOINT_COMMANDS_TOPIC):
            return self.count_received()
        try:
            positions, velocities = joint_command(self.local_names(msg.name), msg.position, msg.velocity)
        except BadCommand as exc:
            self.diagnostics.reject(JOINT_COMMANDS_TOPIC, str(exc))
        else:
            named = np.isfinite(positions)
            fast = np.isfinite(velocities) & ~named
            clipped = np.where(named, self.arm.limits.clip_position(np.nan_to_num(positions)), np.nan)
            speeds = np.where(fast, self.arm.limits.clip_velocity(np.nan_to_num(velocities)), np.nan)
            if not (np.array_equal(clipped[named], positions[named]) and np.array_equal(speeds[fast], velocities[fast])):
                self.diagnostics.clip(JOINT_COMMANDS_TOPIC, "targets outside the joint limits were")
            self.loop.call(self.apply_joint_commands, clipped, speeds)
        self.count_received()

    def local_names(self, names) -> list[str]:
        """Joint names as the Panda model has them: this arm's prefix (several arms) taken off."""
        prefix = self.joint_prefix
        return [n.removeprefix(prefix) if isinstance(n, str) else n for n in names] if prefix else names

    def count_received(self) -> None:
        """Tell lock-step clients this command is queued ahead of any step they ask for next
        (DDS keeps no order between two topics, so they wait for this count before world/step)."""
        self.commands_received += 1
        self.count_publisher.publish(UInt64(data=self.commands_received))

    def trigger(self, action, what: str):
        def serve(request, response):
            if self.refused(f"service for {what}"):
                response.success, response.message = False, f"refused: {self.owner} drives the arm"
                return response
            try:
                self.loop.run(action)
                response.success, response.message = True, what
            except Exception as exc:  # report it and keep serving
                response.success, response.message = False, f"{what} failed: {exc!r}"
                self.get_logger().error(response.message)
            return response
        return serve

    # --- physics thread -----------------------------------------------------------------------
    def take_over(self) -> None:
        """A command on a fixed topic replaces whatever ran before it (trajectory, controller, velocities)."""
        self.arm.set_controller(None)
        self.last_velocity_command = None

    def apply_position(self, q) -> None:
        self.take_over()
        self.arm.set_position_targets(q)

    def apply_velocity(self, v) -> None:
        self.take_over()
        self.last_velocity_command = self.sim.world.time
        self.arm.set_velocity_targets(v)

    def apply_delta(self, delta) -> None:
        self.take_over()
        self.arm.set_position_targets(self.arm.delta_targets(delta))
        if self.arm.delta_clipped:
            self.diagnostics.clip(DELTA_TOPIC, "a grasp target outside the workspace (or the arm's reach) was")

    def start_trajectory(self, trajectory: Trajectory, start: float) -> None:
        self.take_over()
        begin = max(start, self.sim.world.time)
        self.arm.set_controller(TrajectoryFollower(self.arm, trajectory, begin))

    def apply_joint_commands(self, positions, velocities) -> None:
        """Named joints take the new position (or, with only a velocity, that velocity); the others keep
        what they had."""
        self.take_over()
        targets, speeds = self.arm.position_targets.copy(), self.arm.velocity_targets.copy()
        by_position, by_velocity = np.isfinite(positions), np.isfinite(velocities)
        targets[by_position], speeds[by_position] = positions[by_position], np.nan
        targets[by_velocity], speeds[by_velocity] = np.nan, velocities[by_velocity]
        self.arm.command_motors(targets, speeds)
        if by_velocity.any():
            self.last_velocity_command = self.sim.world.time

    def go_home(self) -> None:
        self.take_over()
        self.arm.set_position_targets(self.arm.home)

    def stop_velocity_mode(self) -> None:
        if self.last_velocity_command is not None:
            self.last_velocity_command = None
            self.arm.set_position_targets(self.arm.joint_states()[0])

    def expire_velocity(self) -> None:
        if (self.last_velocity_command is not None and self.velocity_timeout > 0
                and self.sim.world.time - self.last_velocity_command > self.velocity_timeout):
            self.stop_velocity_mode()

    def publish_state(self) -> None:
        self.expire_velocity()
        now = self.sim.world.time
        # only what someone subscribes to: a message nobody reads still costs the physics thread
        publishers = [p for p in self.joint_states_publishers if p.get_subscription_count()]
        if publishers:
            position, velocity, effort = self.arm.joint_states()
            message = convert.joint_state(now, self.joint_names, position, velocity, effort)
            for publisher in publishers:
                publisher.publish(message)
        if self.ee_pose_publisher.get_subscription_count():
            self.ee_pose_publisher.publish(convert.pose_stamped(now, *self.arm.ee_pose()))
        if any(p.get_subscription_count() for p in self.wrench_publishers):
            for publisher, frame, wrench in zip(self.wrench_publishers, FINGER_LINKS, self.arm.finger_wrenches()):
                publisher.publish(convert.wrench_stamped(now, frame, wrench))


def joint_states_topics(cell_namespace: str | None) -> list[str]:
    """Where an arm's joint states go: its own namespace's `joint_states`, and with several arms (`cell_namespace`,
    the stack's) the cell's too, so that one robot_state_publisher there moves the whole cell and each fixed frame
    has one publisher (robot_state_publisher keeps track per joint: a message naming one arm's joints is whole)."""
    return ["joint_states"] + ([] if cell_namespace is None else [f"{cell_namespace.rstrip('/')}/joint_states"])


MIMIC_FINGER = JOINT_NAMES[8]  # panda_finger_joint2: the URDF's mimic of panda_finger_joint1


def action_name_problem(name: str) -> str | None:
    """A controller name must make a valid ROS name (<name>/follow_joint_trajectory)."""
    if not name or not all(part and (part[0].isalpha() or part[0] == "_") and all(c.isalnum() or c == "_" for c in part)
                           for part in name.split("/")):
        return f"needs a ROS name (letters, digits, _ and /), got {name[:80]!r}"
    return None


def joint_command(names, positions, velocities) -> tuple[np.ndarray, np.ndarray]:
    """A JointState command as 9 positions and 9 velocities, NaN where a joint is not commanded.
    A command for one finger alone applies to both (the second finger is a mimic joint on the real hand).

    Values for fewer joints than named are taken only as joint_state_topic_hardware_interface sends them
    (topic_based_hardware_interfaces 1.1.0, JointStateTopicSystem::write): every joint of its ros2_control
    block named, values only for those with that command interface, in the block's order. The mimic finger
    (state only, last in urdf/ros2_control.xml) then trails without a value: it is not commanded, and the
    first finger's value moves both. Any other shortfall is refused, as before."""
    names = check_joint_names(names, BadCommand)
    if not len(positions) and not len(velocities):
        raise BadCommand("neither positions nor velocities")
    q, v = np.full(len(JOINT_NAMES), np.nan), np.full(len(JOINT_NAMES), np.nan)
    for values, into, what in ((positions, q, "position"), (velocities, v, "velocity")):
        if not len(values):
            continue
        if len(values) != len(names) and not (len(values) < len(names) and set(names[len(values):]) <= {MIMIC_FINGER}):
            raise BadCommand(f"{len(names)} names but {len(values)} {what} values")
        values = np.asarray(values, dtype=float)
        if not np.all(np.isfinite(values)):
            raise BadCommand(f"{what} values must be finite numbers")
        into[[JOINT_NAMES.index(n) for n in names[:len(values)]]] = values
    for values in (q, v):  # a command for one finger alone moves both, as the real hand's mimic joint does
        if np.isnan(values[7]) != np.isnan(values[8]):
            values[7:] = np.nanmax(values[7:])
    return q, v


def _make_controller(arm, kind: str, options: dict):
    """control.controllers.make_controller, imported at the first need: the controllers bring scipy's rotations
    (~90 ms of every sim start, with scipy.sparse behind them), which a sim without a controller never uses."""
    from ...control.controllers import make_controller

    return make_controller(arm, kind, options)
