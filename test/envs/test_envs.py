"""The Gymnasium envs: registered, pass the env checker, and behave the same on both backends."""
import dataclasses
import warnings

import gymnasium as gym
import numpy as np
import pytest
import yaml
from gymnasium.utils.env_checker import check_env

import binpick_sim.envs  # noqa: F401  (registers the ids)
from binpick_sim.envs import ENV_IDS
from binpick_sim.envs.scripted import run_episode
from binpick_sim.paths import default_config
from env_helpers import SMALL_CAMERA, make



def test_the_three_ids_are_registered():
    assert set(ENV_IDS) == {"binpick_sim/FrankaPosition-v0", "binpick_sim/FrankaVelocity-v0",
                            "binpick_sim/FrankaDelta-v0"}
    assert all(env_id in gym.registry for env_id in ENV_IDS)


@pytest.mark.parametrize("backend", ["direct", pytest.param("ros", marks=pytest.mark.slow)])
@pytest.mark.parametrize("env_id", sorted(ENV_IDS))
def test_env_checker_passes(env_id, backend):
    checked(make(env_id, backend).unwrapped)


@pytest.mark.slow
def test_env_checker_passes_over_the_step_channel():
    """Gymnasium's own checker on the ROS backend with step_channel=True (common/step_channel.py)."""
    checked(make("binpick_sim/FrankaDelta-v0", "ros", step_channel=True).unwrapped)


