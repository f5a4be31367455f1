"""The defects an outside audit of the seeds found (issue 13, items 4-14): each test failed before its fix."""
from pathlib import Path

import numpy as np
import pybullet_data
import pytest
from test_reasoning import add_body, empty  # noqa: F401  (a fixture)


def move_grasp_target_to(sim, point):
    """Joint-space move (no workspace clipping) of the grasp target to `point`, pointing down."""
    arm = sim.arm
    arm.move_to(arm.ik(np.asarray(point, float), arm.ee_yaw()))
    assert np.linalg.norm(arm.ee_pose()[0] - point) < 0.005


# --- 4: a shake anywhere returns to where it started --------------------------------------------
def test_a_shake_above_the_drop_bin_goes_up_and_back_where_it_started(sim):
    arm = sim.arm
    move_grasp_target_to(sim, sim.scene.drop_bin.to_world([0, 0, 0.15]))
    start = arm.ee_pose()[0]
    heights = []
    original = arm.move_to

    def recording(q, *args, **kwargs):
        readings = original(q, *args, **kwargs)
        heights.append(arm.ee_pose()[0].copy())
        return readings
    arm.move_to = recording
    arm.shake()
    up, down = heights
    assert np.linalg.norm(up[:2] - start[:2]) < 0.003 and up[2] - start[2] == pytest.approx(0.03, abs=0.003)
    assert np.linalg.norm(down - start) < 0.003


# --- 5: gripper_open follows the fingers' command in every env ----------------------------------
def state_env(env_id, **kwargs):
    import gymnasium as gym

    import binpick_sim.envs  # noqa: F401  (registers the ids)

    return gym.make(env_id, observation="state", camera_size=(32, 24), **kwargs).unwrapped


@pytest.mark.parametrize("env_id", ["binpick_sim/FrankaPosition-v0", "binpick_sim/FrankaVelocity-v0"])
def test_gripper_open_follows_the_finger_command(env_id):
    env = state_env(env_id)
    try:
        observation, _ = env.reset(seed=1)
        assert observation["gripper_open"] == 1
        home = observation["joint_positions"].astype(float)
        close = (np.concatenate([home[:7], [0.0, 0.0]]) if env.command == "position"
                 else np.concatenate([np.zeros(7), -env.joint_velocity[7:]]))
        for _ in range(5):
            observation, *_ = env.step(close.astype(np.float32))
        assert observation["joint_positions"][7:].max() < 0.002  # the fingers did close
        assert observation["gripper_open"] == 0
        still = np.concatenate([home[:7], [0.0, 0.0]]) if env.command == "position" else np.zeros(9)
        observation, *_ = env.step(still.astype(np.float32))  # velocity env: no finger motion keeps the state
        assert observation["gripper_open"] == 0
        opened = (home if env.command == "position" else np.concatenate([np.zeros(7), env.joint_velocity[7:]]))
        for _ in range(5):
            observation, *_ = env.step(opened.astype(np.float32))
        assert observation["gripper_open"] == 1
        assert env.reset()[0]["gripper_open"] == 1
    finally:
        env.close()


# --- 6: a zero delta action holds the arm ---------------------------------------------------------
def test_zero_delta_actions_hold_the_arm_after_reset():
    env = state_env("binpick_sim/FrankaDelta-v0")
    try:
        observation, _ = env.reset(seed=2)
        start = observation["ee_position"].astype(float)
        for _ in range(5):
            observation, *_ = env.step(np.zeros(5, np.float32))
        assert np.linalg.norm(observation["ee_position"] - start) < 0.002
    finally:
        env.close()


def test_a_delta_from_outside_the_workspace_is_clipped_only_where_it_moves_further_out(sim):
    arm = sim.arm
    start = arm.ee_pose()[0]  # home lies outside the pick bin's x-y box
    lower, upper = arm.workspace_bounds()
    local = sim.scene.pick_bin.to_local(start)
    assert not np.all((local[:2] >= lower[:2]) & (local[:2] <= upper[:2]))
    arm.apply_delta([0, 0, 0.02, 0, 0])  # straight up: the workspace does not pull it sideways
    assert np.linalg.norm(arm.ee_pose()[0] - start - [0, 0, 0.02]) < 0.003
    assert not arm.delta_clipped


# --- 7: no sensor warnings when the finger sensors are off ------------------------------------------
def test_finger_sensors_off_start_without_pybullet_warnings(config, capfd):
    import dataclasses

    from binpick_sim.cell.sim import BinPickingSim

    quiet = dataclasses.replace(config, arm=dataclasses.replace(config.arm, finger_force_sensors=False))
    capfd.readouterr()
    sim = BinPickingSim(quiet)
    try:
        sim.reset(seed=0)
        sim.arm.reset()
        sim.world.step(5)
        assert not sim.arm.apply_velocity(np.zeros(9))  # no readings without sensors
    finally:
        sim.close()
    out, err = capfd.readouterr()
    assert "SENSOR" not in out + err and "warning" not in (out + err).lower()


# --- 8, 9, 10: the robot interface --------------------------------------------------------------
@pytest.fixture
def backend(sim):
    """A robot backend whose physics steps the test takes itself (the loop is never started: its calls
    run at once), so a race can be staged exactly."""
    from binpick_sim.cell.loop import PhysicsLoop
    from binpick_sim.control.robot_interface import RobotBackend

    return RobotBackend(sim.arm, PhysicsLoop(sim.world, lockstep=True), max_action_repetitions=1)


