"""The FollowJointTrajectory and GripperCommand actions MoveIt uses, against the real control_msgs
(a ROS 2 install's ros2_control; CI installs ../shared/ros-tools). Without it these tests skip naming
it, and test_planner_topics.py tests the same follower through arm/joint_trajectory. No module-level
skip: launch_testing's pytest plugin imports every test file, and one would skip the whole folder.

One test per row of the controller contract (doc/planners.md, "The controller contract, row by row"): what
ros2_control's joint_trajectory_controller and GripperActionController do, checked from a client."""
import time

import numpy as np
import pytest
from action_msgs.msg import GoalStatus
from builtin_interfaces.msg import Duration
from rclpy.action import ActionClient
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

import ros_env
from binpick_sim.cell.arm.panda import JOINT_NAMES
from binpick_sim.nodes.common import convert

from helpers import parameters

ARM = list(JOINT_NAMES[:7])
pytestmark = pytest.mark.skipif(ros_env.missing("control_msgs") is not None,
                                reason=f"{ros_env.missing('control_msgs')}; test_planner_topics.py tests the "
                                       "same trajectory follower")


def control_msgs():
    from control_msgs import action, msg

    return action.FollowJointTrajectory, action.GripperCommand, msg.GripperCommand


ARM_ACTION, GRIPPER_ACTION = "panda_arm_controller/follow_joint_trajectory", "panda_hand_controller/gripper_cmd"


def start(client, action, name, goal, feedback=None):
    """A goal sent; its result future (None: rejected). One ActionClient per action name and test client,
    as a planner keeps one per controller. (A second ActionClient made for the same action in the same
    node once waited 60 s without seeing the server ready, in one full run of several; not reproduced alone.)"""
    clients = client.__dict__.setdefault("action_clients", {})
    if name not in clients:
        clients[name] = ActionClient(client.node, action, name)
        client.spin_until(clients[name].server_is_ready, 60, name)
    sent = clients[name].send_goal_async(goal, feedback_callback=feedback)
    client.spin_until(sent.done, 60, "goal answered")
    handle = sent.result()
    return handle.get_result_async() if handle.accepted else None


def finish(client, future, timeout=60):
    """(status, result) of a started goal."""
    client.spin_until(future.done, timeout, "the result")
    return future.result().status, future.result().result


def send(client, action, name, goal, timeout=60):
    """One goal's result (None: rejected)."""
    future = start(client, action, name, goal)
    return None if future is None else finish(client, future, timeout)[1]


def seconds(value):
    return Duration(sec=int(value), nanosec=int(round(value % 1 * 1e9)))


def trajectory_goal(names, positions, times, velocities=None, accelerations=None, stamp=0.0, **fields):
    FollowJointTrajectory, _, _ = control_msgs()
    points = [JointTrajectoryPoint(positions=list(map(float, p)), time_from_start=seconds(t))
              for p, t in zip(positions, times)]
    for values, field in ((velocities, "velocities"), (accelerations, "accelerations")):
        for point, given in zip(points, values or []):
            setattr(point, field, list(map(float, given)))
    trajectory = JointTrajectory(joint_names=names, points=points)
    trajectory.header.stamp = convert.stamp(stamp)
    return FollowJointTrajectory.Goal(trajectory=trajectory, **fields)


def tolerance(names, value, field="position"):
    from control_msgs.msg import JointTolerance

    return [JointTolerance(name=n, **{field: float(value)}) for n in names]


def positions_now(client, stack) -> np.ndarray:
    """The joints as a joint_states stamped at or after this moment's sim time shows them. A result can arrive
    before the joint_states of its end: flat out, with the pile asleep, the world runs the last third of a 1 s
    goal between two joint_states (wall-rate capped), and the newest one the client took showed the arm short of
    the goal (a CI run)."""
    client.wait_for_stamp("joint_states", stack.sim.world.time, timeout=30)
    return client.joint_positions()


def test_a_trajectory_goal_succeeds_at_its_end(client, stack):
    FollowJointTrajectory, _, _ = control_msgs()
    goal_position = stack.sim.arm.home[:7] + [0.3, -0.2, 0.1, 0.2, 0, 0.1, 0]
    result = send(client, FollowJointTrajectory, "panda_arm_controller/follow_joint_trajectory",
                  trajectory_goal(ARM, [goal_position], [1.0]))
    assert result.error_code == FollowJointTrajectory.Result.SUCCESSFUL
    assert np.abs(positions_now(client, stack)[:7] - goal_position).max() < 0.03


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