def checked(env) -> None:
    """Gymnasium's check_env on `env`, which is closed after it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # recommendations about the seed's unnormalised spaces
            check_env(env, skip_render_check=True)
    finally:
        env.close()


@pytest.mark.parametrize("env_id", sorted(ENV_IDS))
def test_state_observations_pass_the_checker(env_id):
    env = make(env_id, observation="state").unwrapped
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check_env(env, skip_render_check=True)
    finally:
        env.close()


def episode(env_id, backend, actions, **kwargs):
    env = make(env_id, backend, **kwargs)
    try:
        observations, rewards, infos = [], [], []
        observation, info = env.reset(seed=5)
        observations.append(observation)
        for k, action in enumerate(actions):
            observation, reward, terminated, truncated, info = env.step(action)
            observations.append(observation)
            rewards.append(reward)
            infos.append(info)
            if k % 2:  # the objects as a scripted policy sees them, asked after every other step
                infos[-1] = {**info, "objects": [(v.name, v.position.tolist(), v.orientation.tolist(),
                                                  v.vertices.tolist()) for v in env.unwrapped.object_views()]}
        observation, info = env.reset(options={"keep_object_type": True})
        observations.append(observation)
        return observations, rewards, infos
    finally:
        env.close()


@pytest.mark.slow
@pytest.mark.parametrize("env_id, observation", [("binpick_sim/FrankaDelta-v0", "image"),
                                                 ("binpick_sim/FrankaVelocity-v0", "state")])
def test_same_seed_and_actions_give_the_same_episode_on_both_backends(env_id, observation):
    """State exactly; images within one intensity level (both render with the same TinyRenderer, so
    they come out identical here, but a renderer's rounding is not a promise). The ROS backend both ways:
    over its topics and over its step channel (step_channel=True)."""
    space = gym.make(env_id, camera_size=SMALL_CAMERA).action_space
    space.seed(7)
    actions = [space.sample() for _ in range(12)]
    direct = episode(env_id, "direct", actions, observation=observation)
    for ros in (episode(env_id, "ros", actions, observation=observation),
                episode(env_id, "ros", actions, observation=observation, step_channel=True)):
        assert direct[1] == ros[1] and direct[2] == ros[2]
        for a, b in zip(direct[0], ros[0]):
            for key in a:
                if key == "rgb":
                    assert np.abs(a[key].astype(int) - b[key]).max() <= 1
                else:
                    assert np.array_equal(a[key], b[key]), key


def test_delta_image_observations_are_the_camera_drawn_at_their_size():
    """FrankaDelta-v0's 64 x 64 rgb is the configured camera (64 x 48 here) drawn at 64 x 64: the backend's
    camera renders at that size (no larger frame shrunk), with the configured view (aspect 4:3) and K scaled
    per axis; the picture agrees with the configured camera's own larger render shrunk to 64 x 64, and a
    square view of the same fov (what drawing at 64 x 64 without `aspect` would show) does not."""
    import cv2

    from binpick_sim.cell.vision.camera import Camera

    env = make("binpick_sim/FrankaDelta-v0")
    try:
        observation, _ = env.reset(seed=3)
        observation, *_ = env.step(np.array([0.5, 0.0, -0.5, 0.0, 1.0], np.float32))
        sim, configured = env.unwrapped.backend.sim, env.unwrapped.config.camera
        assert (configured.width, configured.height) == SMALL_CAMERA
        camera = sim.camera
        assert (camera.width, camera.height, camera.config.view_aspect) == (64, 64, 64 / 48)
        assert observation["rgb"].shape == (64, 64, 3)
        assert np.array_equal(observation["rgb"], camera.render().rgb)
        k, fy = camera.intrinsics(), 24 / np.tan(np.radians(configured.fov_deg) / 2)  # the 64 x 48 camera's f
        assert (k[0, 0], k[1, 1]) == pytest.approx((fy * 64 / 64, fy * 64 / 48))
        big = Camera(sim.world, dataclasses.replace(configured, width=256, height=192)).render().rgb
        shrunk = cv2.resize(big, (64, 64), interpolation=cv2.INTER_AREA).astype(float)
        square = Camera(sim.world, dataclasses.replace(configured, width=64, height=64)).render().rgb
        near = np.abs(observation["rgb"] - shrunk).mean()
        assert near < 8 and np.abs(square - shrunk).mean() > 2 * near
        # the seed's recompute with a new image size: the view takes its shape, the observation keeps its size
        drawn = camera.config
        env.unwrapped.recompute_view_and_projection_matrix([0.5, 0.6, 0.5], [0.5, 0.0, 0.0], 50.0, 0.05, 2.0,
                                                           render_width=40, render_height=20)
        assert (camera.width, camera.height, camera.config.view_aspect) == (64, 64, 2.0)
        assert env.step(np.zeros(5, np.float32))[0]["rgb"].shape == (64, 64, 3)
        env.reset(seed=3)
        assert camera.config == drawn
    finally:
        env.close()


def test_the_direct_backend_reads_the_objects_when_asked_as_the_step_left_them():
    """object_views() is read from the world only when asked (a learning agent never asks), and always
    shows the world as the last observation saw it: after the next step it is that step's."""
    env = make("binpick_sim/FrankaDelta-v0", "direct", observation="state")
    try:
        env.reset(seed=3)
        sim = env.unwrapped.backend.sim
        env.step(np.zeros(5, np.float32))
        backend_last = env.unwrapped.last
        assert callable(backend_last.objects)  # nothing read yet
        views = env.unwrapped.object_views()
        assert [(v.name, v.position.tolist()) for v in views] == [
            (v.name, v.position.tolist()) for v in sim.object_views()]
        assert env.unwrapped.object_views() is views  # read once
        stale = env.unwrapped.last
        env.step(np.array([1, 0, 0, 0, 0], np.float32))
        fresh = stale.objects if not callable(stale.objects) else None
        assert fresh is views  # what was read stays as it was
        env.step(np.array([1, 0, 0, 0, 0], np.float32))
        unread = env.unwrapped.last
        env.step(np.zeros(5, np.float32))
        with pytest.raises(RuntimeError, match="before the next step"):
            unread.object_views()  # an older observation's objects, never read: refused, not made up
    finally:
        env.close()


def test_the_ros_backend_sends_the_objects_only_once_asked_and_as_the_direct_backend_reads_them():
    """Over ROS the replies leave the objects' list out (issue 33: a quarter of the task node's work per reply)
    until object_views() asks. That observation's objects then come by a request of no physics steps, the
    same as the direct backend's after the same seed and actions; every reply carries them from then on;
    an older observation's objects are refused, as on the direct backend."""
    right, still = np.array([1, 0, 0, 0, 0], np.float32), np.zeros(5, np.float32)
    envs = {name: make("binpick_sim/FrankaDelta-v0", name, observation="state") for name in ("direct", "ros")}

    def views(env):
        return [(v.name, v.position.tolist(), v.orientation.tolist()) for v in env.unwrapped.object_views()]

    try:
        for env in envs.values():
            env.reset(seed=3)
            env.step(right)
        backend = envs["ros"].unwrapped.backend
        assert "objects" not in backend._reply()
        unread = envs["ros"].unwrapped.last
        for env in envs.values():
            env.step(still)
        with pytest.raises(RuntimeError, match="before the next step"):
            unread.object_views()
        assert views(envs["ros"]) == views(envs["direct"])
        for env in envs.values():
            env.step(right)
        assert "objects" in backend._reply() and views(envs["ros"]) == views(envs["direct"])
    finally:
        for env in envs.values():
            env.close()


def test_reset_is_repeatable_and_keeps_the_object_type_when_asked():
    env = make("binpick_sim/FrankaDelta-v0")
    try:
        first, _ = env.reset(seed=11)
        sim = env.unwrapped.backend.sim
        kind = sim.scene.object_urdf
        again, _ = env.reset(seed=11)
        assert all(np.array_equal(first[k], again[k]) for k in first)
        for _ in range(3):
            env.reset(options={"keep_object_type": True})
            assert sim.scene.object_urdf == kind
    finally:
        env.close()


def test_an_envs_first_seeded_reset_settles_only_its_own_layout():
    """The backend is made for the first reset and starts on that seed's layout, which the reset then finds
    remembered: not the scene file's seed's layout settled first, then this one (test_reproducibility.py checks
    that the episode is the one a later reset with the seed gives)."""
    env = make("binpick_sim/FrankaDelta-v0")
    try:
        env.reset(seed=21)
        assert len(env.unwrapped.backend.sim.scene.layouts) == 1
    finally:
        env.close()


def test_resets_over_ros_make_no_more_clients():
    """Each reset asks the sim's parameter and reset services with the clients of the first: a client made per
    request stayed in this process until the env closed (six a reset) and waited for discovery each time."""
    env = make("binpick_sim/FrankaDelta-v0", backend="ros")
    try:
        env.reset(seed=3)
        node = env.unwrapped.backend.client.node
        made = len(list(node.clients))
        for seed in (3, 4, None):
            env.reset(seed=seed)
        assert len(list(node.clients)) == made
    finally:
        env.close()


def test_episodes_are_truncated_at_the_step_limit(tmp_path):
    """Made directly from its class (the seed's API), the env truncates at the scene file's limit."""
    from binpick_sim.envs import FrankaDeltaEnv

    data = yaml.safe_load(default_config().read_text())
    data["task"]["max_episode_steps"] = 3
    scene = tmp_path / "scene.yaml"
    scene.write_text(yaml.safe_dump(data))
    env = FrankaDeltaEnv(config_file=scene, observation="state", camera_size=SMALL_CAMERA)
    try:
        env.reset(seed=0)
        flags = [env.step(np.zeros(5, np.float32))[3] for _ in range(3)]
        assert flags == [False, False, True]
    finally:
        env.close()


def test_the_one_object_scene_steps_like_panda_gym():
    """config/scene_one_object.yaml (the like-for-like benchmark's scene): each step is 0.04 s of sim
    time in 20 physics steps of 2 ms, with one object; the same seed gives the same episode."""
    scene = default_config().parent / "scene_one_object.yaml"
    episodes = []
    for _ in range(2):
        env = make("binpick_sim/FrankaDelta-v0", config_file=scene, observation="state")
        try:
            env.reset(seed=4)
            sim = env.unwrapped.backend.sim
            assert sim.scene.object_count == 1
            env.action_space.seed(4)
            steps, trace = sim.world.step_count, []
            for _ in range(5):
                obs, _, terminated, _, info = env.step(env.action_space.sample())
                trace.append(obs["joint_positions"])
                assert not terminated
            assert sim.world.step_count - steps == 5 * 20
            assert info["episode_time"] == pytest.approx(5 * 0.04)
            episodes.append(np.array(trace))
        finally:
            env.close()
    assert np.array_equal(*episodes)


def test_bad_actions_are_refused_and_the_env_goes_on():
    env = make("binpick_sim/FrankaPosition-v0", observation="state")
    try:
        observation, _ = env.reset(seed=0)
        for bad in ([0.0] * 8, [np.nan] * 9, [np.inf] * 9):
            with pytest.raises(ValueError, match="action must be"):
                env.step(np.array(bad, np.float32))
        after = env.step(observation["joint_positions"])[0]
        assert np.abs(after["joint_positions"] - observation["joint_positions"]).max() < 0.01
    finally:
        env.close()


def test_delta_actions_are_scaled_by_dv():
    env = make("binpick_sim/FrankaDelta-v0", observation="state", dv=0.02)
    try:
        observation, _ = env.reset(seed=0)
        for _ in range(10):  # into the pick bin's workspace first (the home pose is outside it)
            target = env.unwrapped.backend.sim.scene.pick_bin.to_world([0, 0, 0.12])
            observation = env.step(np.append(np.clip((target - observation["ee_position"]) / 0.02, -1, 1),
                                              [0, 0]).astype(np.float32))[0]
        start = observation["ee_position"]
        observation = env.step(np.array([1, 0, -0.5, 0, 0], np.float32))[0]
        assert observation["ee_position"] - start == pytest.approx([0.02, 0, -0.01], abs=0.003)
    finally:
        env.close()


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["direct", "ros"])
def test_vectorised_envs(backend):
    # "spawn": this test process has run ROS nodes already, and forking a live DDS participant hangs
    envs = gym.make_vec("binpick_sim/FrankaDelta-v0", num_envs=2, vectorization_mode="async",
                        vector_kwargs={"context": "spawn"}, backend=backend, observation="state")
    try:
        observations, _ = envs.reset(seed=[1, 2])
        assert observations["ee_position"].shape == (2, 3)
        observations, rewards, terminated, truncated, _ = envs.step(np.zeros((2, 5), np.float32))
        assert observations["joint_positions"].shape == (2, 9) and rewards.shape == (2,)
    finally:
        envs.close()


