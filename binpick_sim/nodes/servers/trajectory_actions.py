"""control_msgs action servers for planners (MoveIt's "FollowJointTrajectory" and "GripperCommand"
controllers), served by the arm node where control_msgs is importable (any ROS 2 install with
ros2_control). They drive the same trajectory follower as `arm/joint_trajectory`, with the contract of
ros2_control's joint_trajectory_controller (JTC) and GripperActionController, parameter names included
(doc/planners.md "The controller contract, row by row" compares them):

- a goal must name the controller's seven arm joints (fewer only with `allow_partial_joints_goal`), end
  at rest (unless `allow_nonzero_velocity_at_trajectory_end`), and not end in the past when its
  `header.stamp` is set (0 starts now; a later stamp starts then);
- the path tolerance is checked while it runs (PATH_TOLERANCE_VIOLATED), the goal tolerance after its
  end within the goal time (GOAL_TOLERANCE_VIOLATED); 0 in a goal keeps the default, -1 erases it;
- a new goal preempts the running one (ABORTED, INVALID_GOAL, as JTC since its June 2026 releases);
  a cancel request ends it CANCELED; either way the arm holds where it is;
- GripperCommand squeezes with at most `max_effort` per finger and ends when the fingers are within
  `gripper.goal_tolerance` (reached_goal) or have stopped for `gripper.stall_timeout` (stalled).

The tolerances are judged on the physics thread every step (control/trajectory.py); the goal's thread
only waits for the verdict and reports it.
"""
from __future__ import annotations

import time

import numpy as np
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import GoalEvent
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from ...cell.arm.panda import ARM_JOINT_NAMES
from ...control.trajectory import (GOAL_TOLERANCE_VIOLATED, PATH_TOLERANCE_VIOLATED, SUCCEEDED, BadTrajectory,
                                   Tolerances, Trajectory, TrajectoryFollower)
from ..common import convert
from ..common.long_requests import ACTION_QOS, own_threads
from ..common.params import declare

POLL = 0.02  # wall seconds between looks at a goal in progress
ERASE = -1.0  # a JointTolerance value that removes the default tolerance (control_msgs/JointTolerance)
PREEMPTED = "Current goal preempted by new incoming action."


def available() -> bool:
    try:
        import control_msgs.action  # noqa: F401
    except ImportError:
        return False
    return True


def declare_parameters(node) -> None:
    """The controllers' parameters on the arm node, named as JTC's and GripperActionController's."""
    declare(node, "allow_partial_joints_goal", "Accept FollowJointTrajectory goals that name only some of "
            "the arm's joints (the others hold), as JTC's parameter of that name.")
    declare(node, "allow_nonzero_velocity_at_trajectory_end", "Accept FollowJointTrajectory goals whose "
            "last point has a non-zero velocity, as JTC's parameter of that name.")
    declare(node, "constraints.goal_time", "Sim seconds after a goal's end within which the joints must be "
            "within the goal tolerance, unless the goal gives its goal_time_tolerance (0 = as long as it takes, "
            "JTC's default).")
    declare(node, "constraints.stopped_velocity_tolerance", "Goal velocity tolerance [rad/s]: the joints "
            "count as arrived only below it (0 = not checked).")
    declare(node, "constraints.goal", "Default goal position tolerance of every arm joint [rad] "
            "(0 = not checked).")
    declare(node, "constraints.trajectory", "Default path position tolerance of every arm joint [rad] "
            "while a goal runs (0 = not checked, JTC's default).")
    declare(node, "gripper.goal_tolerance", "GripperCommand: within this of the target [m] the goal is "
            "reached.")
    declare(node, "gripper.allow_stalling", "GripperCommand: a gripper stopped short of its target (on an "
            "object) succeeds with stalled=true; false: it aborts.")
    declare(node, "gripper.stall_velocity_threshold", "GripperCommand: finger speed [m/s] below which the "
            "gripper counts as not moving.")
    declare(node, "gripper.stall_timeout", "GripperCommand: sim seconds without moving that make a stall.")


