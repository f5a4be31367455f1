"""The time-indexed interface of seeds 002/003, one test per sentence of the issue, in-process and
over ROS (same API, same answers)."""
import time

import numpy as np
import pytest

from binpick_sim.config import load_config
from binpick_sim.paths import default_config
from binpick_sim.control.robot_interface import DEFAULT_KD, DEFAULT_KP, SAFETY_KD, Action, Robot, NO_ERROR, BACKEND_ERROR
from binpick_sim.control.time_series import BUFFER, TimeIndexError


@pytest.fixture
def robot():
    """Half real time: tests wait on indices, never on clocks, and a busy machine cannot push the
    indices they read out of the 1000-step buffer (that is two wall seconds of slack)."""
    with Robot(realtime_factor=0.5) as robot:
        yield robot


def test_default_action_is_zero_torque_with_the_pd_off():
    action = Action()
    assert np.all(action.torque == 0) and np.all(np.isnan(action.position))
    assert np.all(np.isnan(action.position_kp)) and np.all(np.isnan(action.position_kd))
    with pytest.raises(ValueError, match="expected 9 values"):
        Action.make(torque=[0.0] * 7)
    with pytest.raises(ValueError, match="torque must be finite"):
        Action.make(torque=[np.nan] * 9)


def test_backend_is_idle_until_the_first_action(robot):
    steps = robot.sim.world.step_count
    time.sleep(0.2)
    assert robot.sim.world.step_count == steps and robot.frontend.get_current_timeindex() == -1
    t = robot.frontend.append_desired_action(Action())
    assert t == 0
    robot.frontend.wait_until_timeindex(5)
    assert robot.frontend.get_current_timeindex() >= 5


def test_append_returns_the_index_the_action_will_be_applied_at(robot):
    f = robot.frontend
    first = f.append_desired_action(Action())
    queued = [f.append_desired_action(Action.make(torque=[0.1 * k] + [0] * 8)) for k in range(1, 4)]
    assert queued == sorted(queued) and np.all(np.diff(queued) == 1) and queued[0] > first
    for k, t in enumerate(queued, start=1):
        assert f.get_desired_action(t).torque[0] == pytest.approx(0.1 * k)


def test_observation_of_t_is_taken_before_action_t_acts(robot):
    f = robot.frontend
    f.append_desired_action(Action())
    kick = f.append_desired_action(Action.make(torque=[80.0] + [0] * 8))
    earlier, before, after = (f.get_robot_observation(kick + k) for k in (-1, 0, 1))
    assert abs(before.velocity[0] - earlier.velocity[0]) < 0.01  # not yet affected by the kick
    assert after.velocity[0] - before.velocity[0] > 0.1  # affected one step later


def test_missing_actions_repeat_the_last_one_and_are_counted(robot):
    f = robot.frontend
    t = f.append_desired_action(Action.make(torque=[1.0] + [0] * 8))
    f.wait_until_timeindex(t + 10)
    for k in range(1, 11):
        assert f.get_desired_action(t + k).torque[0] == 1.0
        assert f.get_robot_status(t + k).action_repetitions == k
    fresh = f.append_desired_action(Action())
    assert f.get_robot_status(fresh).action_repetitions == 0


def test_resulting_command_is_torque_plus_pd_with_defaults_for_nan_gains(robot):
    f = robot.frontend
    f.append_desired_action(Action())
    target = robot.sim.arm.home + 0.05
    kp = np.full(9, np.nan)
    kp[0] = 123.0
    t = f.append_desired_action(Action.make(torque=[0.5] * 9, position=target, position_kp=kp))
    applied, observation = f.get_applied_action(t), f.get_robot_observation(t)
    expected_kp = np.where(np.isnan(kp), DEFAULT_KP, kp)
    assert np.array_equal(applied.position_kp, expected_kp) and np.array_equal(applied.position_kd, DEFAULT_KD)
    expected = (0.5 + expected_kp * (target - observation.position) - DEFAULT_KD * observation.velocity
                - SAFETY_KD * observation.velocity)
    limit = robot.sim.arm.limits.effort.copy()
    limit[7:] = robot.sim.arm.config.finger_force
    expected = np.clip(expected, -limit, limit)
    gravity = robot.sim.arm.gravity_torques(observation.position)  # the limits bound the sum with it
    assert applied.torque == pytest.approx(np.clip(expected + gravity, -limit, limit) - gravity, abs=1e-9)


