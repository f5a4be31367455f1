"""control_msgs action servers for planners (MoveIt's "FollowJointTrajectory" and "GripperCommand"
controllers), served by the arm node where control_msgs is importable (any ROS 2 install with
ros2_control). They drive the same trajectory follower as `arm/joint_trajectory`.
"""
from __future__ import annotations

import time

import numpy as np
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from ...control.trajectory import BadTrajectory, Trajectory, TrajectoryFollower
from ..common import convert
from ..common.long_requests import ACTION_QOS, own_threads

POLL = 0.02  # wall seconds between looks at a goal in progress
SETTLE = 1.0  # sim seconds a trajectory's end may take to be reached within the goal tolerance
GOAL_TOLERANCE = 0.02  # rad (or m) when the goal gives none


def available() -> bool:
    try:
        import control_msgs.action  # noqa: F401
    except ImportError:
        return False
    return True


class TrajectoryActions:
    def __init__(self, node, controller: str, gripper_controller: str):
        from control_msgs.action import FollowJointTrajectory, GripperCommand

        self.node, self.arm, self.loop, self.world = node, node.arm, node.loop, node.sim.world
        self.FollowJointTrajectory, self.GripperCommand = FollowJointTrajectory, GripperCommand
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
                         goal_callback=lambda _: self.owned("gripper_cmd"), cancel_callback=lambda _: CancelResponse.ACCEPT, callback_group=group,
                         **ACTION_QOS),
        ]
        self.goal_threads = [own_threads(server) for server in self.servers]  # a goal holds no executor thread

    def destroy(self) -> None:
        for server in self.servers:
            server.destroy()
        self.server_node.destroy_node()

    # --- FollowJointTrajectory ----------------------------------------------------------------
    def parse(self, goal) -> Trajectory:
        goal.trajectory.joint_names = self.node.local_names(goal.trajectory.joint_names)
        return convert.trajectory(goal.trajectory, self.arm.limits)

    def owned(self, interface: str) -> GoalResponse:
        return GoalResponse.REJECT if self.node.refused(interface) else GoalResponse.ACCEPT

    def check_goal(self, goal) -> GoalResponse:
        if self.owned("follow_joint_trajectory") == GoalResponse.REJECT:
            return GoalResponse.REJECT
        try:
            self.parse(goal)
        except BadTrajectory as exc:
            self.node.diagnostics.reject("follow_joint_trajectory", str(exc))
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    def follow(self, handle):
        result = self.FollowJointTrajectory.Result()
        try:
            trajectory = self.parse(handle.request)
        except BadTrajectory as exc:  # checked on acceptance; kept for safety
            result.error_code, result.error_string = result.INVALID_GOAL, str(exc)
            handle.abort()
            return result
        follower = self.loop.run(self._start, trajectory)
        joints = list(trajectory.joints)
        tolerance = self._goal_tolerance(handle.request, trajectory)
        end = follower.start_time + trajectory.duration
        feedback = self.FollowJointTrajectory.Feedback(joint_names=list(handle.request.trajectory.joint_names))
        while True:
            time.sleep(POLL)
            if handle.is_cancel_requested:
                self.loop.run(self._hold)
                handle.canceled()
                result.error_string = "canceled: holding where it was"
                return result
            now, actual, mine = self.loop.run(lambda: (self.world.time, self.arm.joint_states()[0][joints],
                                                       self.arm.controller is follower or follower.done))
            if not mine:  # another command took over, as on a real controller
                handle.abort()
                result.error_code, result.error_string = result.INVALID_GOAL, "replaced by another command"
                return result
            desired = follower.sample(now - follower.start_time)
            feedback.desired.positions, feedback.actual.positions = desired.tolist(), actual.tolist()
            feedback.error.positions = (desired - actual).tolist()
            handle.publish_feedback(feedback)
            if now >= end and np.all(np.abs(actual - trajectory.positions[-1]) <= tolerance):
                handle.succeed()
                result.error_code = result.SUCCESSFUL
                return result
            if now >= end + SETTLE:
                handle.abort()
                result.error_code = result.GOAL_TOLERANCE_VIOLATED
                result.error_string = f"joints {np.round(actual, 4).tolist()} not within {tolerance} of the goal"
                return result

    def _start(self, trajectory: Trajectory) -> TrajectoryFollower:
        self.node.take_over()
        follower = TrajectoryFollower(self.arm, trajectory, self.world.time)
        self.arm.set_controller(follower)
        return follower

    def _hold(self) -> None:
        self.node.take_over()
        self.arm.set_position_targets(self.arm.joint_states()[0])

    def _goal_tolerance(self, goal, trajectory: Trajectory) -> np.ndarray:
        given = {t.name: t.position for t in goal.goal_tolerance if t.position > 0}
        names = list(goal.trajectory.joint_names)
        return np.array([given.get(n, GOAL_TOLERANCE) for n in names])

    # --- GripperCommand -----------------------------------------------------------------------
    def grip(self, handle):
        """Both fingers to `position` [m each, 0 closed .. 0.04 open]; done when they stop moving."""
        command = handle.request.command
        result = self.GripperCommand.Result()
        if not np.isfinite(command.position):
            self.node.diagnostics.reject("gripper_cmd", "position must be a finite number")
            handle.abort()
            return result
        target = float(np.clip(command.position, self.arm.limits.lower[7], self.arm.limits.upper[7]))
        self.loop.run(self._fingers, target)
        previous, still = None, 0
        while still < 5:
            time.sleep(POLL)
            if handle.is_cancel_requested:
                handle.canceled()
                return result
            fingers = self.loop.run(lambda: self.arm.joint_states()[0][7:].copy())
            still = still + 1 if previous is not None and np.abs(fingers - previous).max() < 1e-5 else 0
            previous = fingers
        efforts = self.loop.run(lambda: self.arm.joint_states()[2][7:])
        result.position = float(previous[0])
        result.effort = float(np.abs(efforts).max())
        result.reached_goal = bool(abs(previous[0] - target) < 0.002)
        result.stalled = not result.reached_goal
        handle.succeed()
        return result

    def _fingers(self, position: float) -> None:
        targets = self.arm.position_targets.copy()
        current = self.arm.joint_states()[0]
        targets[np.isnan(targets)] = current[np.isnan(targets)]
        targets[7:] = position
        self.arm.command_motors(targets, np.full(len(targets), np.nan))
