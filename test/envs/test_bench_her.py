"""bench.her (issues 27, 55): what its evaluation counts as a success, on the real goal-conditioned env with stub
policies (no learner: torch and Stable-Baselines3 are the requirements-her.txt extra, which `evaluate` does not
import; short episodes on the direct backend); how it reads the Reach comparison off two curves; and, where the
extra is installed, its whole plumbing on a tiny budget (the curves and her.json written, the options taken)."""
import importlib.util
import json

import gymnasium as gym
import numpy as np
import pytest

import binpick_sim.envs  # noqa: F401
from binpick_sim.envs.goal import DISTANCE_THRESHOLD, FrankaLiftEnv
from bench import her

LIFT = "binpick_sim/FrankaLift-v0"
STEPS = 4
SEEDS = (1000, 1001)
AWAY = np.array([0.0, 0.0, 5 * DISTANCE_THRESHOLD])  # a goal this far above the object is not reached


@pytest.fixture(scope="module")
def env():
    env = gym.make(LIFT, max_episode_steps=STEPS)
    yield env
    env.close()


def counts(result):
    return {k: result[k] for k in ("success", "success_any", "mean_return", "mean_length")}


def still(env):
    return lambda _observation: np.zeros(env.action_space.shape, np.float32)


def test_goal_where_the_object_lies_is_a_success_every_step(env, monkeypatch):
    monkeypatch.setattr(FrankaLiftEnv, "_sample_goal", lambda self: self.achieved.copy())
    result = her.evaluate(env, still(env), SEEDS)
    assert counts(result) == {"success": 1.0, "success_any": 1.0, "mean_return": 0.0, "mean_length": STEPS}
    assert result["final_distance"] < DISTANCE_THRESHOLD and result["moved"] == 0.0 and result["bin_contact"] == 0.0


def test_goal_away_from_the_object_is_never_a_success(env, monkeypatch):
    monkeypatch.setattr(FrankaLiftEnv, "_sample_goal", lambda self: self.achieved + AWAY)
    result = her.evaluate(env, still(env), SEEDS)
    assert counts(result) == {"success": 0.0, "success_any": 0.0, "mean_return": -STEPS, "mean_length": STEPS}
    assert result["final_distance"] == pytest.approx(AWAY[2], abs=1e-3)


def test_success_counts_at_the_episodes_last_step_and_success_any_at_any_step(env, monkeypatch):
    """The goal moves away after the first two steps: a success on the way, none where the episode ends."""
    monkeypatch.setattr(FrankaLiftEnv, "_sample_goal", lambda self: self.achieved.copy())
    calls = []

    def act(observation):
        calls.append(1)
        if len(calls) % STEPS == 3:  # before the third step of each episode
            env.unwrapped.goal = env.unwrapped.achieved + AWAY
        return np.zeros(env.action_space.shape, np.float32)

    result = her.evaluate(env, act, SEEDS)
    assert counts(result) == {"success": 0.0, "success_any": 1.0, "mean_return": -2.0, "mean_length": STEPS}


def curve(*successes, every=500):
    return [{"steps": k * every, "success": s} for k, s in enumerate(successes)]


def test_the_reach_comparison_is_the_steps_each_first_reached_the_target():
    assert her.steps_to(curve(0.0, 0.5, 0.95, 0.9, 1.0)) == 1000  # the first at or above it, even if it dips
    assert her.steps_to(curve(0.0, 0.9)) is None
    runs = {"FrankaReach-v0": {"steps_to_target": 3000}, "PandaReach-v3": {"steps_to_target": 2500}}
    assert her.compare_reach(runs) == {"target": 0.95, "FrankaReach-v0": 3000, "PandaReach-v3": 2500, "ratio": 1.2}
    runs["PandaReach-v3"]["steps_to_target"] = None
    assert her.compare_reach(runs)["ratio"] is None
    assert her.compare_reach({"FrankaReach-v0": runs["FrankaReach-v0"]}) is None  # not both in the run


NO_LEARNER = importlib.util.find_spec("stable_baselines3") is None or importlib.util.find_spec("torch") is None


