"""The FollowJointTrajectory and GripperCommand actions MoveIt uses. They need control_msgs, which
comes with a ROS 2 install (ros2_control); without it this file is skipped and the same follower is
tested through arm/joint_trajectory (test_planner_topics.py)."""
import numpy as np
import pytest

pytest.importorskip("control_msgs", reason="control_msgs is not installed (it comes with ros2_control); "
                                            "test_planner_topics.py tests the same trajectory follower")

from builtin_interfaces.msg import Duration  # noqa: E402
from control_msgs.action import FollowJointTrajectory, GripperCommand  # noqa: E402
from control_msgs.msg import GripperCommand as GripperTarget  # noqa: E402
from rclpy.action import ActionClient  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

from binpick_sim.arm import JOINT_NAMES  # noqa: E402

ARM = list(JOINT_NAMES[:7])


def send(client, action, name, goal, timeout=60):
    actions = ActionClient(client.node, action, name)
    client.spin_until(actions.server_is_ready, 20, name)
    sent = actions.send_goal_async(goal)
    client.spin_until(sent.done, timeout, "goal answered")
    handle = sent.result()
    if not handle.accepted:
        return None
    result = handle.get_result_async()
    client.spin_until(result.done, timeout, "the result")
    return result.result().result


def trajectory_goal(names, positions, seconds):
    points = [JointTrajectoryPoint(positions=list(map(float, p)), time_from_start=Duration(sec=int(s),
                                   nanosec=int(s % 1 * 1e9))) for p, s in zip(positions, seconds)]
    return FollowJointTrajectory.Goal(trajectory=JointTrajectory(joint_names=names, points=points))


def test_a_trajectory_goal_succeeds_at_its_end(client, stack):
    goal_position = stack.sim.arm.home[:7] + [0.3, -0.2, 0.1, 0.2, 0, 0.1, 0]
    result = send(client, FollowJointTrajectory, "panda_arm_controller/follow_joint_trajectory",
                  trajectory_goal(ARM, [goal_position], [1.0]))
    assert result.error_code == FollowJointTrajectory.Result.SUCCESSFUL
    assert np.abs(client.joint_positions()[:7] - goal_position).max() < 0.03


def test_bad_trajectory_goals_are_rejected(client, stack):
    good = list(stack.sim.arm.home[:7])
    for goal in (trajectory_goal(ARM[:6] + ["elbow"], [good], [1.0]), trajectory_goal(ARM, [good, good], [2.0, 1.0]),
                 trajectory_goal(ARM, [[float("nan")] * 7], [1.0]), trajectory_goal([], [], [])):
        assert send(client, FollowJointTrajectory, "panda_arm_controller/follow_joint_trajectory", goal) is None


def test_the_gripper_command_closes_on_nothing_and_opens(client, stack):
    closed = send(client, GripperCommand, "panda_hand_controller/gripper_cmd",
                  GripperCommand.Goal(command=GripperTarget(position=0.0, max_effort=20.0)))
    assert closed.reached_goal and closed.position < 0.002
    opened = send(client, GripperCommand, "panda_hand_controller/gripper_cmd",
                  GripperCommand.Goal(command=GripperTarget(position=0.03, max_effort=20.0)))
    assert opened.reached_goal and abs(opened.position - 0.03) < 0.002
