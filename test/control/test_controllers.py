"""The controller family of seed 001 on the real arm: targets reached, gravity held, limits clipped,
gains variable, scaling and interpolation as the seed describes them."""
import numpy as np
import pytest

from binpick_sim.config import load_config
from binpick_sim.paths import default_config
from binpick_sim.control.controllers import (InverseKinematicsController, JointPositionController, JointTorqueController,
                                     JointVelocityController, OperationalSpaceController, make_controller)


def run(sim, seconds):
    sim.world.step(round(seconds / sim.world.timestep))


def engaged(sim, controller):
    controller.engage()
    return controller


def test_joint_position_reaches_a_step_target(sim):
    """Tolerance: 0.005 rad within 1 s (kp 50, critically damped)."""
    c = engaged(sim, JointPositionController(sim.arm))
    start = c.state.q.copy()
    c.set_goal([1, -1, 0.5, 0, 0, 0, -0.4])  # scaled to +-0.05 rad
    run(sim, 1.0)
    assert np.abs(sim.arm.joint_states()[0][:7] - (start + [0.05, -0.05, 0.025, 0, 0, 0, -0.02])).max() < 0.005


def test_variable_impedance_actions_set_the_gains(sim):
    c = engaged(sim, JointPositionController(sim.arm, impedance_mode="variable"))
    assert c.control_dim == 21
    c.set_goal([0.5] * 7 + [1000.0] * 7 + [0] * 7)
    assert np.all(c.damping_ratio == 0.5) and np.all(c.kp == 300.0)  # kp clipped to its limit
    low, high = c.control_limits
    assert low.shape == high.shape == (21,) and high[7] == 300.0
    kp_only = engaged(sim, JointPositionController(sim.arm, impedance_mode="variable_kp"))
    kp_only.set_goal([80.0] * 7 + [0] * 7)
    assert np.all(kp_only.kp == 80.0) and np.all(kp_only.damping_ratio == 1.0)
    with pytest.raises(ValueError, match="impedance_mode"):
        JointPositionController(sim.arm, impedance_mode="stiff")


def test_gains_change_the_response(sim):
    """A stiffer joint gets closer to the goal in the same short time."""
    errors = []
    for kp in (10.0, 200.0):
        sim.arm.reset()
        c = engaged(sim, JointPositionController(sim.arm, impedance_mode="variable_kp"))
        start = c.state.q[0]
        c.set_goal([kp] * 7 + [1, 0, 0, 0, 0, 0, 0])
        run(sim, 0.15)
        errors.append(abs(sim.arm.joint_states()[0][0] - (start + 0.05)))
    assert errors[1] < errors[0] / 2


def test_joint_position_goals_respect_qpos_limits(sim):
    q0 = sim.arm.joint_states()[0][0]
    c = engaged(sim, JointPositionController(sim.arm, qpos_limits=[[-9] * 7, [q0 + 0.01] + [9] * 6]))
    c.set_goal([1, 0, 0, 0, 0, 0, 0])
    assert c.goal[0] == pytest.approx(q0 + 0.01, abs=1e-6)


def test_joint_velocity_tracks_and_clips(sim):
    c = engaged(sim, JointVelocityController(sim.arm, velocity_limits=[[-0.3] * 7, [0.3] * 7]))
    c.set_goal([0.5, 0, 0, 0, 0, 0, 0])  # 0.5 rad/s asked, 0.3 allowed
    assert c.goal[0] == pytest.approx(0.3)
    run(sim, 0.5)
    assert sim.arm.joint_states()[1][0] == pytest.approx(0.3, abs=0.015)


def test_gravity_compensation_alone_holds_a_pose(sim):
    c = engaged(sim, JointTorqueController(sim.arm))
    before = sim.arm.joint_states()[0][:7]
    c.set_goal(np.zeros(7))
    run(sim, 1.0)
    assert np.abs(sim.arm.joint_states()[0][:7] - before).max() < 1e-3
    assert np.abs(c.torques).max() > 1.0  # holding the arm up is real work


def test_torques_are_scaled_and_clipped_to_the_actuator_limits(sim):
    """The seed's default output range is +-0.05 N m (issue 28 item 2); the effort limits given as the
    output range span the arm's whole torque."""
    seed_default = JointTorqueController(sim.arm)
    seed_default.set_goal([1, -1, 0, 0, 0, 0, 0.5])
    assert seed_default.goal == pytest.approx([0.05, -0.05, 0, 0, 0, 0, 0.025])
    effort = sim.arm.limits.effort[:7]
    c = engaged(sim, JointTorqueController(sim.arm, output_max=effort, output_min=-effort))
    c.set_goal([1, -1, 0, 0, 0, 0, 0.5])
    assert c.goal[:2] == pytest.approx([87.0, -87.0]) and c.goal[6] == pytest.approx(6.0)
    assert np.array_equal(c.clip_torques([500, -500, 0, 0, 50, 0, 0]), [87, -87, 0, 0, 12, 0, 0])


