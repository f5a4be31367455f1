"""bench.her's evaluation (issue 27): what it counts as a success, on the real goal-conditioned env with stub
policies. No learner (torch and Stable-Baselines3 are the requirements-her.txt extra, which `evaluate` does
not import); short episodes on the direct backend."""
import gymnasium as gym
import numpy as np
import pytest

import binpick_sim.envs  # noqa: F401
from binpick_sim.envs.goal import DISTANCE_THRESHOLD, FrankaLiftEnv
from bench import her

STEPS = 4
SEEDS = (1000, 1001)
AWAY = np.array([0.0, 0.0, 5 * DISTANCE_THRESHOLD])  # a goal this far above the object is not reached


@pytest.fixture(scope="module")
def env():
    env = gym.make(her.ENV, max_episode_steps=STEPS)
    yield env
    env.close()


def counts(result):
    return {k: result[k] for k in ("success", "success_any", "mean_return", "mean_length")}


def still(env):
    return lambda _observation: np.zeros(env.action_space.shape, np.float32)


def test_goal_where_the_object_lies_is_a_success_every_step(env, monkeypatch):
    monkeypatch.setattr(FrankaLiftEnv, "_sample_goal", lambda self, state: self.achieved.copy())
    result = her.evaluate(env, still(env), SEEDS)
    assert counts(result) == {"success": 1.0, "success_any": 1.0, "mean_return": 0.0, "mean_length": STEPS}
    assert result["final_distance"] < DISTANCE_THRESHOLD and result["moved"] == 0.0 and result["bin_contact"] == 0.0


def test_goal_away_from_the_object_is_never_a_success(env, monkeypatch):
    monkeypatch.setattr(FrankaLiftEnv, "_sample_goal", lambda self, state: self.achieved + AWAY)
    result = her.evaluate(env, still(env), SEEDS)
    assert counts(result) == {"success": 0.0, "success_any": 0.0, "mean_return": -STEPS, "mean_length": STEPS}
    assert result["final_distance"] == pytest.approx(AWAY[2], abs=1e-3)


def test_success_counts_at_the_episodes_last_step_and_success_any_at_any_step(env, monkeypatch):
    """The goal moves away after the first two steps: a success on the way, none where the episode ends."""
    monkeypatch.setattr(FrankaLiftEnv, "_sample_goal", lambda self, state: self.achieved.copy())
    calls = []

    def act(observation):
        calls.append(1)
        if len(calls) % STEPS == 3:  # before the third step of each episode
            env.unwrapped.goal = env.unwrapped.achieved + AWAY
        return np.zeros(env.action_space.shape, np.float32)

    result = her.evaluate(env, act, SEEDS)
    assert counts(result) == {"success": 0.0, "success_any": 1.0, "mean_return": -2.0, "mean_length": STEPS}
