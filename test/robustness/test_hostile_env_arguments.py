"""A gym env's arguments go through the scene file's own checks (issue 53): every way in to a config (the
file, gym kwargs, a camera preset, a scene mode, ROS parameters) is `config.with_changes` / `replaced`, so
a value the file would refuse is refused here too, naming its key, before anything is built. Before, the env
changed its config with dataclasses.replace: a 100000 x 100000 camera was accepted and reset.
"""
from __future__ import annotations

import gymnasium as gym
import pytest

import binpick_sim.envs  # noqa: F401  (registers the ids)

CASES = [
    ({"observation": "image", "camera_size": (100000, 100000)}, "camera.width: must be from 1 to 4096"),
    ({"observation": "image", "camera_size": (3000, 3000)}, "camera.width: width x height must be at most"),
    ({"observation": "image", "camera_size": (0, 64)}, "camera.width: must be > 0 pixels"),
    ({"camera_size": (2 ** 63, 64)}, "camera.width: must be from 1 to 4096"),
    ({"camera_size": (1e308, 64)}, "camera.width: expected an integer"),
    ({"camera_size": (64, float("nan"))}, "camera.height: expected an integer"),
    ({"camera_size": (64,)}, "camera_size must be (width, height)"),
    ({"camera_size": "64x64"}, "camera_size must be (width, height)"),
    ({"renderer": "vulkan"}, "simulation.renderer: expected one of"),
    ({"camera_preset": "wrist"}, "camera_preset must be one of"),
]


@pytest.mark.parametrize("arguments, says", CASES, ids=[says.split(":")[0] + "-" + str(i) for i, (_, says)
                                                        in enumerate(CASES)])
def test_an_env_argument_the_scene_file_would_refuse_is_refused_naming_its_key(arguments, says):
    with pytest.raises(ValueError, match=says.replace("(", r"\(").replace(")", r"\)")):
        gym.make("binpick_sim/FrankaDelta-v0", **arguments)


def test_a_scene_mode_goes_through_the_same_checks():
    env = gym.make("binpick_sim/FrankaDelta-v0", observation="state")
    try:
        with pytest.raises(ValueError, match="unknown scene mode"):
            env.unwrapped.load_scene("everything")
        env.unwrapped.load_scene("test")  # the scene file's own object_set values pass
        assert env.unwrapped.config.scene.object_set == "test"
    finally:
        env.close()


@pytest.mark.parametrize("seed, says", [(2 ** 63, "seed: must be from 0 to"), (True, "seed: expected an integer"),
                                        (1.5, "seed: expected an integer")])
def test_a_reset_seed_goes_through_the_scene_files_check_on_either_backend(seed, says):
    """The ROS backend's seed is the world node's int64 parameter; the direct backend's numpy generator would
    take any integer: both refuse what the scene file's `simulation.seed` would (MAX_SEED), naming it."""
    env = gym.make("binpick_sim/FrankaDelta-v0", observation="state")
    try:
        with pytest.raises(ValueError, match=says):
            env.reset(seed=seed)
        env.reset(seed=2 ** 63 - 1)  # the largest one passes
    finally:
        env.close()