# --- the controller contract, row by row ------------------------------------------------------------------------

@pytest.fixture
def paced(ros_context):
    """A stack whose sim time runs at most as fast as the wall clock, and its client: for rows about when
    things happen (a free-running stack can be seconds of sim time ahead of a result's delivery)."""
    from binpick_sim.nodes.clients.client import TOPICS, SimClient
    from binpick_sim.nodes.process.stack import SimStack

    with SimStack(ros_context, {"world": parameters(realtime_factor=1.0, camera=False)}) as stack:
        client = SimClient("paced_client", context=ros_context, topics={"joint_states": TOPICS["joint_states"]})
        client.wait_for_topics(["joint_states"], timeout=30)
        yield stack, client
        client.close()


def home_plus(stack, *offsets):
    return stack.sim.arm.home[:7] + np.array(offsets + (0.0,) * (7 - len(offsets)))


def test_path_tolerance_violated_aborts_and_holds(client, stack):
    FollowJointTrajectory, _, _ = control_msgs()
    goal = trajectory_goal(ARM, [home_plus(stack, 0.6, 0.3)], [0.4], path_tolerance=tolerance(ARM, 0.001))
    status, result = finish(client, start(client, FollowJointTrajectory, ARM_ACTION, goal))
    assert status == GoalStatus.STATUS_ABORTED
    assert result.error_code == FollowJointTrajectory.Result.PATH_TOLERANCE_VIOLATED and "path" in result.error_string
    stopped = client.joint_positions()[:7]
    client.spin_for(0.5)
    assert np.abs(client.joint_positions()[:7] - stopped).max() < 0.02  # held where it was, not at the goal
    assert abs(stopped[0] - home_plus(stack, 0.6)[0]) > 0.3
    # -1 erases a default path tolerance: the same goal passes with the parameter set and the goal erasing it
    stack.arm_nodes[0].set_parameters(parameters(**{"constraints.trajectory": 0.001}))
    goal = trajectory_goal(ARM, [stack.sim.arm.home[:7]], [0.4], path_tolerance=tolerance(ARM, -1))
    assert send(client, FollowJointTrajectory, ARM_ACTION, goal).error_code == FollowJointTrajectory.Result.SUCCESSFUL


def test_goal_time_tolerance_bounds_the_wait_for_the_goal(paced):
    stack, client = paced
    FollowJointTrajectory, _, _ = control_msgs()
    begin = stack.sim.world.time + 0.3
    goal = trajectory_goal(ARM, [home_plus(stack, 0.2)], [0.5], stamp=begin, goal_tolerance=tolerance(ARM, 1e-7),
                           goal_time_tolerance=seconds(0.1))
    status, result = finish(client, start(client, FollowJointTrajectory, ARM_ACTION, goal))
    ended = stack.sim.world.time
    assert status == GoalStatus.STATUS_ABORTED
    assert result.error_code == FollowJointTrajectory.Result.GOAL_TOLERANCE_VIOLATED
    assert "goal_time_tolerance" in result.error_string
    assert begin + 0.5 + 0.1 <= ended < begin + 0.5 + 0.6  # the goal's 0.1 s, not a fixed settling time
    # and a goal_time_tolerance longer than the arm needs: reached, however tight the tolerance
    goal = trajectory_goal(ARM, [home_plus(stack, 0.2)], [0.5], goal_tolerance=tolerance(ARM, 2e-4),
                           goal_time_tolerance=seconds(5.0))
    assert send(client, FollowJointTrajectory, ARM_ACTION, goal).error_code == FollowJointTrajectory.Result.SUCCESSFUL