@pytest.mark.slow
@pytest.mark.skipif(NO_LEARNER, reason="needs the HER extra: pip install -r requirements-her.txt (make bench-her installs it)")
def test_bench_her_runs_the_chosen_envs_and_writes_the_curves(tmp_path):
    """A tiny budget (no gradient step: SAC's first 1,000 steps are random), two held-out episodes."""
    code = her.main(["--envs", "FrankaReach-v0", "FrankaLift-v0:one_object", "--steps", "60", "--long-steps", "80",
                     "--eval-every", "30", "--long-eval-every", "40", "--eval-episodes", "2", "--out", str(tmp_path)])
    assert code == 0
    report = json.loads((tmp_path / "her.json").read_text())
    reach, lift = report["runs"]["FrankaReach-v0"], report["runs"]["FrankaLift-v0:one_object"]
    assert [r["steps"] for r in reach["curve"]] == [0, 30, 60] and [r["steps"] for r in lift["curve"]] == [0, 40, 80]
    assert reach["eval_seeds"] == [1000, 1001] and lift["env_kwargs"] == {"one_object": True}
    assert reach["episode_steps"] == 50 and lift["hyperparameters"]["gamma"] == 0.95 and lift["her"]["n_sampled_goal"] == 4
    assert reach["normalized_observations"] and lift["normalized_observations"]
    assert report["reach_comparison"] is None  # PandaReach-v3 did not run
    assert (tmp_path / "her_frankareach_v0.png").stat().st_size > 0
    assert (tmp_path / "her_frankalift_v0_one_object.png").stat().st_size > 0


@pytest.mark.skipif(NO_LEARNER, reason="needs the HER extra: pip install -r requirements-her.txt (make bench-her installs it)")
def test_the_policy_is_evaluated_on_observations_normalised_as_the_learner_saw_them():
    """`learner_view`: the learner steps VecNormalize over the env, every key of the goal Dict normalised by the
    running statistics of the steps so far; the evaluation hands the policy an observation normalised by the
    same statistics (not its raw metres); `normalize=False`: the env itself, observations as they are."""
    env = gym.make("binpick_sim/FrankaReach-v0", max_episode_steps=STEPS)
    try:
        vec, seen = her.learner_view(env, True)
        vec.reset()
        for _ in range(3 * STEPS):
            vec.step(np.array([env.action_space.sample()]))
        raw, _ = env.reset(seed=SEEDS[0])
        shown = seen(raw)
        for key, value in raw.items():
            statistics = vec.obs_rms[key]
            assert statistics.count > 3 * STEPS  # the steps' observations were counted
            expected = np.clip((value - statistics.mean) / np.sqrt(statistics.var + vec.epsilon), -10, 10)
            np.testing.assert_allclose(shown[key], expected, rtol=1e-5)
            assert np.abs(shown[key] - value).max() > 0.1  # not the metres themselves
        same, identity = her.learner_view(env, False)
        assert same is env and identity(raw) is raw
    finally:
        env.close()


def test_a_curriculum_shapes_the_training_env_alone():
    """`FrankaLift-v0:one_object:grasped_starts`: the training env starts half its episodes with the object
    grasped; the evaluated one is the task's own (what the held-out success is measured on)."""
    task = her.TASKS["FrankaLift-v0:one_object:grasped_starts"]
    training, evaluated = task.make(training=True), task.make()
    try:
        assert (training.unwrapped.grasped_starts, evaluated.unwrapped.grasped_starts) == (0.5, 0.0)
        assert training.unwrapped.one_object and evaluated.unwrapped.one_object
    finally:
        training.close()
        evaluated.close()


def test_the_training_radius_tightens_as_the_learner_succeeds_down_to_the_evaluated_one():
    """bench.her.Tightening: after TIGHTEN_AFTER episodes with TIGHTEN_AT success, TIGHTEN_BY narrower; never below
    the evaluated env's radius; nothing where the two are the same."""
    from types import SimpleNamespace

    training, evaluated = SimpleNamespace(distance_threshold=0.05), SimpleNamespace(distance_threshold=0.02)
    logged = []
    radius = her.Tightening(training, evaluated, logged.append)
    for episode in range(her.TIGHTEN_AFTER - 1):
        radius.after_step([True], [{"is_success": True}], episode)
    radius.after_step([False], [{"is_success": True}], 0)  # not an episode's end: not counted
    assert training.distance_threshold == 0.05
    radius.after_step([True], [{"is_success": True}], 99)
    assert training.distance_threshold == pytest.approx(0.05 - her.TIGHTEN_BY) and "4.5 cm" in logged[-1]
    for _ in range(her.TIGHTEN_AFTER):  # failures: stays
        radius.after_step([True], [{"is_success": False}], 0)
    assert training.distance_threshold == pytest.approx(0.045)
    for _ in range(20 * her.TIGHTEN_AFTER):
        radius.after_step([True], [{"is_success": True}], 0)
    assert training.distance_threshold == 0.02
    same = SimpleNamespace(distance_threshold=0.02)
    her.Tightening(same, evaluated, logged.append).after_step([True] * 100, [{"is_success": True}] * 100, 0)
    assert same.distance_threshold == 0.02