def test_nan_position_switches_the_pd_off_for_that_joint(robot):
    f = robot.frontend
    f.append_desired_action(Action())
    position = robot.sim.arm.home + 0.3
    position[2] = np.nan
    t = f.append_desired_action(Action(position=position))
    applied, observation = f.get_applied_action(t), f.get_robot_observation(t)
    assert applied.torque[2] == pytest.approx(-SAFETY_KD[2] * observation.velocity[2], abs=1e-12)


def test_safety_checks_limit_torque_and_damp_velocity(robot):
    f = robot.frontend
    t = f.append_desired_action(Action.make(torque=[1000.0, -1000.0, 0, 0, 0, 0, 500.0, 0, 0]))
    applied = f.get_applied_action(t)
    gravity = robot.sim.arm.gravity_torques(f.get_robot_observation(t).position)  # compensation counts too
    assert applied.torque[0] == pytest.approx(87.0 - gravity[0]) and applied.torque[1] == pytest.approx(-87.0 - gravity[1])
    assert applied.torque[6] == pytest.approx(12.0)
    assert f.get_desired_action(t).torque[0] == 1000.0  # the desired one is kept as asked
    f.wait_until_timeindex(t + 30)
    moving = f.get_robot_observation(t + 30)
    assert np.abs(moving.velocity).max() > 0.1
    damped = f.get_applied_action(t + 30).torque[3]  # joint 4 had zero desired torque: only damping
    assert damped == pytest.approx(-SAFETY_KD[3] * moving.velocity[3], abs=1e-9)


def test_position_limits_stop_torque_pushing_further_out(robot):
    arm, c = robot.sim.arm, robot.sim.world.client
    robot.loop.run(lambda: c.resetJointState(arm.body, arm.joints[3], arm.limits.upper[3] + 0.001))  # joint 4 at 0
    t = robot.frontend.append_desired_action(Action.make(torque=[0, 0, 0, 50.0, 0, 0, 0, 0, 0]))
    assert robot.frontend.get_applied_action(t).torque[3] <= 0.0


def test_only_the_last_thousand_steps_are_kept_and_the_future_blocks():
    with Robot(realtime_factor=0.0) as robot:
        f = robot.frontend
        f.append_desired_action(Action())
        f.wait_until_timeindex(BUFFER + 50)
        with pytest.raises(TimeIndexError, match="no longer kept.*last 1000"):
            f.get_robot_observation(10)
        ahead = f.get_current_timeindex() + 200
        f.wait_until_timeindex(ahead)  # blocks until it exists
        assert f.get_current_timeindex() >= ahead
        with pytest.raises(TimeIndexError, match="does not exist"):
            f.get_robot_observation(-1)


def test_timestamps_start_at_zero_and_follow_the_physics_step(robot):
    f = robot.frontend
    t = f.append_desired_action(Action())
    f.wait_until_timeindex(t + 10)
    assert f.get_timestamp_ms(0) == 0.0
    assert f.get_timestamp_ms(10) == pytest.approx(10 * robot.sim.world.timestep * 1000)


def test_after_an_error_appending_raises():
    with Robot(realtime_factor=0.5, max_action_repetitions=5) as robot:
        f = robot.frontend
        t = f.append_desired_action(Action())
        f.wait_until_timeindex(t + 10)
        status = f.get_robot_status(t + 10)
        assert status.error_status == BACKEND_ERROR and "no new action" in status.error_message
        assert f.get_robot_status(t + 3).error_status == NO_ERROR
        with pytest.raises(RuntimeError, match="in error"):
            f.append_desired_action(Action())