def test_scale_action_maps_input_onto_output_range(sim):
    c = JointPositionController(sim.arm, input_max=2, input_min=0, output_max=0.1, output_min=-0.1)
    assert c.scale_action([0, 1, 2, 3, -1, 1.5, 0.5]) == pytest.approx([-0.1, 0, 0.1, 0.1, -0.1, 0.05, -0.05])


def test_linear_interpolation_spreads_a_goal_over_one_policy_step(sim):
    c = engaged(sim, JointPositionController(sim.arm, policy_freq=24, interpolation="linear"))
    assert c.interpolation_steps == 10  # 240 Hz physics / 24 Hz policy
    start = c.interpolator.value.copy()
    c.set_goal([1, 0, 0, 0, 0, 0, 0])
    sim.world.step(1)
    assert c.interpolator.value[0] - start[0] == pytest.approx(0.005, abs=1e-4)  # 0.05 rad / 10 steps
    sim.world.step(9)
    assert c.interpolator.value[0] == pytest.approx(c.goal[0])


def move_into_the_open(sim):
    """Start with the gripper well clear of the bins and the arm's limits."""
    sim.arm.move_to(sim.arm.ik(sim.scene.pick_bin.to_world([0, 0, 0.25]), sim.arm.ee_yaw()))


@pytest.mark.parametrize("uncouple, seconds", [(False, 1.0), (True, 3.0)])
def test_osc_reaches_a_position_step(sim, uncouple, seconds):
    """Tolerance: 3 mm within 1 s (coupled inertia, the default) or 3 s (uncoupled, robosuite's
    default, slower here); orientation kept within 0.02 rad."""
    move_into_the_open(sim)
    c = engaged(sim, OperationalSpaceController(sim.arm, uncouple_pos_ori=uncouple))
    start, rotation = c.state.ee_position.copy(), c.state.ee_rotation.copy()
    c.set_goal([1, -0.6, -1, 0, 0, 0])
    run(sim, seconds)
    assert np.linalg.norm(sim.arm.ee_pose()[0] - (start + [0.05, -0.03, -0.05])) < 0.003
    from binpick_sim.control.controllers.cartesian import orientation_error
    assert np.linalg.norm(orientation_error(rotation, c.read_state().ee_rotation)) < 0.02


def test_osc_absolute_goals_and_position_only(sim):
    move_into_the_open(sim)
    c = engaged(sim, OperationalSpaceController(sim.arm, control_ori=False, control_delta=False,
                                                position_limits=[[0.3, -0.5, 0.1], [0.7, 0.5, 0.5]]))
    assert c.control_dim == 3
    target = c.state.ee_position + [-0.04, 0.03, 0.02]
    c.set_goal(target)
    run(sim, 1.5)
    assert np.linalg.norm(sim.arm.ee_pose()[0] - target) < 0.003
    c.set_goal([0.0, 0.0, 0.0])  # outside the limits: clipped
    assert c.goal_position == pytest.approx([0.3, 0.0, 0.1])


def test_ik_reaches_a_delta_and_clips_it(sim):
    move_into_the_open(sim)
    c = engaged(sim, InverseKinematicsController(sim.arm, ik_pos_limit=0.04))
    start = c.state.ee_position.copy()
    c.set_goal([0, 0, -0.1, 0, 0, 0])  # 10 cm asked, 4 cm allowed
    run(sim, 1.0)
    assert np.linalg.norm(sim.arm.ee_pose()[0] - (start + [0, 0, -0.04])) < 0.003
    low, high = c.control_limits
    assert high == pytest.approx([0.04] * 3 + [0.5] * 3)


def test_another_command_takes_over_and_the_motors_come_back(sim):
    c = engaged(sim, JointTorqueController(sim.arm))
    c.set_goal(np.zeros(7))
    run(sim, 0.2)
    sim.arm.set_controller(None)  # what the arm node's take_over() does first
    target = sim.arm.home + [0.3, 0, 0, 0, 0, 0, 0, 0, 0]
    sim.arm.move_to(target)
    assert np.abs(sim.arm.joint_states()[0][:7] - target[:7]).max() < 0.005
    sim.arm.reset()
    sim.world.step(60)
    assert np.abs(sim.arm.joint_states()[0] - sim.arm.home).max() < 0.005