def test_the_start_stamp_delays_the_start_and_a_past_end_is_refused(paced):
    stack, client = paced
    FollowJointTrajectory, _, _ = control_msgs()
    before = client.joint_positions()[:7]
    begin = stack.sim.world.time + 1.0
    future = start(client, FollowJointTrajectory, ARM_ACTION,
                   trajectory_goal(ARM, [home_plus(stack, 0.3)], [0.5], stamp=begin))
    client.spin_until(lambda: stack.sim.world.time > begin - 0.3, 30, "most of the wait")
    assert np.abs(client.joint_positions()[:7] - before).max() < 0.01  # not moving before its stamp
    status, result = finish(client, future)
    assert status == GoalStatus.STATUS_SUCCEEDED and stack.sim.world.time >= begin + 0.5
    past = trajectory_goal(ARM, [home_plus(stack)], [0.5], stamp=max(stack.sim.world.time - 1.0, 1e-3))
    assert send(client, FollowJointTrajectory, ARM_ACTION, past) is None


def test_partial_goals_only_when_allowed(client, stack):
    FollowJointTrajectory, _, _ = control_msgs()
    home = stack.sim.arm.home
    partial = trajectory_goal(ARM[1:], [home[1:7] + 0.1], [0.5])
    assert send(client, FollowJointTrajectory, ARM_ACTION, partial) is None
    fingers = trajectory_goal(ARM + ["panda_finger_joint1"], [list(home[:7]) + [0.01]], [0.5])
    assert send(client, FollowJointTrajectory, ARM_ACTION, fingers) is None  # not this controller's joint
    shuffled = trajectory_goal(ARM[::-1], [home[:7][::-1]], [0.5])  # all seven, in any order: fine
    assert send(client, FollowJointTrajectory, ARM_ACTION, shuffled).error_code == FollowJointTrajectory.Result.SUCCESSFUL
    stack.arm_nodes[0].set_parameters(parameters(allow_partial_joints_goal=True))
    result = send(client, FollowJointTrajectory, ARM_ACTION, trajectory_goal(["panda_joint2"], [[home[1] + 0.2]], [0.5]))
    assert result.error_code == FollowJointTrajectory.Result.SUCCESSFUL
    now = positions_now(client, stack)
    assert abs(now[1] - home[1] - 0.2) < 0.02 and np.abs(np.delete(now[:7] - home[:7], 1)).max() < 0.02


def test_a_nonzero_final_velocity_is_refused_unless_allowed(client, stack):
    FollowJointTrajectory, _, _ = control_msgs()
    goal = trajectory_goal(ARM, [home_plus(stack, 0.1)], [1.0], velocities=[[0.1] + [0.0] * 6])
    assert send(client, FollowJointTrajectory, ARM_ACTION, goal) is None
    stack.arm_nodes[0].set_parameters(parameters(allow_nonzero_velocity_at_trajectory_end=True))
    goal.goal_tolerance = tolerance(ARM, -1, "velocity")  # it ends moving: no stopped-velocity check either
    assert send(client, FollowJointTrajectory, ARM_ACTION, goal).error_code == FollowJointTrajectory.Result.SUCCESSFUL


def test_accelerations_make_quintic_segments(paced):
    """From rest to rest in 1 s: the quintic passes a quarter of the way at t = 0.5 - 0.1 s where a cubic
    (velocities only) is noticeably further; the feedback's desired positions say which was used."""
    stack, client = paced
    FollowJointTrajectory, _, _ = control_msgs()
    home = stack.sim.arm.home[:7]
    goal_position = home_plus(stack, 0.5)
    begin = stack.sim.world.time + 1.0  # a known start
    feedback = []
    goal = trajectory_goal(ARM, [goal_position], [1.0], velocities=[[0.0] * 7], accelerations=[[0.0] * 7], stamp=begin)
    status, _ = finish(client, start(client, FollowJointTrajectory, ARM_ACTION, goal,
                                     feedback=lambda msg: feedback.append(msg.feedback)))
    assert status == GoalStatus.STATUS_SUCCEEDED
    samples = [(convert.to_seconds(f.header.stamp) - begin, f.desired.positions[0] - home[0]) for f in feedback]
    quintic, cubic = (lambda t: 0.5 * (10 * t**3 - 15 * t**4 + 6 * t**5)), (lambda t: 0.5 * (3 * t**2 - 2 * t**3))
    telling = [(t, x) for t, x in samples if 0.1 < t < 0.9 and abs(quintic(t) - cubic(t)) > 0.01]
    assert telling, samples
    for t, x in telling:  # (the arm starts a hair off home: the implicit first point is where it is)
        assert x == pytest.approx(quintic(t), abs=2e-3), (t, x, quintic(t), cubic(t))
    too_hard = trajectory_goal(ARM, [goal_position], [1.0], velocities=[[0.0] * 7], accelerations=[[100.0] + [0.0] * 6])
    assert send(client, FollowJointTrajectory, ARM_ACTION, too_hard) is None  # above the acceleration limit
    too_fast = trajectory_goal(ARM, [home, home_plus(stack, 2.0)], [0.5, 1.0])  # 4 rad/s between the points
    assert send(client, FollowJointTrajectory, ARM_ACTION, too_fast) is None