class TrajectoryActions:
    def __init__(self, node, controller: str, gripper_controller: str):
        from control_msgs.action import FollowJointTrajectory, GripperCommand

        self.node, self.arm, self.loop, self.world = node, node.arm, node.loop, node.sim.world
        declare_parameters(node)
        self.FollowJointTrajectory, self.GripperCommand = FollowJointTrajectory, GripperCommand
        # The GripperCommand goal accepted last (its handle): it preempts the others and alone sets the fingers.
        self.newest_grip = None
        # A goal's callback runs until the goal ends (seconds): served by a node of its own, which the
        # stack puts on its thread pool, away from the executor of the short callbacks.
        self.server_node = Node(f"{node.get_name()}_actions", namespace=node.get_namespace(), context=node.context,
                                cli_args=["--ros-args", "-r", f"__ns:={node.get_namespace()}"])  # its arm's, too
        group = ReentrantCallbackGroup()
        self.servers = [
            ActionServer(self.server_node, FollowJointTrajectory, f"{controller}/follow_joint_trajectory", self.follow,
                         goal_callback=self.check_goal, cancel_callback=lambda _: CancelResponse.ACCEPT,
                         callback_group=group, **ACTION_QOS),
            ActionServer(self.server_node, GripperCommand, f"{gripper_controller}/gripper_cmd", self.grip,
                         goal_callback=self.check_grip, handle_accepted_callback=self.number_grip,
                         cancel_callback=lambda _: CancelResponse.ACCEPT, callback_group=group, **ACTION_QOS),
        ]
        self.goal_threads = [own_threads(server) for server in self.servers]  # a goal holds no executor thread

    def destroy(self) -> None:
        for server in self.servers:
            server.destroy()
        self.server_node.destroy_node()

    def parameter(self, name: str):
        return self.node.get_parameter(name).value

    def owned(self, interface: str) -> GoalResponse:
        return GoalResponse.REJECT if self.node.refused(interface) else GoalResponse.ACCEPT

    # --- FollowJointTrajectory: acceptance ------------------------------------------------------
    def parse(self, goal) -> Trajectory:
        """The goal's trajectory, checked as JTC's validate_trajectory_msg does; BadTrajectory says why not."""
        msg = goal.trajectory
        msg.joint_names = self.node.local_names(msg.joint_names)
        if not msg.joint_names:
            raise BadTrajectory("no joint names")
        foreign = [n for n in msg.joint_names if n not in ARM_JOINT_NAMES]
        if foreign:
            raise BadTrajectory(f"joint {str(foreign[0])[:40]!r} is not one of this controller's joints "
                                f"({', '.join(ARM_JOINT_NAMES)})")
        if not self.parameter("allow_partial_joints_goal") and len(set(msg.joint_names)) != len(ARM_JOINT_NAMES):
            raise BadTrajectory(f"the goal names {len(msg.joint_names)} of the {len(ARM_JOINT_NAMES)} joints "
                                "(allow_partial_joints_goal is false)")
        trajectory = convert.trajectory(msg, self.arm.limits)
        if (not self.parameter("allow_nonzero_velocity_at_trajectory_end") and trajectory.velocities is not None
                and np.any(np.abs(trajectory.velocities[-1]) > np.finfo(np.float32).eps)):
            raise BadTrajectory("the last point's velocity is not zero (allow_nonzero_velocity_at_trajectory_end "
                                "is false)")
        start = convert.to_seconds(msg.header.stamp)
        if start != 0 and start + trajectory.duration < self.world.time:
            raise BadTrajectory(f"the trajectory starts at {start:.3f} s and ends at {start + trajectory.duration:.3f} s, "
                                f"in the past (now {self.world.time:.3f} s)")
        return trajectory

    def check_goal(self, goal) -> GoalResponse:
        if self.owned("follow_joint_trajectory") == GoalResponse.REJECT:
            return GoalResponse.REJECT
        try:
            self.parse(goal)
        except BadTrajectory as exc:  # a GoalResponse carries no reason: the log and /diagnostics do
            self.node.diagnostics.reject("follow_joint_trajectory", str(exc))
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    def tolerances(self, goal, trajectory: Trajectory) -> Tolerances:
        """The defaults (parameters) with the goal's own where it gives them: > 0 replaces, -1 erases,
        0 keeps; an unknown joint or another negative value: the defaults, logged (as JTC)."""
        joints = len(trajectory.joints)
        names = [ARM_JOINT_NAMES[j] for j in trajectory.joints]
        stopped = self.parameter("constraints.stopped_velocity_tolerance")
        default = dict(path_position=np.full(joints, self.parameter("constraints.trajectory")),
                       path_velocity=np.zeros(joints), goal_position=np.full(joints, self.parameter("constraints.goal")),
                       goal_velocity=np.full(joints, stopped))
        values = {k: v.copy() for k, v in default.items()}
        goal_time = self.parameter("constraints.goal_time")
        try:
            goal_time = _resolve(goal_time, convert.to_seconds(goal.goal_time_tolerance))
            for given, kind in ((goal.path_tolerance, "path"), (goal.goal_tolerance, "goal")):
                for tolerance in given:
                    name = self.node.local_names([tolerance.name])[0]
                    if name not in names:
                        raise ValueError(f"{kind}_tolerance names joint {str(name)[:40]!r}, which the goal does not move")
                    k = names.index(name)
                    for field in ("position", "velocity"):
                        values[f"{kind}_{field}"][k] = _resolve(values[f"{kind}_{field}"][k], getattr(tolerance, field))
        except ValueError as exc:
            self.node.get_logger().error(f"follow_joint_trajectory: {exc}; using the default tolerances")
            values, goal_time = default, self.parameter("constraints.goal_time")
        return Tolerances(goal_time=goal_time, **values)

    # --- FollowJointTrajectory: execution -------------------------------------------------------
    def follow(self, handle):
        Result = self.FollowJointTrajectory.Result
        result = Result()
        try:
            trajectory = self.parse(handle.request)
        except BadTrajectory as exc:  # checked on acceptance; the clock may have moved past its end since
            result.error_code, result.error_string = Result.INVALID_GOAL, str(exc)
            handle.abort()
            return result
        start = convert.to_seconds(handle.request.trajectory.header.stamp)  # 0: now
        follower = self.loop.run(self._start, trajectory, start, self.tolerances(handle.request, trajectory))
        joints = list(trajectory.joints)
        feedback = self.FollowJointTrajectory.Feedback(joint_names=list(handle.request.trajectory.joint_names))
        while True:
            time.sleep(POLL)
            if handle.is_cancel_requested:
                self.loop.run(self._hold, follower)
                handle.canceled()
                result.error_string = "canceled: holding where it was"
                return result
            now, position, velocity, mine = self.loop.run(
                lambda: (self.world.time, *self.arm.joint_states()[:2], self.arm.controller is follower or follower.done))
            outcome = follower.outcome
            if outcome is None and not mine:  # another command took over, as on a real controller
                handle.abort()
                result.error_code = Result.INVALID_GOAL
                result.error_string = follower.preempted_by or ("preempted by a command on another interface (topic "
                                                                "or service), which now drives the arm")
                return result
            if outcome is not None:
                result.error_string = outcome.message
                if outcome.kind == SUCCEEDED:
                    result.error_code = Result.SUCCESSFUL
                    handle.succeed()
                else:
                    result.error_code = {PATH_TOLERANCE_VIOLATED: Result.PATH_TOLERANCE_VIOLATED,
                                         GOAL_TOLERANCE_VIOLATED: Result.GOAL_TOLERANCE_VIOLATED}[outcome.kind]
                    handle.abort()
                return result
            desired, desired_velocity = follower.sample_state(now - follower.start_time)
            feedback.header.stamp = convert.stamp(now)
            feedback.desired.positions, feedback.desired.velocities = desired.tolist(), desired_velocity.tolist()
            feedback.actual.positions, feedback.actual.velocities = position[joints].tolist(), velocity[joints].tolist()
            feedback.error.positions = (desired - position[joints]).tolist()
            feedback.error.velocities = (desired_velocity - velocity[joints]).tolist()
            handle.publish_feedback(feedback)

    def _start(self, trajectory: Trajectory, start: float, tolerances: Tolerances) -> TrajectoryFollower:
        """The goal's follower installed, from `start` (sim time; 0 or past: now); a goal's follower it
        replaces learns it was preempted by this one (physics thread)."""
        running = self.arm.controller
        if isinstance(running, TrajectoryFollower) and running.tolerances is not None:
            running.preempted_by = PREEMPTED
        self.node.take_over()
        follower = TrajectoryFollower(self.arm, trajectory, max(start, self.world.time), tolerances)
        self.arm.set_controller(follower)
        return follower

    def _hold(self, follower: TrajectoryFollower) -> None:
        """A canceled goal's joints stay where they are (if its follower still drives them)."""
        if self.arm.controller is follower:
            self.node.take_over()
            self.arm.set_position_targets(self.arm.joint_states()[0])

    # --- GripperCommand -----------------------------------------------------------------------
    def check_grip(self, goal) -> GoalResponse:
        if self.owned("gripper_cmd") == GoalResponse.REJECT:
            return GoalResponse.REJECT
        command = goal.command
        if not (np.isfinite(command.position) and np.isfinite(command.max_effort)):
            self.node.diagnostics.reject("gripper_cmd", "position and max_effort must be finite numbers")
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    def number_grip(self, handle) -> None:
        """An accepted goal becomes the newest, then starts. Marked here, in the order the server accepts
        goals, not on the goal's own thread: two goals sent together reach their threads in either order, and
        the one accepted last must be the one whose finger targets hold (_fingers)."""
        self.newest_grip = handle
        handle.execute()

    def grip(self, handle):
        """Both fingers to `position` [m each, 0 closed .. 0.04 open], squeezing with at most `max_effort` [N]
        per finger (0 or less: the scene file's finger_force); ends as GripperActionController does."""
        command = handle.request.command
        result = self.GripperCommand.Result()
        target = float(np.clip(command.position, self.arm.limits.lower[7], self.arm.limits.upper[7]))
        force = float(command.max_effort) if command.max_effort > 0 else None
        moved_at = self.loop.run(self._fingers, target, force, handle)
        tolerance, threshold, timeout = (self.parameter(f"gripper.{name}") for name in
                                         ("goal_tolerance", "stall_velocity_threshold", "stall_timeout"))
        while True:
            time.sleep(POLL)
            now, position, velocity, effort = self.loop.run(
                lambda: (self.world.time, *(values[7:].copy() for values in self.arm.joint_states())))
            result.position, result.effort = float(position[0]), float(np.abs(effort).max())
            if handle.is_cancel_requested or handle is not self.newest_grip:  # a new goal preempts: CANCELED, as there
                if not handle.is_cancel_requested:
                    handle._update_state(GoalEvent.CANCEL_GOAL)  # rclpy's only way to cancel from the server side
                handle.canceled()
                return result
            if abs(position[0] - target) < tolerance:
                result.reached_goal = True
                handle.succeed()
                return result
            if np.abs(velocity).max() > threshold:
                moved_at = now
            elif now - moved_at > timeout:
                result.stalled = True
                if self.parameter("gripper.allow_stalling"):
                    handle.succeed()
                else:
                    handle.abort()
                return result

    def _fingers(self, position: float, force: float | None, handle) -> float:
        """Both finger targets set, the squeeze limited to `force`, if the goal of `handle` is still the newest
        (physics thread; a preempted goal sets nothing, however late its thread gets here); the sim time now."""
        if handle is not self.newest_grip:
            return self.world.time
        self.arm.set_finger_force(force)
        targets = self.arm.position_targets.copy()
        current = self.arm.joint_states()[0]
        targets[np.isnan(targets)] = current[np.isnan(targets)]
        targets[7:] = position
        self.arm.command_motors(targets, np.full(len(targets), np.nan))
        return self.world.time


def _resolve(default: float, given: float) -> float:
    """A control_msgs tolerance over its default: > 0 replaces it, -1 erases it (0: unchecked), 0 keeps it."""
    if given > 0:
        return float(given)
    if abs(given - ERASE) < np.finfo(np.float32).eps:
        return 0.0
    if given < 0 or not np.isfinite(given):
        raise ValueError(f"tolerance {given!r} is neither > 0, 0 nor -1")
    return default