def test_unknown_controllers_and_options_are_named(sim):
    with pytest.raises(ValueError, match="unknown controller 'pid'"):
        make_controller(sim.arm, "pid")
    with pytest.raises(ValueError, match="controller.options: osc: .*'kpp'"):
        make_controller(sim.arm, "osc", {"kpp": 1})
    with pytest.raises(ValueError, match="takes 7 values"):
        JointVelocityController(sim.arm).set_goal([0.1])


def at_rest(client):
    client.spin_until(lambda: np.abs(client.latest["joint_states"].velocity).max() < 1e-3, 30, "the arm at rest")


def test_the_arm_node_serves_the_selected_controller_and_refuses_garbage(ros_context):
    """Over ROS: arm/controller_commands drives OSC; garbage changes nothing; a fixed-topic command takes
    the arm back and the next controller action engages the controller again."""
    from std_msgs.msg import Float64MultiArray

    from helpers import STATE_TOPICS, parameters
    from binpick_sim.nodes.clients.client import TOPICS, SimClient
    from binpick_sim.nodes.process.stack import SimStack

    world, arm = parameters(realtime_factor=0.0, camera=False), parameters(controller="osc")
    with SimStack(ros_context, {"world": world, "arm": arm}) as stack:
        client = SimClient("controls_engineer", context=ros_context, topics={t: TOPICS[t] for t in STATE_TOPICS})
        actions = client.node.create_publisher(Float64MultiArray, "arm/controller_commands", 10)
        client.spin_until(lambda: actions.get_subscription_count() > 0, 20, "the arm node")
        client.wait_for_topics(STATE_TOPICS, timeout=30)
        node = next(n for n in stack.nodes if n.get_name() == "arm")
        start = client.ee_pose()[0]
        actions.publish(Float64MultiArray(data=[1.0, 0, -0.6, 0, 0, 0]))  # scaled: +5 cm x, -3 cm z
        goal = start + [0.05, 0, -0.03]
        client.spin_until(lambda: np.linalg.norm(client.ee_pose()[0] - goal) < 0.003, 30, "the OSC goal")
        assert stack.loop.run(lambda: stack.sim.arm.controller) == node.torque_controller.step
        at_rest(client)

        before = stack.loop.run(lambda: (stack.sim.arm.joint_states()[0], node.torque_controller.goal_position.copy()))
        for junk in ([], [0.1] * 5, [0.1] * 7, [np.nan] * 6, [np.inf] + [0.0] * 5):
            actions.publish(Float64MultiArray(data=junk))
        client.spin_until(lambda: node.diagnostics.rejected["arm/controller_commands"] == 5, 20, "five refusals")
        after = stack.loop.run(lambda: (stack.sim.arm.joint_states()[0], node.torque_controller.goal_position.copy()))
        assert np.abs(after[0] - before[0]).max() < 1e-3 and np.array_equal(after[1], before[1])

        client.send("position", stack.sim.arm.home)  # a fixed topic takes the arm back ...
        client.spin_until(lambda: np.abs(client.joint_positions() - stack.sim.arm.home).max() < 0.01, 30, "home")
        assert stack.loop.run(lambda: stack.sim.arm.controller) is None
        at_rest(client)
        # from the world itself: the newest arm/ee_pose may predate the last joint_states (wall-rate capped)
        home = stack.loop.run(lambda: stack.sim.arm.ee_pose()[0])
        actions.publish(Float64MultiArray(data=[0, 1.0, 0, 0, 0, 0]))  # ... and the controller again
        client.spin_until(lambda: np.linalg.norm(client.ee_pose()[0] - (home + [0, 0.05, 0])) < 0.003, 30,
                          "the OSC goal from home")
        client.close()


# --- effort readings, OSC, torque limits and NaN goals (issue 13, items 9, 14) ---------------------
def test_joint_effort_reports_the_torque_a_controller_applies(sim):
    from binpick_sim.control.controllers import JointTorqueController

    effort = sim.arm.limits.effort[:7]
    c = JointTorqueController(sim.arm, output_max=effort, output_min=-effort)  # the arm's whole range
    c.engage()
    efforts = []
    for goal in ([0.0] * 7, [0.5, -0.5, 0.2, 0, 0, 0, 0.3]):
        c.set_goal(goal)
        sim.world.step(1)
        effort = sim.arm.joint_states()[2][:7]
        assert effort == pytest.approx(c.torques, abs=1e-9)  # what was sent during that step
        efforts.append(effort)
    assert abs(efforts[1][0] - efforts[0][0]) > 10.0  # 0.5 of joint 1's 87 N m moved it


