"""The Gymnasium contract in full, as an RL researcher's tools use it: the checker with default arguments
on a headless machine, TimeLimit owning the episode length, pickling, refused misspelled arguments,
RecordVideo, and async vector envs on both backends from a plain script."""
from __future__ import annotations

import importlib.util
import os
import pickle
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import cloudpickle
import gymnasium as gym
import numpy as np
import pytest
import yaml
from gymnasium.utils.env_checker import check_env

import binpick_sim.envs  # noqa: F401  (registers the ids)
from binpick_sim.envs import ENV_IDS
from binpick_sim.paths import default_config
from env_helpers import SMALL_CAMERA

REPO = Path(__file__).resolve().parents[2]


def make(env_id, **kwargs):
    kwargs.setdefault("camera_size", SMALL_CAMERA)
    return gym.make(env_id, **kwargs)


@pytest.fixture
def headless(monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)


# --- check_env, headless -------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("env_id", sorted(ENV_IDS))
def test_check_env_passes_every_registered_id_with_default_arguments_headless(env_id, headless):
    """Untouched: gym.make(id) and check_env with its render checks (every render mode the env offers)."""
    env = gym.make(env_id)
    try:
        assert env.unwrapped.metadata["render_modes"] == ["rgb_array", "depth_array"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # recommendations about the seed's unnormalised spaces
            check_env(env.unwrapped)
    finally:
        env.close()


def test_human_rendering_says_why_it_cannot_open_a_window_headless(headless):
    with pytest.raises(ValueError, match="needs a display, and neither DISPLAY nor WAYLAND_DISPLAY is set"):
        make("binpick_sim/FrankaDelta-v0", render_mode="human")


def test_human_rendering_is_offered_where_a_display_exists(monkeypatch):
    monkeypatch.setenv("DISPLAY", ":0")
    env = make("binpick_sim/FrankaDelta-v0", observation="state")  # no window: render_mode None
    try:
        assert env.unwrapped.metadata["render_modes"] == ["rgb_array", "depth_array", "human"]
    finally:
        env.close()


# --- episode length --------------------------------------------------------------------------------
@pytest.fixture
def one_step_scene(tmp_path):
    """The default scene with one physics step per env step, so that 200 steps cost little."""
    data = yaml.safe_load(default_config().read_text())
    data["task"]["steps_per_action"] = 1
    scene = tmp_path / "scene.yaml"
    scene.write_text(yaml.safe_dump(data))
    return scene


def truncated_at(env, most: int) -> int | None:
    env.reset(seed=0)
    zero = np.zeros(env.action_space.shape, np.float32)
    for step in range(1, most + 1):
        _, _, terminated, truncated, _ = env.step(zero)
        assert not terminated
        if truncated:
            return step
    return None


@pytest.mark.slow
def test_timelimit_owns_the_episode_length_and_the_make_argument_wins(one_step_scene):
    kwargs = dict(config_file=one_step_scene, observation="state")
    env = make("binpick_sim/FrankaVelocity-v0", **kwargs)
    try:
        assert binpick_sim.envs.MAX_EPISODE_STEPS == 200 == env.spec.max_episode_steps
        assert isinstance(env, gym.wrappers.TimeLimit)
        assert truncated_at(env, 201) == 200
    finally:
        env.close()
    env = make("binpick_sim/FrankaVelocity-v0", max_episode_steps=203, **kwargs)
    try:
        assert env.spec.max_episode_steps == 203
        assert truncated_at(env, 204) == 203
    finally:
        env.close()
    env = make("binpick_sim/FrankaVelocity-v0", max_episode_steps=-1, **kwargs)  # Gymnasium's "no limit"
    try:
        assert truncated_at(env, 205) is None
    finally:
        env.close()


# --- pickling ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dumps, loads", [(pickle.dumps, pickle.loads), (cloudpickle.dumps, cloudpickle.loads)])
def test_an_env_pickles_as_its_constructor_arguments(dumps, loads):
    """Before and after a reset (the world holds locks and a PyBullet client): the copy is a new env made
    with the same arguments and spec, and gives the same episode for the same seed."""
    env = make("binpick_sim/FrankaDelta-v0", observation="state", dv=0.01)
    copies = [loads(dumps(env))]
    try:
        first, _ = env.reset(seed=3)
        step = env.step(np.full(5, 0.5, np.float32))
        copies.append(loads(dumps(env)))
        for copy in copies:
            assert copy.spec == env.spec and copy.unwrapped.dv == 0.01
            assert copy.unwrapped._init_kwargs == env.unwrapped._init_kwargs
            assert copy.unwrapped.last is None  # a new env: nothing of the original's episode
            again, _ = copy.reset(seed=3)
            assert all(np.array_equal(first[k], again[k]) for k in first)
            then = copy.step(np.full(5, 0.5, np.float32))
            assert all(np.array_equal(step[0][k], then[0][k]) for k in step[0]) and step[1:] == then[1:]
    finally:
        env.close()
        for copy in copies:
            copy.close()


# --- normalized actions for the joint envs (issue 55) ----------------------------------------------------
@pytest.mark.parametrize("env_id", ["binpick_sim/FrankaPosition-v0", "binpick_sim/FrankaVelocity-v0"])
def test_normalized_actions_map_minus_one_to_one_onto_the_joints_limits(env_id):
    """`normalized_actions=True`: the same episode as the seed's action in joint units, and Gymnasium's checker
    has nothing to say about the action space any more (it does about the seed's)."""
    plain = make(env_id, observation="state")
    normalized = make(env_id, observation="state", normalized_actions=True)
    try:
        assert normalized.action_space == gym.spaces.Box(-1.0, 1.0, (9,), np.float32)
        joints = plain.action_space
        unit = np.array([-1, 1, 0, 0.5, -0.5, 0.25, -1, 1, 0], np.float32)
        low, high = joints.low.astype(float), joints.high.astype(float)
        mapped = low + (unit.astype(float) + 1) * (high - low) / 2
        assert mapped[0] == low[0] and mapped[1] == high[1]
        plain.reset(seed=2)
        normalized.reset(seed=2)
        for _ in range(2):
            a, b = plain.step(mapped), normalized.step(unit)
            assert all(np.array_equal(a[0][k], b[0][k]) for k in a[0]) and a[1:] == b[1:]
        said = {}
        for name, env in (("plain", plain), ("normalized", normalized)):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                check_env(env.unwrapped, skip_render_check=True)
            said[name] = [str(w.message) for w in caught if "action space" in str(w.message).lower()]
        assert said["plain"] and not said["normalized"], said
    finally:
        plain.close()
        normalized.close()


# --- arguments ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("env_id", sorted(ENV_IDS))
def test_unknown_arguments_raise_a_type_error_naming_the_valid_ones(env_id):
    with pytest.raises(TypeError, match=r"unknown argument\(s\) 'obsevation'; valid arguments: .*\bobservation\b"):
        gym.make(env_id, obsevation="rgb")
    message = str(pytest.raises(TypeError, gym.make, env_id, rendr_mode="rgb_array").value)
    assert "render_mode" in message and "camera_size" in message
    assert ("downsample_height" in message) == (env_id == "binpick_sim/FrankaDelta-v0")


def test_ros_options_are_refused_on_the_direct_backend():
    for option in ({"namespace": "/mine"}, {"step_channel": True}):
        with pytest.raises(ValueError, match="namespace, sim_parameters, step_channel are options of backend='ros'"):
            make("binpick_sim/FrankaDelta-v0", **option)
    with pytest.raises(ValueError, match="backend must be one of"):
        make("binpick_sim/FrankaDelta-v0", backend="Direct")


# --- RecordVideo -------------------------------------------------------------------------------------
NO_MOVIEPY = importlib.util.find_spec("moviepy") is None


@pytest.mark.skipif(NO_MOVIEPY, reason="needs the video extra: pip install -r requirements-video.txt "
                                       "(make test installs it)")
@pytest.mark.parametrize("env_id, render_depth", [*((i, False) for i in sorted(ENV_IDS)),
                                                  ("binpick_sim/FrankaDelta-v0", True)])
def test_record_video_writes_a_video_of_each_env(env_id, render_depth, tmp_path):
    from moviepy import VideoFileClip

    env = make(env_id, observation="state", render_mode="rgb_array", render_depth=render_depth)
    videos = tmp_path / "videos"  # a folder RecordVideo makes (an existing one it warns about)
    env = gym.wrappers.RecordVideo(env, str(videos), episode_trigger=lambda episode: True, disable_logger=True)
    try:
        env.reset(seed=0)
        env.action_space.seed(0)
        for _ in range(4):
            env.step(env.action_space.sample())
    finally:
        env.close()  # writes the video of the episode under way
    video, = videos.glob("*.mp4")
    clip = VideoFileClip(str(video))
    try:
        width = SMALL_CAMERA[0] * (2 if render_depth else 1)
        assert tuple(clip.size) == (width, SMALL_CAMERA[1])
        frames = list(clip.iter_frames())
        assert len(frames) == 5  # the reset's frame and one per step
        assert max(float(np.std(f)) for f in frames) > 5  # a picture, not a blank
    finally:
        clip.close()


# --- async vector envs from a plain script ------------------------------------------------------------
VECTOR = textwrap.dedent("""
    import gymnasium as gym, numpy as np
    import binpick_sim.envs
    envs = gym.make_vec("binpick_sim/FrankaDelta-v0", num_envs=2, vectorization_mode="async",
                        backend={backend!r}, observation="state")
    observations, _ = envs.reset(seed=[1, 2])
    observations, rewards, _, _, _ = envs.step(np.zeros((2, 5), np.float32))
    print("stepped", observations["ee_position"].shape, rewards.shape, flush=True)
    envs.close()
""")

ROS_FIRST = textwrap.dedent("""
    import gymnasium as gym, numpy as np
    import binpick_sim.envs

    def main():
        env = gym.make("binpick_sim/FrankaDelta-v0", backend="ros", observation="state")  # ROS in this process
        env.reset(seed=0)
        try:
            kwargs = {{}} if {context!r} is None else {{"vector_kwargs": {{"context": {context!r}}}}}
            envs = gym.make_vec("binpick_sim/FrankaDelta-v0", num_envs=2, vectorization_mode="async",
                                backend="ros", observation="state", **kwargs)
            try:
                envs.reset(seed=[1, 2])
                envs.step(np.zeros((2, 5), np.float32))
                print("stepped", flush=True)
            except Exception as exc:
                print("refused:", exc, flush=True)
            finally:
                envs.close()
        finally:
            env.close()

    if __name__ == "__main__":
        main()
""")


def run_script(script: str, tmp_path, timeout: float = 300) -> str:
    path = tmp_path / "script.py"
    path.write_text(script)
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=timeout,
                          cwd=tmp_path, env=os.environ.copy())
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["direct", "ros"])
def test_async_vector_envs_step_from_a_plain_script(backend, tmp_path):
    """Gymnasium's defaults (fork on Linux), no __main__ guard: the parent never starts ROS itself."""
    assert "stepped (2, 3) (2,)" in run_script(VECTOR.format(backend=backend), tmp_path)


@pytest.mark.slow
def test_a_ros_backend_forked_after_ros_started_is_refused_and_forkserver_works(tmp_path):
    """Forked from a process that runs a ROS env, a ROS backend would hang: it refuses at once, naming
    the fix, which works."""
    out = run_script(ROS_FIRST.format(context=None), tmp_path)
    assert "refused:" in out and "vector_kwargs={'context': 'forkserver'}" in out and "__main__" in out
    assert "stepped" in run_script(ROS_FIRST.format(context="forkserver"), tmp_path)