def test_over_ros_the_same_api_gives_the_same_answers(ros_context):
    from helpers import parameters
    from binpick_sim.nodes.clients.robot_client import RosRobotFrontend
    from binpick_sim.nodes.process.stack import SimStack

    world = parameters(robot_interface=True, realtime_factor=0.5, camera=False)
    with SimStack(ros_context, {"world": world}) as stack, RosRobotFrontend(context=ros_context) as f:
        assert f.get_current_timeindex() == -1
        t = f.append_desired_action(Action())
        hold = f.get_robot_observation(t).position
        t = f.append_desired_action(Action.make(torque=[1000.0] + [0] * 8, position=[np.nan] + list(hold[1:])))
        assert f.get_applied_action(t).torque[0] == pytest.approx(87.0)
        assert f.get_desired_action(t).torque[0] == 1000.0
        f.wait_until_timeindex(t + 5)
        assert f.get_robot_status(t + 5).action_repetitions == 5
        assert f.get_timestamp_ms(t + 5) - f.get_timestamp_ms(t) == pytest.approx(5.0)  # 1 kHz
        local = next(n for n in stack.nodes if n.get_name() == "robot").backend
        assert np.array_equal(f.get_robot_observation(t + 5).position, local.observations.get(t + 5).position)
        with pytest.raises(ValueError, match="rejected"):
            f.append_desired_action(Action(torque=np.full(9, np.inf)))  # garbage gets a clear refusal


def test_garbage_on_the_action_topic_is_refused_and_counted(ros_context):
    from std_msgs.msg import Float64MultiArray, Int64MultiArray

    from helpers import parameters
    from binpick_sim.nodes.clients.client import SimClient
    from binpick_sim.nodes.process.stack import SimStack

    world = parameters(robot_interface=True, realtime_factor=0.0, camera=False)
    with SimStack(ros_context, {"world": world}) as stack:
        client = SimClient("junk", context=ros_context, topics={"robot/accepted": Int64MultiArray})
        publisher = client.node.create_publisher(Float64MultiArray, "robot/desired_actions", 10)
        client.spin_until(lambda: publisher.get_subscription_count() > 0, 20, "robot node")
        steps = stack.loop.run(lambda: stack.sim.world.step_count)
        for junk in ([], [1.0], [2.0] + [0.0] * 35, [3.0] + [np.nan] * 36, [4.0] + [np.inf] + [0.0] * 35):
            publisher.publish(Float64MultiArray(data=junk))
            client.spin_until(lambda: "robot/accepted" in client.latest, 10, "an answer")
            client.spin_until(lambda: client.latest["robot/accepted"].data[1] == -1, 10, "a refusal")
            del client.latest["robot/accepted"]
        assert stack.loop.run(lambda: stack.sim.world.step_count) == steps  # still idle: nothing was taken
        assert next(n for n in stack.nodes if n.get_name() == "robot").backend.current() == -1  # never started
        client.close()


def test_while_the_robot_interface_drives_the_arm_other_commands_are_refused(ros_context):
    from helpers import parameters
    from binpick_sim.nodes.clients.client import SimClient
    from binpick_sim.nodes.clients.robot_client import RosRobotFrontend
    from binpick_sim.nodes.process.stack import SimStack

    world = parameters(robot_interface=True, realtime_factor=0.5, camera=False)
    with SimStack(ros_context, {"world": world}) as stack, RosRobotFrontend(context=ros_context) as f:
        arm = next(n for n in stack.nodes if n.get_name() == "arm")
        backend = next(n for n in stack.nodes if n.get_name() == "robot").backend
        t = f.append_desired_action(Action.make(position=stack.sim.arm.home))
        client = SimClient("intruder", context=ros_context, topics={})
        client.spin_until(lambda: client.publishers["position"].get_subscription_count() > 0, 20, "the arm node")
        answer = client.call("arm/home")
        assert not answer.success and "robot interface" in answer.message
        client.send("position", [0.0] * 9)
        client.spin_until(lambda: arm.diagnostics.rejected["arm/position_commands"] == 1, 20, "the refusal")
        f.wait_until_timeindex(f.get_current_timeindex() + 100)  # the backend still steps ...
        assert stack.loop.run(lambda: stack.sim.arm.controller) == backend.step  # ... and still owns the arm
        assert np.abs(f.get_robot_observation(f.get_current_timeindex()).position[:7]
                      - stack.sim.arm.home[:7]).max() < 0.02
        client.close()