def test_osc_nullspace_pulls_toward_the_posture_at_engagement(sim):
    from binpick_sim.control.controllers import OperationalSpaceController

    arm = sim.arm
    c = OperationalSpaceController(arm)  # made at home
    arm.move_to(arm.home + [0.4, 0, 0, 0, 0.3, 0, 0, 0, 0])  # another posture before engaging
    engaged_at = arm.joint_states()[0][:7]
    c.engage()
    assert c.initial_joints == pytest.approx(engaged_at)
    c.set_goal(np.zeros(6))
    sim.world.step(round(1.0 / sim.world.timestep))
    assert np.abs(arm.joint_states()[0][:7] - engaged_at).max() < 0.02  # not pulled back toward home


@pytest.mark.parametrize("mode, control_ori, size", [("fixed", True, 6), ("variable", True, 18),
                                                     ("variable_kp", True, 12), ("variable", False, 15),
                                                     ("variable_kp", False, 9)])
def test_osc_control_limits_have_one_pair_per_action_value(sim, mode, control_ori, size):
    from binpick_sim.control.controllers import OperationalSpaceController

    c = OperationalSpaceController(sim.arm, impedance_mode=mode, control_ori=control_ori, kp_limits=(1.0, 250.0))
    low, high = c.control_limits
    assert c.control_dim == size and low.shape == high.shape == (size,)
    if mode == "variable":
        assert high[:6] == pytest.approx([100.0] * 6) and high[6:12] == pytest.approx([250.0] * 6)
    if mode == "variable_kp":
        assert low[:6] == pytest.approx([1.0] * 6) and high[:6] == pytest.approx([250.0] * 6)
    assert high[-c.pose_dim:] == pytest.approx([1.0] * c.pose_dim)


def test_osc_interpolates_the_orientation_too(sim):
    from scipy.spatial.transform import Rotation

    from binpick_sim.control.controllers import OperationalSpaceController

    c = OperationalSpaceController(sim.arm, interpolation="linear", policy_freq=50.0)  # 20 steps per goal
    c.engage()
    start = Rotation.from_matrix(c.state.ee_rotation)
    c.set_goal([0, 0, 0, 0, 0, 1.0])  # 0.5 rad about z
    sim.world.step(5)
    partway = Rotation.from_matrix(c.orientation_interpolator.value) * start.inv()
    assert partway.as_rotvec() == pytest.approx([0, 0, 0.5 * 5 / c.interpolation_steps], abs=1e-6)
    sim.world.step(round(1.5 / sim.world.timestep))
    reached = Rotation.from_matrix(c.state.ee_rotation) * start.inv()
    assert reached.as_rotvec() == pytest.approx([0, 0, 0.5], abs=0.03)


def test_joint_torque_controller_clips_goals_to_its_torque_limits(sim):
    from binpick_sim.control.controllers import JointTorqueController, make_controller

    effort = sim.arm.limits.effort[:7]
    c = JointTorqueController(sim.arm, torque_limits=[[-5.0] * 7, [5.0] * 7], output_max=effort, output_min=-effort)
    c.set_goal([1.0, -1.0, 0.01, 0, 0, 0, 0])
    assert c.goal == pytest.approx([5.0, -5.0, 0.87, 0, 0, 0, 0]) and c.clipped
    scalar = make_controller(sim.arm, "joint_torque", {"torque_limits": [-2.0, 3.0], "output_max": 87.0,
                                                       "output_min": -87.0})
    scalar.set_goal([1.0] * 7)
    assert scalar.goal == pytest.approx([3.0] * 7)
    with pytest.raises(ValueError, match="torque_limits"):
        JointTorqueController(sim.arm, torque_limits=[[5.0] * 7, [-5.0] * 7])


@pytest.mark.parametrize("kind", ["joint_position", "joint_velocity", "joint_torque", "osc", "ik"])
def test_set_goal_refuses_nan_and_keeps_the_goal(sim, kind):
    from binpick_sim.control.controllers import make_controller

    c = make_controller(sim.arm, kind)
    c.engage()
    before = {k: np.copy(v) for k, v in vars(c).items() if k.startswith("goal")}
    for bad in (np.nan, np.inf):
        action = np.zeros(c.control_dim)
        action[0] = bad
        with pytest.raises(ValueError, match="finite"):
            c.set_goal(action)
    after = {k: np.copy(v) for k, v in vars(c).items() if k.startswith("goal")}
    assert before.keys() == after.keys() and all(np.array_equal(before[k], after[k]) for k in before)


