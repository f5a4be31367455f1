"""The seed's gym API where Gymnasium allows it: reward_range, render() with rgb and depth, the core
state getters, and steps that last until the target is reached, the same on both backends."""
import warnings

import gymnasium as gym
import numpy as np
import pytest
import yaml
from gymnasium.utils.passive_env_checker import env_render_passive_checker
from scipy.spatial.transform import Rotation

import binpick_sim.envs  # noqa: F401  (registers the ids)
from binpick_sim.envs import ENV_IDS
from binpick_sim.paths import default_config
from env_helpers import SMALL_CAMERA, make

REACHABLE = np.array([0.3, -0.5, -0.2, -2.2, 0.1, 1.8, 0.5, 0.02, 0.02])


@pytest.mark.parametrize("env_id", sorted(ENV_IDS))
def test_every_env_has_the_seeds_reward_range_and_its_rewards_fall_in_it(env_id, config):
    env = make(env_id, observation="state")
    try:
        low, high = env.unwrapped.reward_range
        task, most = config.task, config.scene.pick_bin.max_objects
        assert (low, high) == (task.step_reward + task.collision_reward, task.step_reward + task.grab_reward * most)
        env.reset(seed=0)
        env.action_space.seed(0)
        for _ in range(3):
            _, reward, terminated, _, _ = env.step(env.action_space.sample())
            assert low <= reward <= high
            if terminated:
                break
    finally:
        env.close()


@pytest.mark.parametrize("env_id", sorted(ENV_IDS))
def test_render_returns_the_camera_frame_and_passes_gymnasiums_render_check(env_id):
    for mode, check in (("rgb_array", lambda f: f.dtype == np.uint8 and f.shape == (48, 64, 3)),
                        ("depth_array", lambda f: f.dtype == np.float32 and f.shape == (48, 64)
                         and 0.1 < float(np.median(f)) < 3.0)):
        env = make(env_id, observation="state", render_mode=mode)
        try:
            assert env.unwrapped.render() is None  # nothing rendered before the first reset
            env.reset(seed=1)
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # gymnasium's checker warns about a wrong frame
                frame = env_render_passive_checker(env.unwrapped)
            assert check(frame), mode
            env.step(env.action_space.sample())
            now = env.unwrapped.backend.sim.camera.render(segmentation=False)  # the frame after the step
            assert np.array_equal(env.render(), now.rgb if mode == "rgb_array" else now.depth)
        finally:
            env.close()


@pytest.mark.parametrize("backend", ["direct", pytest.param("ros", marks=pytest.mark.slow)])
def test_render_depth_gives_rgb_and_depth_as_the_seeds_get_depth_data(backend):
    """`render(get_depth_data=True)`: the seed's (rgb, depth); `render()` with `render_depth=True`: one
    rgb frame with the depth image beside it (what RecordVideo records), passing Gymnasium's check. FrankaDelta's
    image observations draw the camera at their 64 x 64 (doc/gym.md): its frames are those."""
    env = make("binpick_sim/FrankaDelta-v0", backend, render_mode="rgb_array", render_depth=True)
    try:
        observation, _ = env.reset(seed=2)
        rgb, depth = env.unwrapped.render(get_depth_data=True)
        assert rgb.shape == (64, 64, 3) and rgb.dtype == np.uint8 and np.array_equal(rgb, observation["rgb"])
        assert depth.shape == (64, 64) and depth.dtype == np.float32
        assert np.all(np.isfinite(depth)) and 0.1 < depth.min() <= depth.max() <= 3.0  # metres
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            frame = env_render_passive_checker(env.unwrapped)
        assert frame.shape == (64, 128, 3) and frame.dtype == np.uint8
        assert np.array_equal(frame[:, :64], rgb)
        grey = frame[:, 64:, 0].astype(float)
        camera = env.unwrapped.config.camera
        expected = np.clip((camera.far - depth) / (camera.far - camera.near), 0, 1) * 255
        assert np.abs(grey - expected).max() <= 0.5 and np.array_equal(frame[:, 64:, 0], frame[:, 64:, 2])
    finally:
        env.close()


def test_render_depth_needs_rgb_array_and_until_reached_needs_targets():
    with pytest.raises(ValueError, match="render_depth=True needs render_mode='rgb_array'"):
        make("binpick_sim/FrankaPosition-v0", render_depth=True)
    with pytest.raises(ValueError, match="until_reached=True is for position and delta"):
        make("binpick_sim/FrankaVelocity-v0", until_reached=True)