def test_scripted_picker_grabs_an_object():
    env = make("binpick_sim/FrankaDelta-v0", observation="state")
    try:
        info = run_episode(env, seed=7)
        assert info["grabs"] == 1 and not info["bin_collision"]
    finally:
        env.close()


@pytest.mark.parametrize("step_channel", [False, True])
def test_a_dead_sim_is_reported_at_once_with_its_exit_status_and_log(step_channel):
    """kill -9 of the ROS backend's private sim: step and reset raise SimProcessDied promptly (well
    under the backend's 120 s per-call timeout), naming the signal and quoting the sim's log, and every
    later call does the same; over the topics and over the step channel."""
    import signal
    import time

    from binpick_sim.nodes.process.spawn import SimProcessDied

    env = make("binpick_sim/FrankaDelta-v0", backend="ros", observation="state", step_channel=step_channel)
    try:
        env.reset(seed=0)
        env.step(np.zeros(5, np.float32))
        process = env.unwrapped.backend.process
        process.process.send_signal(signal.SIGKILL)
        process.process.wait(30)
        for call in (lambda: env.step(np.zeros(5, np.float32)), lambda: env.reset(seed=1),
                     lambda: env.step(np.zeros(5, np.float32))):
            start = time.monotonic()
            with pytest.raises(SimProcessDied, match="exit status -9 \\(killed by SIGKILL\\)") as raised:
                call()
            assert time.monotonic() - start < 30  # promptly: far below the 120 s a lost reply waits
            assert "last lines of its log" in str(raised.value) and "episode" in str(raised.value)
    finally:
        env.close()


