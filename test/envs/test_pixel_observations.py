"""Learning from pixels (issue 27 item 4): the `pick_bin` camera preset shows every object with enough
pixels at the sizes learners use (64×64, 84×84), and the `rgbd` and `segmentation` observations of that
camera are the same on both backends and pass Gymnasium's checker."""
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import binpick_sim.envs  # noqa: F401  (registers the ids)
from binpick_sim.envs.cameras import pick_bin_camera, with_preset
from binpick_sim.cell.vision.labels import CELL, NOTHING, ROBOT

DELTA = "binpick_sim/FrankaDelta-v0"
SEEDS = (0, 1)
FEWEST_PIXELS = 6  # per object at 64×64; the scene file's camera shows most objects as 1-2 pixels there


def make(backend="direct", size=(64, 64), **kwargs):
    kwargs.setdefault("camera_preset", "pick_bin")
    kwargs.setdefault("observation", "segmentation")
    return gym.make(DELTA, backend=backend, camera_size=size, **kwargs)


def pixels_per_object(env, seeds=SEEDS) -> list[int]:
    """How many pixels of the segmentation observation show each object in play, over `seeds`."""
    counts = []
    for seed in seeds:
        observation, _ = env.reset(seed=seed)
        in_play = [obj.index for obj in env.unwrapped.backend.sim.scene.objects]
        assert in_play
        counts += [int((observation["segmentation"] == k).sum()) for k in in_play]
    return counts


@pytest.mark.parametrize("size", [(64, 64), (84, 84)])
def test_the_pick_bin_preset_shows_every_object_with_several_pixels(size):
    scale = size[0] * size[1] / 64 ** 2
    env, default = make(size=size), make(size=size, camera_preset=None)
    try:
        counts = pixels_per_object(env)
        assert min(counts) >= FEWEST_PIXELS * scale, counts
        # the scene file's camera, for comparison: the objects are specks there
        assert np.median(pixels_per_object(default, seeds=(1,))) < np.median(counts) / 4
    finally:
        env.close()
        default.close()


def test_segmentation_ids_are_the_privileged_slots_and_the_documented_codes():
    env = make()
    try:
        observation, _ = env.reset(seed=4)
        sim = env.unwrapped.backend.sim
        labels = set(np.unique(observation["segmentation"]).tolist())
        assert {obj.index for obj in sim.scene.objects} <= labels  # every object in view (the preset's point)
        assert labels <= {obj.index for obj in sim.scene.objects} | {NOTHING, ROBOT, CELL}
        assert observation["segmentation"].dtype == np.int32 and observation["rgb"].shape == (64, 64, 3)
    finally:
        env.close()


def test_the_preset_replaces_pose_and_lens_but_not_the_image_size():
    env = make(size=(84, 84))
    try:
        camera = env.unwrapped.config.camera
        preset = pick_bin_camera(env.unwrapped.config)
        assert (camera.width, camera.height) == (84, 84)
        assert (camera.position, camera.orientation_deg, camera.fov_deg) == (
            preset.position, preset.orientation_deg, preset.fov_deg)
    finally:
        env.close()
    with pytest.raises(ValueError, match="camera_preset"):
        with_preset(env.unwrapped.config, "wrist")
    with pytest.raises(ValueError, match="camera_preset"):
        make(camera_preset="wrist")


def test_rgbd_is_rgb_scaled_and_depth_capped_at_the_far_plane():
    rgbd, image = make(observation="rgbd"), make()
    try:
        stacked, _ = rgbd.reset(seed=2)
        separate, _ = image.reset(seed=2)
        assert stacked.shape == (64, 64, 4) and stacked.dtype == np.float32
        assert rgbd.observation_space.contains(stacked) and image.observation_space.contains(separate)
        np.testing.assert_array_equal(stacked[..., :3], separate["rgb"] / np.float32(255))
        far = rgbd.unwrapped.config.camera.far
        np.testing.assert_array_equal(stacked[..., 3], np.minimum(separate["depth"], np.float32(far)))
    finally:
        rgbd.close()
        image.close()


def checked(env):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # recommendations about unbounded, unnormalised spaces
        check_env(env.unwrapped, skip_render_check=True)


@pytest.mark.slow
def test_the_segmentation_observation_passes_the_checker():
    """(~12 s here: the checker resets the world several times; rgbd's space is checked over ROS below.)"""
    env = make(size=(32, 32))
    try:
        checked(env)
    finally:
        env.close()


@pytest.mark.slow
@pytest.mark.parametrize("step_channel", [False, True])
@pytest.mark.parametrize("observation", ["rgbd", "segmentation"])
def test_the_pixel_observations_are_the_same_on_both_backends_and_pass_the_checker_over_ros(observation,
                                                                                             step_channel):
    """Segmentation exactly; rgb within one intensity level (as the image mode's parity test). Over ROS both
    ways: the frames as the camera's topics, and on the step channel (labels included)."""
    actions = [np.array([1, 0, -1, 0, 1], np.float32)] * 3
    runs = []
    for backend in ("direct", "ros"):
        channel = {"step_channel": True} if backend == "ros" and step_channel else {}
        env = make(backend, observation=observation, size=(32, 32), **channel)
        try:
            if backend == "ros":
                checked(env)
            observations = [env.reset(seed=6)[0]] + [env.step(a)[0] for a in actions]
            runs.append(observations)
        finally:
            env.close()
    for direct, ros in zip(*runs):
        if observation == "rgbd":
            np.testing.assert_allclose(direct, ros, atol=1.01 / 255)
            np.testing.assert_array_equal(direct[..., 3], ros[..., 3])
        else:
            np.testing.assert_array_equal(direct["segmentation"], ros["segmentation"])
            np.testing.assert_array_equal(direct["depth"], ros["depth"])
            assert np.abs(direct["rgb"].astype(int) - ros["rgb"]).max() <= 1
