"""What a learner needs from the envs (issue 27): the privileged state (robot, objects, bins) in a fixed
layout on both backends, dense and sparse rewards, `info["is_success"]`, and a goal-conditioned env whose
`compute_reward` relabels batches as HER does."""
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import binpick_sim.envs  # noqa: F401  (registers the ids)
from binpick_sim.envs import ENV_IDS, GOAL_ENV_IDS
from binpick_sim.envs.goal import DISTANCE_THRESHOLD
from binpick_sim.envs.privileged_observation import BIN_NAMES, OBJECT_FIELDS, ROBOT_FIELDS
from binpick_sim.envs.scripted import run_episode
from env_helpers import SMALL_CAMERA, make

DELTA = "binpick_sim/FrankaDelta-v0"
LIFT = "binpick_sim/FrankaLift-v0"


def checked(env):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # recommendations about unbounded, unnormalised spaces
        check_env(env.unwrapped, skip_render_check=True)


# --- 1. privileged state ------------------------------------------------------------------------
@pytest.mark.parametrize("observation", ["privileged", "state_dict"])
@pytest.mark.parametrize("env_id", [DELTA, *(pytest.param(i, marks=pytest.mark.slow) for i in sorted(ENV_IDS)
                                             if i != DELTA)])
def test_privileged_observations_pass_the_checker(env_id, observation):
    env = make(env_id, observation=observation)
    try:
        checked(env)
    finally:
        env.close()


def test_the_privileged_state_holds_the_objects_and_bins_as_the_world_has_them():
    env = make(DELTA, observation="state_dict")
    try:
        observation, _ = env.reset(seed=3)
        sim = env.unwrapped.backend.sim
        slots = env.unwrapped.config.scene.pick_bin.max_objects
        assert observation["object_position"].shape == (slots, 3) and observation["object_present"].shape == (slots,)
        client = sim.world.client
        in_play = {obj.index: obj for obj in sim.scene.objects}
        assert 0 < len(in_play) < slots  # seed 3: some slots empty
        for k in range(slots):
            if k not in in_play:
                assert observation["object_present"][k] == 0
                assert not observation["object_position"][k].any() and not observation["object_type"][k].any()
                continue
            position, orientation = client.getBasePositionAndOrientation(in_play[k].body)
            linear, angular = client.getBaseVelocity(in_play[k].body)
            assert observation["object_present"][k] == 1
            np.testing.assert_array_equal(observation["object_position"][k], np.float32(position))
            np.testing.assert_array_equal(observation["object_orientation"][k], np.float32(orientation))
            np.testing.assert_array_equal(observation["object_linear_velocity"][k], np.float32(linear))
            np.testing.assert_array_equal(observation["object_angular_velocity"][k], np.float32(angular))
            assert observation["object_type"][k].sum() == 1
            extent = observation["object_size"][k].max()  # the scene's objects: largest extent in its range
            low, high = env.unwrapped.config.scene.object_size_range
            assert low * 0.99 <= extent <= high * 1.01
        config = env.unwrapped.config.scene
        np.testing.assert_array_equal(observation["bin_position"],
                                      np.float32([getattr(config, name).position for name in BIN_NAMES]))
        ee_position, _ = sim.arm.ee_pose()
        np.testing.assert_array_equal(observation["ee_position"], np.float32(ee_position))
        assert observation["gripper_open"][0] == 1.0
        # a grabbed (removed) object's slot empties; the others stay where they were
        gone = min(in_play)
        sim.scene.remove_object(in_play[gone].name)
        observation, *_ = env.step(np.array([0, 0, 0, 0, -1], np.float32))
        assert observation["object_present"][gone] == 0 and not observation["object_position"][gone].any()
        assert observation["object_present"].sum() == len(in_play) - 1
        assert observation["gripper_open"][0] == 0.0
    finally:
        env.close()


def test_the_flat_privileged_vector_is_the_dict_in_the_documented_order():
    flat, named = make(DELTA, observation="privileged"), make(DELTA, observation="state_dict")
    try:
        vector, _ = flat.reset(seed=4)
        values, _ = named.reset(seed=4)
        slots = flat.unwrapped.config.scene.pick_bin.max_objects
        robot = sum(w for _, w in ROBOT_FIELDS)
        per_object = sum(w for _, w in OBJECT_FIELDS)
        assert vector.shape == flat.observation_space.shape == (robot + slots * per_object + 7 * len(BIN_NAMES),)
        np.testing.assert_array_equal(vector[:9], values["joint_positions"])
        np.testing.assert_array_equal(vector[18:21], values["ee_position"])
        for k in (0, slots - 1):
            block = vector[robot + k * per_object: robot + (k + 1) * per_object]
            np.testing.assert_array_equal(block[:3], values["object_position"][k])
            np.testing.assert_array_equal(block[3:7], values["object_orientation"][k])
            assert block[-1] == values["object_present"][k]
        np.testing.assert_array_equal(vector[-7:-4], values["bin_position"][-1])  # pick_bin, last by name
    finally:
        flat.close()
        named.close()


