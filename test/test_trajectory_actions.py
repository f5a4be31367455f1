"""The FollowJointTrajectory and GripperCommand actions MoveIt uses, against the real control_msgs
(a ROS 2 install's ros2_control; CI installs ../shared/ros-tools). Without it these tests skip naming
it, and test_planner_topics.py tests the same follower through arm/joint_trajectory. No module-level
skip: launch_testing's pytest plugin imports every test file, and one would skip the whole folder."""
import numpy as np
import pytest
from builtin_interfaces.msg import Duration
from rclpy.action import ActionClient
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

import ros_env
from binpick_sim.cell.arm import JOINT_NAMES

ARM = list(JOINT_NAMES[:7])
pytestmark = pytest.mark.skipif(ros_env.missing("control_msgs") is not None,
                                reason=f"{ros_env.missing('control_msgs')}; test_planner_topics.py tests the "
                                       "same trajectory follower")


def control_msgs():
    from control_msgs import action, msg

    return action.FollowJointTrajectory, action.GripperCommand, msg.GripperCommand


def send(client, action, name, goal, timeout=60):
    """One goal's result (None: rejected), through one ActionClient per action name and test client, as a
    planner keeps one per controller. (A second ActionClient made for the same action in the same node
    once waited 60 s without seeing the server ready, in one full run of several; not reproduced alone.)"""
    clients = client.__dict__.setdefault("action_clients", {})
    if name not in clients:
        clients[name] = ActionClient(client.node, action, name)
        client.spin_until(clients[name].server_is_ready, 60, name)
    actions = clients[name]
    sent = actions.send_goal_async(goal)
    client.spin_until(sent.done, timeout, "goal answered")
    handle = sent.result()
    if not handle.accepted:
        return None
    result = handle.get_result_async()
    client.spin_until(result.done, timeout, "the result")
    return result.result().result


def trajectory_goal(names, positions, seconds):
    FollowJointTrajectory, _, _ = control_msgs()
    points = [JointTrajectoryPoint(positions=list(map(float, p)), time_from_start=Duration(sec=int(s),
                                   nanosec=int(s % 1 * 1e9))) for p, s in zip(positions, seconds)]
    return FollowJointTrajectory.Goal(trajectory=JointTrajectory(joint_names=names, points=points))


def test_a_trajectory_goal_succeeds_at_its_end(client, stack):
    FollowJointTrajectory, _, _ = control_msgs()
    goal_position = stack.sim.arm.home[:7] + [0.3, -0.2, 0.1, 0.2, 0, 0.1, 0]
    result = send(client, FollowJointTrajectory, "panda_arm_controller/follow_joint_trajectory",
                  trajectory_goal(ARM, [goal_position], [1.0]))
    assert result.error_code == FollowJointTrajectory.Result.SUCCESSFUL
    assert np.abs(client.joint_positions()[:7] - goal_position).max() < 0.03


def test_bad_trajectory_goals_are_rejected(client, stack):
    FollowJointTrajectory, _, _ = control_msgs()
    good = list(stack.sim.arm.home[:7])
    for goal in (trajectory_goal(ARM[:6] + ["elbow"], [good], [1.0]), trajectory_goal(ARM, [good, good], [2.0, 1.0]),
                 trajectory_goal(ARM, [[float("nan")] * 7], [1.0]), trajectory_goal([], [], [])):
        assert send(client, FollowJointTrajectory, "panda_arm_controller/follow_joint_trajectory", goal) is None


def test_the_gripper_command_closes_on_nothing_and_opens(client, stack):
    _, GripperCommand, GripperTarget = control_msgs()
    closed = send(client, GripperCommand, "panda_hand_controller/gripper_cmd",
                  GripperCommand.Goal(command=GripperTarget(position=0.0, max_effort=20.0)))
    assert closed.reached_goal and closed.position < 0.002
    opened = send(client, GripperCommand, "panda_hand_controller/gripper_cmd",
                  GripperCommand.Goal(command=GripperTarget(position=0.03, max_effort=20.0)))
    assert opened.reached_goal and abs(opened.position - 0.03) < 0.002