def test_the_robot_interface_error_is_latched_even_against_an_append_racing_the_step(sim, backend):
    """An append that lands while a step decides the error (between its lock and the error) must not
    be applied, nor bring the status back to "no error"."""
    from binpick_sim.control.robot_interface import BACKEND_ERROR, Action

    backend.append(Action())
    sim.world.step(2)  # t 0: the action; t 1: repeated once (allowed)
    raced = []
    checks = backend.safety_checks

    def racing(action, observation):
        try:
            raced.append(backend.append(Action.make(torque=[5.0] + [0.0] * 8)))
        except RuntimeError:
            raced.append(None)
        backend.safety_checks = checks
        return checks(action, observation)
    backend.safety_checks = racing
    sim.world.step(5)
    statuses = [backend.status.get(t) for t in range(2, 7)]
    assert all(s.error_status == BACKEND_ERROR for s in statuses), statuses
    assert all(np.all(backend.applied.get(t).torque == 0) for t in range(2, 7))
    with pytest.raises(RuntimeError, match="in error"):
        backend.append(Action())


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


def test_the_robot_interface_observes_and_reports_the_torque_really_applied(sim, backend):
    """Applied = what acts on top of gravity compensation: with the sum clipped to the effort limits,
    the applied torque is the clipped sum less the compensation, and the next observation sees the sum."""
    from binpick_sim.control.robot_interface import Action

    limits = backend.torque_limits
    t = None
    for sign in (1.0, -1.0):
        t = backend.append(Action.make(torque=sign * limits))
        sim.world.step(2)
        observed = backend.observations.get(t).position
        gravity = sim.arm.gravity_torques(observed)
        applied = backend.applied.get(t).torque
        sent = backend.observations.get(t + 1).torque  # effort during step t
        assert np.all(np.abs(sent) <= limits + 1e-9)
        assert applied == pytest.approx(sent - gravity, abs=1e-6)
        pushed_with_gravity = np.sign(gravity[3]) == sign  # joint 4 (19 N m of compensation at home)
        assert (abs(applied[3]) < limits[3] - 10.0) == pushed_with_gravity
    assert backend.observations.get(t + 1).torque[1] < 0 < backend.observations.get(t - 1).torque[1]


# --- 12: supporting needs the upper strictly higher; the ground supports, never is supported --------
CUBE = Path(pybullet_data.getDataPath()) / "cube_small.urdf"  # a 5 cm cube


@pytest.fixture
def reasoner(empty):
    return empty[1]


def test_side_by_side_objects_do_not_support_each_other_and_nothing_supports_the_ground(sim, reasoner):
    left = add_body(sim, CUBE, [0.3, 0.6, 0.02], 0.8)
    right = add_body(sim, CUBE, [0.34, 0.6, 0.02], 0.8)  # touching, bases at the same height
    assert (left.name, right.name) in reasoner.contacts()
    support = reasoner.supporting()
    assert not [pair for pair in support if {left.name, right.name} == set(pair)]
    assert not [pair for pair in support if pair[1] == "ground"], support
    assert ("ground", left.name) in support and ("ground", "pick_bin") in support


# --- 13: bodies whose centre of mass is off their link frame are copied where they are -------------
DUCK = Path(pybullet_data.getDataPath()) / "duck_vhacd.urdf"  # inertial origin 2 cm off its link frame


def test_a_resting_duck_is_stable_and_fully_visible_alone(sim, reasoner):
    from scipy.spatial.transform import Rotation

    from binpick_sim.reasoning import CameraView

    duck = add_body(sim, DUCK, [0.3, 0.6, 0.03], orientation=sim.world.client.getQuaternionFromEuler([1.5708, 0, 0]))
    sim.world.step(round(2.0 / sim.world.timestep))  # settled on the ground
    assert reasoner.stable()[duck.name]
    position = np.array(sim.world.client.getBasePositionAndOrientation(duck.body)[0])
    above = CameraView(position + [0, 0, 0.4], Rotation.from_euler("x", np.pi).as_matrix())
    seen = reasoner.visibility(above, 64, 48, [duck.name])[duck.name]
    assert seen["pixels"] > 20 and seen["ratio"] > 0.99 and not seen["occluded_by"]


# --- 11: the reasoning copy follows the running torque controller, not stale motor targets ----------
def test_stable_while_a_torque_controller_holds_the_arm_above_a_box(sim, reasoner):
    """The motors' last targets put the closed fingers into the box; the controller that took over
    holds them 10 cm above it. The copy must hold the arm where it is, as the controller does."""
    from binpick_sim.control.controllers import JointPositionController

    arm, spot = sim.arm, np.array([0.45, 0.4, 0.0])
    arm.set_gripper(False)
    move_grasp_target_to(sim, spot + [0, 0, 0.03])  # the motors' targets: fingertips at the box's middle
    controller = JointPositionController(arm)
    controller.engage()
    controller.set_goal(np.zeros(7), set_qpos=arm.ik(spot + [0, 0, 0.15], arm.ee_yaw())[:7])
    sim.world.step(round(1.5 / sim.world.timestep))
    box = add_body(sim, CUBE, spot + [0, 0, 0.02], 0.8)
    sim.world.step(round(0.5 / sim.world.timestep))
    assert arm.ee_pose()[0][2] > 0.12 and not [p for p in arm.contacts() if p[2] != arm.body]
    assert reasoner.stable()[box.name]


# --- 14: the controllers -------------------------------------------------------------------------
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


def test_the_copy_holds_the_joints_the_robot_interface_drives_where_they_are(sim, backend, reasoner):
    from binpick_sim.control.robot_interface import Action

    sim.arm.set_position_targets(sim.arm.home + [0.5, 0, 0, 0.3, 0, 0, 0, 0, 0])  # stale once the interface starts
    backend.append(Action.make(torque=[3.0] + [0.0] * 8))
    sim.world.step(50)
    reasoner.mirror()
    twin = reasoner.copy.arm
    assert twin.position_targets == pytest.approx(sim.arm.joint_states()[0], abs=1e-12)