def test_bad_observation_and_reward_type_are_refused():
    with pytest.raises(ValueError, match="reward_type"):
        make(DELTA, reward_type="medium")
    with pytest.raises(ValueError, match="observation"):
        make(DELTA, observation="privileged_dict")
    with pytest.raises(ValueError, match="observation"):
        make(LIFT, observation="state")


def episode(env_id, backend, actions, seed=5, **kwargs):
    env = make(env_id, backend, **kwargs)
    try:
        observation, info = env.reset(seed=seed)
        steps = [(observation, None, info)]
        for action in actions:
            observation, reward, _, _, info = env.step(action)
            steps.append((observation, reward, info))
        return steps
    finally:
        env.close()


def assert_same_observations(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    else:
        np.testing.assert_array_equal(a, b)


@pytest.mark.slow
@pytest.mark.parametrize("env_id, observation", [(DELTA, "state_dict"), ("binpick_sim/FrankaVelocity-v0", "privileged"),
                                                 (LIFT, "privileged")])
def test_the_privileged_state_is_the_same_on_both_backends(env_id, observation):
    """Exactly: the task node sends the state as JSON, whose floats come back bit for bit."""
    space = gym.make(env_id, observation=observation).action_space
    space.seed(11)
    actions = [space.sample() for _ in range(6)]
    direct = episode(env_id, "direct", actions, observation=observation, reward_type="dense")
    ros = episode(env_id, "ros", actions, observation=observation, reward_type="dense")
    assert len(direct) == len(ros)
    for (obs_d, reward_d, info_d), (obs_r, reward_r, info_r) in zip(direct, ros):
        assert_same_observations(obs_d, obs_r)
        assert reward_d == reward_r and info_d == info_r


@pytest.mark.slow
@pytest.mark.parametrize("env_id, observation", [(DELTA, "state_dict"), (LIFT, "privileged")])
def test_privileged_observations_pass_the_checker_over_ros(env_id, observation):
    env = make(env_id, "ros", observation=observation)
    try:
        checked(env)
    finally:
        env.close()


@pytest.mark.slow
def test_over_ros_the_privileged_state_is_sent_only_to_envs_that_read_it():
    """The task node reads every object's state for a reply only when the env needs it (observation
    `privileged` / `state_dict`, or the dense reward): a plain `state` env's replies carry none, and
    asking its observation for it is refused, not answered from nothing."""
    down = np.array([0, 0, -1, 0, 1], np.float32)
    direct = episode(DELTA, "direct", [down] * 2, observation="state", reward_type="dense")
    plain = make(DELTA, "ros", observation="state")
    dense = make(DELTA, "ros", observation="state", reward_type="dense")
    try:
        rewards = []
        for env in (plain, dense):
            env.reset(seed=5)
            rewards.append([env.step(down)[1] for _ in range(2)])
        assert "privileged" not in plain.unwrapped.backend._reply()
        with pytest.raises(RuntimeError, match="without the privileged state"):
            plain.unwrapped.last.privileged_state()
        assert dense.unwrapped.backend._reply()["privileged"]["objects"]
        assert rewards[1] == [r for _, r, _ in direct[1:]] and rewards[1] != rewards[0]
    finally:
        plain.close()
        dense.close()


# --- 2. rewards ---------------------------------------------------------------------------------
def test_the_dense_reward_is_the_task_reward_plus_the_documented_shaping():
    """Minus the distance from the grasp point to the nearest object, minus that object's height still
    missing to the grab height; moving down toward the pile raises it."""
    down = np.array([0, 0, -1, 0, 1], np.float32)
    sparse = episode(DELTA, "direct", [down] * 4, observation="state", reward_type="sparse")
    env = make(DELTA, observation="state", reward_type="dense")
    try:
        env.reset(seed=5)
        dense = []
        for k in range(4):
            _, reward, _, _, _ = env.step(down)
            sim = env.unwrapped.backend.sim
            ee, _ = sim.arm.ee_pose()
            positions = [sim.scene.object_position(o) for o in sim.scene.objects]
            nearest = min(positions, key=lambda p: np.linalg.norm(p - ee))
            lift = max(b.top for b in sim.scene.bins) + max(b.config.size[2] for b in sim.scene.bins)
            expected = sparse[k + 1][1] - np.linalg.norm(nearest - ee) - max(0.0, lift - nearest[2])
            assert reward == pytest.approx(expected, abs=1e-12)
            dense.append(reward)
    finally:
        env.close()
    assert all(r == 0.0 for _, r, _ in sparse[1:])  # nothing grabbed, nothing touched: the task pays 0
    assert dense[-1] > dense[0] and all(r < 0 for r in dense)


@pytest.mark.parametrize("env_id", sorted(ENV_IDS) + sorted(GOAL_ENV_IDS))
def test_every_env_reports_is_success(env_id):
    env = make(env_id, observation="privileged")
    try:
        _, info = env.reset(seed=2)
        assert info["is_success"] is False
        _, _, _, _, info = env.step(np.zeros(env.action_space.shape, np.float32))
        assert info["is_success"] is False
    finally:
        env.close()


def test_a_grab_is_a_success():
    env = make(DELTA, observation="state_dict", reward_type="dense")
    try:
        info = run_episode(env, seed=7)
        assert info["grabs"] == 1 and info["is_success"] is True
    finally:
        env.close()


# --- 3. goal-conditioned ------------------------------------------------------------------------
@pytest.mark.parametrize("reward_type", ["sparse", pytest.param("dense", marks=pytest.mark.slow)])
def test_the_goal_env_passes_the_checker(reward_type):
    env = make(LIFT, reward_type=reward_type)
    try:
        assert set(env.observation_space.spaces) == {"observation", "achieved_goal", "desired_goal"}
        checked(env)
    finally:
        env.close()


def test_goals_come_from_the_seed_and_lie_in_the_pick_bin_below_the_grab_height():
    env = make(LIFT)
    try:
        goals = {}
        for seed in (1, 2, 1):
            observation, info = env.reset(seed=seed)
            goals.setdefault(seed, []).append(observation["desired_goal"])
            sim = env.unwrapped.backend.sim
            chosen = sim.scene.object_named(info["chosen_object"])
            np.testing.assert_array_equal(observation["achieved_goal"], np.float32(sim.scene.object_position(chosen)))
            pick = sim.scene.pick_bin
            local = pick.to_local(observation["desired_goal"])
            low, high = pick.interior()
            assert np.all(local[:2] > low[:2]) and np.all(local[:2] < high[:2])
            assert low[2] < local[2] < env.unwrapped.backend.task.lift_height() - pick.position[2]
        np.testing.assert_array_equal(goals[1][0], goals[1][1])
        assert not np.array_equal(goals[1][0], goals[2][0])
    finally:
        env.close()


@pytest.mark.parametrize("reward_type", ["sparse", "dense"])
def test_compute_reward_over_a_batch_equals_the_step_rewards(reward_type):
    """HER's requirement: relabelling a batch of stored transitions gives what the steps gave."""
    env = make(LIFT, reward_type=reward_type)
    try:
        env.reset(seed=6)
        env.action_space.seed(6)
        achieved, desired, infos, rewards = [], [], [], []
        for _ in range(8):
            observation, reward, _, _, info = env.step(env.action_space.sample())
            achieved.append(observation["achieved_goal"])
            desired.append(observation["desired_goal"])
            infos.append(info)
            rewards.append(reward)
        batch = env.unwrapped.compute_reward(np.array(achieved), np.array(desired), np.array(infos))
        assert batch.shape == (8,)
        np.testing.assert_array_equal(batch, np.float32(rewards))
        # relabelled with the achieved goal itself: success, the best reward
        assert not env.unwrapped.compute_reward(np.array(achieved), np.array(achieved), infos).any()
    finally:
        env.close()


def test_success_and_sparse_reward_agree_at_the_threshold():
    env = make(LIFT).unwrapped
    try:
        goal = np.zeros((3, 3), np.float32)
        achieved = np.float32([[0, 0, 0], [DISTANCE_THRESHOLD * 0.9, 0, 0], [DISTANCE_THRESHOLD * 1.1, 0, 0]])
        np.testing.assert_array_equal(env.compute_reward(achieved, goal, {}), [0, 0, -1])
    finally:
        env.close()


# --- 5. the scripted picker on held-out seeds ---------------------------------------------------
def test_the_picker_clears_the_walls_on_held_out_seeds_it_used_to_fail():
    """Seeds whose every object lay near a wall: the picker's fingers came down on the rim (a bin
    collision ends the episode). It now turns the gripper or moves the grasp point along the closing
    direction to keep the fingers inside. (bench/learnability.py measures 100 held-out seeds.)"""
    env = make(DELTA, observation="state")
    try:
        for seed in (1005, 1008, 1010):
            info = run_episode(env, seed=seed)
            assert info["grabs"] == 1 and not info["bin_collision"], (seed, info)
    finally:
        env.close()