def test_a_new_goal_preempts_and_a_cancel_cancels(client, stack):
    # Goals of an hour of sim time: the flat-out world, its pile asleep, runs 100-170 sim seconds a wall second, and
    # a 20 s goal once ended before the next was sent (a rehearsal run).
    FollowJointTrajectory, _, _ = control_msgs()
    first = start(client, FollowJointTrajectory, ARM_ACTION, trajectory_goal(ARM, [home_plus(stack, 0.8)], [3600.0]))
    client.spin_for(0.2)
    second_goal = trajectory_goal(ARM, [home_plus(stack, -0.2)], [3600.0])
    clients = client.action_clients
    sent = clients[ARM_ACTION].send_goal_async(second_goal)
    status, result = finish(client, first)
    assert status == GoalStatus.STATUS_ABORTED and result.error_code == FollowJointTrajectory.Result.INVALID_GOAL
    assert "preempted by new incoming action" in result.error_string
    client.spin_until(sent.done, 30, "the second goal accepted")
    handle = sent.result()
    client.spin_for(0.3)
    second = handle.get_result_async()
    canceling = handle.cancel_goal_async()
    client.spin_until(canceling.done, 30, "the cancel answered")
    assert finish(client, second)[0] == GoalStatus.STATUS_CANCELED
    held = client.joint_positions()[:7]
    client.spin_for(0.5)
    assert np.abs(client.joint_positions()[:7] - held).max() < 0.02  # held, not going on to the goal


def test_results_say_why(client, stack):
    FollowJointTrajectory, _, _ = control_msgs()
    result = send(client, FollowJointTrajectory, ARM_ACTION, trajectory_goal(ARM, [home_plus(stack, 0.1)], [0.5]))
    assert result.error_code == FollowJointTrajectory.Result.SUCCESSFUL and result.error_string == "goal reached"


def grasp_block(stack):
    """A fixed 2 cm block between the open fingers (physics thread), for the gripper to close on."""
    def place():
        c = stack.sim.world.client
        position, orientation = stack.sim.arm.ee_pose()
        shape = c.createCollisionShape(c.GEOM_BOX, halfExtents=[0.01, 0.01, 0.01])
        return c.createMultiBody(baseMass=0.0, baseCollisionShapeIndex=shape, basePosition=list(position),
                                 baseOrientation=list(orientation))
    return stack.loop.run(place)


def test_the_gripper_squeezes_with_at_most_max_effort_and_reports_a_stall(client, stack):
    _, GripperCommand, GripperTarget = control_msgs()
    opened = send(client, GripperCommand, GRIPPER_ACTION, GripperCommand.Goal(command=GripperTarget(position=0.04)))
    assert opened.reached_goal
    grasp_block(stack)
    for max_effort in (5.0, 30.0):
        status, result = finish(client, start(client, GripperCommand, GRIPPER_ACTION,
                                              GripperCommand.Goal(command=GripperTarget(position=0.0, max_effort=max_effort))))
        assert status == GoalStatus.STATUS_SUCCEEDED  # allow_stalling: true
        assert result.stalled and not result.reached_goal and abs(result.position - 0.01) < 0.003
        assert max_effort * 0.8 < result.effort <= max_effort * 1.05, (max_effort, result.effort)
    stack.arm_nodes[0].set_parameters(parameters(**{"gripper.allow_stalling": False}))
    status, result = finish(client, start(client, GripperCommand, GRIPPER_ACTION,
                                          GripperCommand.Goal(command=GripperTarget(position=0.0, max_effort=10.0))))
    assert status == GoalStatus.STATUS_ABORTED and result.stalled