def test_the_core_arm_has_the_seeds_state_getters(sim):
    arm = sim.arm
    arm.move_to(REACHABLE)
    state = arm.get_position_velocity_state()
    position, velocity, _ = arm.joint_states()
    assert state.shape == (18,)
    assert np.array_equal(state[:9], position) and np.array_equal(state[9:], velocity)
    assert np.abs(state[:7] - REACHABLE[:7]).max() < arm.config.position_tolerance
    where, euler = arm.get_gripper_state()
    ee_position, quaternion = arm.ee_pose()
    assert np.array_equal(where, ee_position) and euler.shape == (3,)
    turned = Rotation.from_euler("xyz", euler)  # PyBullet's Euler angles: roll, pitch, yaw about fixed axes
    assert (turned.inv() * Rotation.from_quat(quaternion)).magnitude() < 1e-6


def episode(env_id, backend, actions, **kwargs):
    env = make(env_id, backend, observation="state", **kwargs)
    try:
        env.reset(seed=4)
        return [env.step(a) for a in actions]
    finally:
        env.close()


@pytest.mark.parametrize("backend", ["direct", pytest.param("ros", marks=pytest.mark.slow)])
def test_until_reached_steps_until_the_position_target_is_reached(backend, config):
    action = REACHABLE.astype(np.float32)
    fixed, = episode("binpick_sim/FrankaPosition-v0", backend, [action])
    reached, again = episode("binpick_sim/FrankaPosition-v0", backend, [action, action], until_reached=True)
    timestep = config.simulation.timestep
    assert fixed[4]["episode_time"] == pytest.approx(config.task.steps_per_action * timestep)  # the default
    assert np.abs(fixed[0]["joint_positions"][:7] - action[:7]).max() > 0.05  # 0.1 s is not enough
    joints = reached[0]["joint_positions"]
    assert np.abs(joints[:7] - action[:7]).max() < config.arm.position_tolerance
    steps = round(reached[4]["episode_time"] / timestep)
    assert config.task.steps_per_action < steps < config.arm.max_steps
    assert round(again[4]["episode_time"] / timestep) == steps + 1  # already there: one step


@pytest.mark.parametrize("backend", ["direct", pytest.param("ros", marks=pytest.mark.slow)])
def test_until_reached_is_bounded_by_max_steps(backend, config, tmp_path):
    """With arm.max_steps 10 (0.04 s) the far target is not reached: the step ends after 10 physics steps."""
    data = yaml.safe_load(default_config().read_text())
    data["arm"]["max_steps"] = 10
    scene = tmp_path / "scene.yaml"
    scene.write_text(yaml.safe_dump(data))
    (observation, _, _, _, info), = episode("binpick_sim/FrankaPosition-v0", backend, [REACHABLE.astype(np.float32)],
                                            until_reached=True, config_file=scene)
    assert round(info["episode_time"] / config.simulation.timestep) == 10
    assert np.abs(observation["joint_positions"][:7] - REACHABLE[:7]).max() > config.arm.position_tolerance


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ["binpick_sim/FrankaPosition-v0", "binpick_sim/FrankaDelta-v0"])
def test_until_reached_gives_the_same_episode_on_both_backends(env_id):
    space = make(env_id).action_space
    space.seed(3)
    actions = [space.sample() for _ in range(4)]
    direct = episode(env_id, "direct", actions, until_reached=True)
    ros = episode(env_id, "ros", actions, until_reached=True)
    for (o1, r1, t1, u1, i1), (o2, r2, t2, u2, i2) in zip(direct, ros):
        assert (r1, t1, u1, i1) == (r2, t2, u2, i2)
        assert all(np.array_equal(o1[k], o2[k]) for k in o1)


# --- a camera changed at run time is the scene file's again after reset; the seed's load_scene(mode) (issue 28, items 1, 8)
def small_env(env_id="binpick_sim/FrankaPosition-v0", **kwargs):
    return gym.make(env_id, backend=kwargs.pop("backend", "direct"), camera_size=(64, 48), **kwargs)