def test_a_frame_left_unread_on_the_step_channel_does_not_hold_the_sim_at_the_next_reset():
    """A step whose wait ended (a timeout) leaves its reply and its frame on the step channel. A 640 x 480
    frame (2 MB) is more than the socket holds, so the sim's physics thread waits in its send until somebody
    reads it. The next reset needs that thread, and the env drains the channel while it waits (its watchdog);
    without that, the reset would wait out its timeout (here 30 s)."""
    import time

    env = gym.make("binpick_sim/FrankaPosition-v0", backend="ros", observation="image", step_channel=True)
    try:
        backend = env.unwrapped.backend
        env.reset(seed=0)
        assert env.unwrapped.config.camera.width * env.unwrapped.config.camera.height >= 640 * 480
        backend.channel.send([backend.request, 0, 0])  # answered already: its reply and frame are left unread
        backend.TIMEOUT = 30.0
        start = time.monotonic()
        env.reset(seed=1)
        assert time.monotonic() - start < 20
        observation, *_ = env.step(env.action_space.sample())
        assert observation["rgb"].shape[:2] == (env.unwrapped.config.camera.height, env.unwrapped.config.camera.width)
    finally:
        env.close()


# --- gripper_open follows the fingers' command; a zero delta holds the arm (issue 13, items 5, 6) ---
def state_env(env_id, **kwargs):
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