def test_a_new_gripper_goal_cancels_the_running_one(client, stack):
    """The first goal closes on a block and, with a long stall timeout, would wait: the second ends it."""
    _, GripperCommand, GripperTarget = control_msgs()
    send(client, GripperCommand, GRIPPER_ACTION, GripperCommand.Goal(command=GripperTarget(position=0.04)))
    grasp_block(stack)
    stack.arm_nodes[0].set_parameters(parameters(**{"gripper.stall_timeout": 60.0}))
    first = start(client, GripperCommand, GRIPPER_ACTION, GripperCommand.Goal(command=GripperTarget(position=0.0)))
    # The first goal runs (its fingers' targets set) before the next is sent: "the running one". (Goals sent
    # together: the next test.)
    client.spin_until(lambda: stack.loop.run(lambda: float(stack.sim.arm.position_targets[7])) == 0.0, 30,
                      "the first goal closing the fingers")
    second = start(client, GripperCommand, GRIPPER_ACTION, GripperCommand.Goal(command=GripperTarget(position=0.035)))
    assert finish(client, first)[0] == GoalStatus.STATUS_CANCELED
    status, result = finish(client, second)
    assert status == GoalStatus.STATUS_SUCCEEDED and result.reached_goal


class LateTargets:
    """The arm node's loop, except that finger targets of `position` reach the physics thread only once a newer
    goal has been accepted and has set its own targets (`newer`, the finger target it sets): as when a goal's
    thread is slower than the next goal's to get there. (A fixed 0.5 s delay was once not long enough on a loaded
    CI machine: the second goal was accepted later, and the first, never preempted, succeeded.)"""

    def __init__(self, actions, position: float, newer: float, timeout: float = 30.0):
        self.loop, self.actions, self.position, self.newer, self.timeout = actions.loop, actions, position, newer, timeout

    def run(self, fn, *args, **kwargs):
        if getattr(fn, "__name__", "") == "_fingers" and args[0] == self.position:
            deadline = time.monotonic() + self.timeout
            while time.monotonic() < deadline and (self.actions.newest_grip is args[2] or self.loop.run(
                    lambda: float(self.actions.arm.position_targets[7])) != pytest.approx(self.newer)):
                time.sleep(0.01)
        return self.loop.run(fn, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.loop, name)


def test_the_newest_gripper_goal_holds_the_fingers_however_late_the_older_one_sets_its_targets(client, stack):
    """Goals are numbered as accepted: an older goal whose thread sets its targets after the newer one's
    sets nothing (before, the newer goal then waited for fingers held at the older goal's targets)."""
    _, GripperCommand, GripperTarget = control_msgs()
    send(client, GripperCommand, GRIPPER_ACTION, GripperCommand.Goal(command=GripperTarget(position=0.04)))
    actions = stack.arm_nodes[0].actions
    actions.loop = LateTargets(actions, 0.01, newer=0.03)
    try:
        first = start(client, GripperCommand, GRIPPER_ACTION, GripperCommand.Goal(command=GripperTarget(position=0.01)))
        second = start(client, GripperCommand, GRIPPER_ACTION, GripperCommand.Goal(command=GripperTarget(position=0.03)))
        assert finish(client, first)[0] == GoalStatus.STATUS_CANCELED
        status, result = finish(client, second)
        assert status == GoalStatus.STATUS_SUCCEEDED and result.reached_goal, result
        time.sleep(0.2)  # the late call has come (before the first goal ended): the fingers hold the newest goal's targets
        assert stack.loop.run(lambda: float(stack.sim.arm.position_targets[7])) == pytest.approx(0.03)
    finally:
        actions.loop = actions.loop.loop


def test_a_gripper_goal_that_is_not_a_number_is_refused(client, stack):
    _, GripperCommand, GripperTarget = control_msgs()
    for command in (GripperTarget(position=float("nan")), GripperTarget(position=0.01, max_effort=float("inf"))):
        assert send(client, GripperCommand, GRIPPER_ACTION, GripperCommand.Goal(command=command)) is None
    assert send(client, GripperCommand, GRIPPER_ACTION,
                GripperCommand.Goal(command=GripperTarget(position=0.03))).reached_goal  # and it still serves