@pytest.mark.parametrize("compensated", [True, False])
def test_gravity_is_compensated_below_the_interface_as_on_the_panda(compensated):
    with Robot(realtime_factor=0.5, gravity_compensation=compensated) as robot:
        f = robot.frontend
        t = f.append_desired_action(Action())  # zero torque, PD off
        f.wait_until_timeindex(t + 300)
        start, later = f.get_robot_observation(t).position, f.get_robot_observation(t + 300).position
        damping = -SAFETY_KD[:7] * f.get_robot_observation(t + 300).velocity[:7]
        assert f.get_applied_action(t + 300).torque[:7] == pytest.approx(damping, abs=1e-6)  # gravity is not in it
        drift = np.abs(later[:7] - start[:7]).max()
        assert drift < 0.01 if compensated else drift > 0.05  # floats in place, or falls


# --- the latched error and the torque really applied (issue 13, items 8-10) -----------------------
def test_the_robot_interface_error_is_latched_even_against_an_append_racing_the_step(sim, robot_backend):
    """An append that lands while a step decides the error (between its lock and the error) must not
    be applied, nor bring the status back to "no error"."""
    from binpick_sim.control.robot_interface import BACKEND_ERROR, Action

    robot_backend.append(Action())
    sim.world.step(2)  # t 0: the action; t 1: repeated once (allowed)
    raced = []
    checks = robot_backend.safety_checks

    def racing(action, observation):
        try:
            raced.append(robot_backend.append(Action.make(torque=[5.0] + [0.0] * 8)))
        except RuntimeError:
            raced.append(None)
        robot_backend.safety_checks = checks
        return checks(action, observation)
    robot_backend.safety_checks = racing
    sim.world.step(5)
    statuses = [robot_backend.status.get(t) for t in range(2, 7)]
    assert all(s.error_status == BACKEND_ERROR for s in statuses), statuses
    assert all(np.all(robot_backend.applied.get(t).torque == 0) for t in range(2, 7))
    with pytest.raises(RuntimeError, match="in error"):
        robot_backend.append(Action())


def test_the_robot_interface_observes_and_reports_the_torque_really_applied(sim, robot_backend):
    """Applied = what acts on top of gravity compensation: with the sum clipped to the effort limits,
    the applied torque is the clipped sum less the compensation, and the next observation sees the sum."""
    from binpick_sim.control.robot_interface import Action

    limits = robot_backend.torque_limits
    t = None
    for sign in (1.0, -1.0):
        t = robot_backend.append(Action.make(torque=sign * limits))
        sim.world.step(2)
        observed = robot_backend.observations.get(t).position
        gravity = sim.arm.gravity_torques(observed)
        applied = robot_backend.applied.get(t).torque
        sent = robot_backend.observations.get(t + 1).torque  # effort during step t
        assert np.all(np.abs(sent) <= limits + 1e-9)
        assert applied == pytest.approx(sent - gravity, abs=1e-6)
        pushed_with_gravity = np.sign(gravity[3]) == sign  # joint 4 (19 N m of compensation at home)
        assert (abs(applied[3]) < limits[3] - 10.0) == pushed_with_gravity
    assert robot_backend.observations.get(t + 1).torque[1] < 0 < robot_backend.observations.get(t - 1).torque[1]