# --- the joint velocity laws: seed 001's, and the default at 240 Hz (issue 28, item 2) ----------------
def sim_at(rate):
    import dataclasses

    from binpick_sim.cell.bin_picking_sim import BinPickingSim

    config = load_config(default_config())
    sim = BinPickingSim(dataclasses.replace(config, simulation=dataclasses.replace(config.simulation,
                                                                                    timestep=1.0 / rate)))
    sim.reset(seed=0)
    return sim


def velocities_after(sim, controller, goal, seconds):
    controller.engage()
    controller.set_goal(goal)
    sim.world.step(round(seconds / sim.world.timestep))
    return sim.arm.joint_states()[1][:7]


GOAL = [0.3, 0, 0, 0, 0, 0.3, 0]


@pytest.mark.slow
def test_the_seeds_joint_velocity_law_is_there_and_tracks_at_1khz(sim):
    """Seed 001 / robosuite: kp 0.25 by default, a single kp scaled by each joint's actuator range, PID
    with ki 0.005 kp and kd 0.001 kp (law: robosuite); at 1 kHz physics it tracks."""
    from binpick_sim.control.controllers import JointVelocityController, make_controller

    seed = JointVelocityController(sim.arm, law="robosuite")
    effort = sim.arm.limits.effort[:7]
    assert seed.kp == pytest.approx(0.25 * 2 * effort) and seed.ki == pytest.approx(0.005 * seed.kp)
    assert seed.kd == pytest.approx(0.001 * seed.kp)
    assert JointVelocityController(sim.arm, law="robosuite", kp=[2.0] * 7).kp == pytest.approx([2.0] * 7)  # as given
    with pytest.raises(ValueError, match="law must be one of"):
        make_controller(sim.arm, "joint_velocity", {"law": "pid"})
    from binpick_sim.config import ConfigError, config_from_dict, config_to_dict

    data = config_to_dict(load_config(default_config()))
    data["controller"] = {"type": "joint_velocity", "options": {"kp": "high"}}
    with pytest.raises(ConfigError, match="options.kp"):  # still refused at load, whatever the law's default
        config_from_dict(data)
    fast = sim_at(1000)
    try:
        reached = velocities_after(fast, JointVelocityController(fast.arm, law="robosuite"), GOAL, 1.0)
        assert reached == pytest.approx(GOAL, abs=0.01)
    finally:
        fast.close()


def test_at_240_hz_the_seeds_velocity_law_shakes_the_wrist_and_the_default_tracks(sim):
    """Why the default law is not the seed's (README, choices): at this cell's 240 Hz physics the seed's
    gains overshoot on the light wrist joints, whereas the mass-weighted law (kp 30) tracks."""
    from binpick_sim.control.controllers import JointVelocityController

    default = JointVelocityController(sim.arm)
    assert default.law == "mass_weighted" and default.kp == pytest.approx([30.0] * 7)
    assert velocities_after(sim, default, GOAL, 1.0) == pytest.approx(GOAL, abs=0.015)
    sim.arm.reset()
    shaken = velocities_after(sim, JointVelocityController(sim.arm, law="robosuite"), GOAL, 1.0)
    assert np.abs(np.asarray(shaken) - GOAL).max() > 0.5, shaken


# --- the seed 001 controller surface (issue 28, item 7) -------------------------------------------------
def test_update_reads_the_arm_once_per_step_unless_forced_and_actuator_limits_are_the_efforts(sim):
    from binpick_sim.control.controllers import JointTorqueController, make_controller

    c = JointTorqueController(sim.arm)
    low, high = c.actuator_limits
    assert high == pytest.approx(sim.arm.limits.effort[:7]) and low == pytest.approx(-high)
    assert c.nums2array(0.5, 3) == pytest.approx([0.5] * 3)
    c.engage()
    c.set_goal([0.0] * 7)
    sim.world.step(1)
    assert c.new_update  # the world stepped: the next update() reads again
    c.update()
    state = c.state
    c.update()
    assert c.state is state  # nothing stepped since: a redundant call is ignored
    c.update(force=True)
    assert c.state is not state
    with pytest.raises(ValueError, match="base pose"):
        c.update_base_pose([0, 0], [0, 0, 0, 1])
    with pytest.raises(ValueError, match="initial_joints"):
        make_controller(sim.arm, "osc").update_initial_joints([0.0] * 6)