@pytest.mark.slow
def test_reset_restores_the_camera_that_recompute_view_and_projection_matrix_changed():
    from gymnasium.utils.env_checker import check_env

    env = small_env()
    try:
        env.reset(seed=0)
        env.unwrapped.recompute_view_and_projection_matrix([0.5, 0.6, 0.5], [0.5, 0.0, 0.0], 50.0, 0.05, 2.0,
                                                           render_width=32, render_height=24)
        observation, *_ = env.step(env.action_space.sample())
        assert observation["rgb"].shape == (24, 32, 3)  # the seed's recompute: the images change at once
        camera = env.unwrapped.backend.sim.camera
        position, rotation = camera.link_pose()
        assert position == pytest.approx([0.5, 0.6, 0.5])
        forward = np.array([0.0, -0.6, -0.5]) / np.linalg.norm([0.0, -0.6, -0.5])
        assert rotation[:, 0] == pytest.approx(forward) and rotation[2, 2] > 0  # looks at the target, z up
        observation, _ = env.reset(seed=1)
        assert env.observation_space.contains(observation)  # the scene file's camera again
        assert camera.config == env.unwrapped.config.camera
        camera.set_view(width=16, height=12)  # changed in the core directly: the same
        observation, _ = env.reset(seed=2)
        assert observation["rgb"].shape == (48, 64, 3)
        with pytest.raises(ValueError):
            env.unwrapped.recompute_view_and_projection_matrix([0, 0, 1], [0, 0, 0], 50.0, 0.05, 2.0)  # up = line of sight
        with pytest.raises(ValueError):
            env.unwrapped.recompute_view_and_projection_matrix([0.5, 0.6, 0.5], [0.5, 0, 0], 50.0, 2.0, 1.0)  # near > far
        assert camera.config == env.unwrapped.config.camera  # refused: nothing changed
        check_env(env.unwrapped, skip_render_check=True)
    finally:
        env.close()


@pytest.mark.slow
def test_load_scene_switches_between_the_training_set_the_test_set_and_the_two_arm_cell():
    from binpick_sim.cell.scene import object_files

    env = small_env(observation="image")
    try:
        unwrapped = env.unwrapped
        assert set(unwrapped.scene_modes) == {"train", "test", "two_arms"}
        env.reset(seed=0)
        train = {str(f) for f in object_files("train")}
        assert {str(o.urdf) for o in unwrapped.backend.sim.scene.objects} <= train
        unwrapped.load_scene("test")
        observation, _ = env.reset(seed=0)
        held_out = {str(f) for f in object_files("test")}
        assert {str(o.urdf) for o in unwrapped.backend.sim.scene.objects} <= held_out
        assert env.observation_space.contains(observation) and unwrapped.scene_mode == "test"
        unwrapped.load_scene("two_arms")
        observation, _ = env.reset(seed=0)
        assert [a.config.name for a in unwrapped.backend.sim.arms] == ["left", "right"]
        assert env.observation_space.contains(observation)  # same image size whatever the scene
        observation, *_ = env.step(env.action_space.sample())
        assert env.observation_space.contains(observation)
        unwrapped.load_scene("train")  # back to this env's own scene file
        env.reset(seed=0)
        assert len(unwrapped.backend.sim.arms) == 1
        with pytest.raises(ValueError, match="unknown scene mode 'kitchen'"):
            unwrapped.load_scene("kitchen")
    finally:
        env.close()


@pytest.mark.slow
@pytest.mark.parametrize("step_channel", [False, True])
def test_on_the_ros_backend_too_reset_restores_the_changed_camera(step_channel):
    """The ROS backend sets the sim's camera node parameters, and puts the scene file's back at reset; its
    frames come at the new size over the topics and over the step channel alike."""
    env = small_env(backend="ros", step_channel=step_channel)
    try:
        env.reset(seed=0)
        env.unwrapped.recompute_view_and_projection_matrix([0.5, 0.6, 0.5], [0.5, 0.0, 0.0], 50.0, 0.05, 2.0,
                                                           render_width=32, render_height=24)
        observation, *_ = env.step(env.action_space.sample())
        assert observation["rgb"].shape == (24, 32, 3)
        observation, _ = env.reset(seed=1)
        assert env.observation_space.contains(observation)
        with pytest.raises(ValueError, match="camera refused"):
            env.unwrapped.recompute_view_and_projection_matrix([0.5, 0.6, 0.5], [0.5, 0, 0], 50.0, 2.0, 1.0)
        observation, _ = env.reset(seed=2)  # whatever the refused call left changed is restored
        assert env.observation_space.contains(observation)
    finally:
        env.close()