# --- seed 003's get_camera_observation(t), in-process and over ROS (issue 28, item 6) --------------------
@pytest.mark.slow
def test_camera_observation_of_t_is_the_first_frame_at_or_after_t_blocking_and_refusing_the_too_old():
    import dataclasses

    from binpick_sim.control.robot_interface import Action, Robot
    from binpick_sim.control.time_series import TimeIndexError

    config = load_config(default_config())
    config = dataclasses.replace(config, camera=dataclasses.replace(config.camera, width=64, height=48))
    with Robot() as plain:
        with pytest.raises(RuntimeError, match="camera_rate"):
            plain.frontend.get_camera_observation(0)
    with pytest.raises(ValueError, match="camera_rate"):
        Robot(camera_rate=-1.0)
    with Robot(config, realtime_factor=0.5, camera_rate=50.0) as robot:  # 2 s of wall time per buffer
        front = robot.frontend
        t = front.append_desired_action(Action())
        first = front.get_camera_observation(t)  # blocks until the worker has drawn one
        assert first.t >= t and first.rgb.shape == (48, 64, 3) and first.depth.shape == (48, 64)
        assert np.isfinite(first.depth).any() and first.k.shape == (3, 3)
        later = front.get_current_timeindex() + 500  # the future: blocks until the robot is there and a frame drawn
        frame = front.get_camera_observation(later)
        assert frame.t >= later and front.get_current_timeindex() >= frame.t
        assert frame.timestamp_ms == pytest.approx(front.get_timestamp_ms(frame.t))
        series = robot.backend.camera_series
        assert not [f for f in series.frames if later <= f.t < frame.t]  # the first at or after, none skipped
        assert front.get_camera_observation(frame.t) is frame
        front.wait_until_timeindex(frame.t + 1100)  # the robot's buffer (1000) has moved past index `later`
        with pytest.raises(TimeIndexError, match="no longer kept"):
            front.get_camera_observation(later)
        with pytest.raises(TimeIndexError, match="does not exist"):
            front.get_camera_observation(-1)


@pytest.mark.serial
@pytest.mark.slow
def test_over_ros_the_frontend_gives_the_same_camera_observations(ros_context, tmp_path):
    import yaml

    from helpers import parameters
    from binpick_sim.control.robot_interface import Action
    from binpick_sim.control.time_series import TimeIndexError
    from binpick_sim.nodes.clients.robot_client import RosRobotFrontend
    from binpick_sim.nodes.process.stack import SimStack

    data = yaml.safe_load(default_config().read_text())
    data["camera"].update(width=64, height=48)
    scene = tmp_path / "scene.yaml"
    scene.write_text(yaml.safe_dump(data))
    # a quarter of real time: a test thread the loaded machine holds up for 5 s still finds its index kept
    world = parameters(robot_interface=True, realtime_factor=0.25, camera=False, config=str(scene))
    with SimStack(ros_context, {"world": world, "robot": parameters(camera_rate=20.0)}) as stack, \
            RosRobotFrontend(context=ros_context) as front:
        robot = next(n for n in stack.nodes if n.get_name() == "robot").backend
        # every frame the robot node records (its own buffer keeps 30), kept before the node publishes it: a
        # callback after the node's let this thread receive a frame before it was kept (KeyError, a rehearsal)
        recorded = {}
        stack.loop.run(lambda: robot.camera_series.on_frame.insert(0, lambda f: recorded.__setitem__(f.t, f)))
        t = front.append_desired_action(Action())
        later = robot.current() + 500  # the robot's own newest index (the frontend's trails it by a burst)
        frame = front.get_camera_observation(later)
        assert frame.t >= later and frame.rgb.shape == (48, 64, 3) and frame.depth.shape == (48, 64)
        assert not [i for i in list(recorded) if later <= i < frame.t]  # the first recorded at or after `later`
        local = recorded[frame.t]
        assert np.array_equal(local.rgb, frame.rgb) and np.array_equal(local.depth, frame.depth)
        assert frame.timestamp_ms == pytest.approx(local.timestamp_ms) and np.allclose(frame.k, local.k)
        assert frame.stamp == pytest.approx(local.stamp, abs=1e-9)
        with pytest.raises(TimeIndexError):
            front.get_camera_observation(-1)
        assert t >= 0
    with SimStack(ros_context, {"world": world}), RosRobotFrontend(context=ros_context) as front:
        front.append_desired_action(Action())
        with pytest.raises(RuntimeError, match="camera_rate"):
            front.get_camera_observation(0)
