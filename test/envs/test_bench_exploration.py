"""bench.exploration (issue 55): what it counts as a touch and a move, with policies whose answer is known, on
the real goal envs (two short episodes each). The figures themselves (random policy, 50 episodes) are
`make bench`'s."""
import numpy as np

from bench import exploration

LIFT = "binpick_sim/FrankaLift-v0"


def still(env, observation):
    return np.zeros(env.action_space.shape, np.float32)


def push_the_object(env, observation):
    """Down to the floor 4 cm short of the chosen object along x for ten steps, then on along +x through it."""
    unwrapped = env.unwrapped
    target = observation["achieved_goal"] + [-0.04, 0.0, -0.05]
    if unwrapped.steps >= 10:
        target = unwrapped.last.ee_position + [unwrapped.dv, 0.0, 0.0]
    error = np.clip(target, *unwrapped.box) - unwrapped.last.ee_position
    return np.concatenate([np.clip(error / unwrapped.dv, -1, 1), [1.0]]).astype(np.float32)


def test_a_policy_that_never_moves_touches_and_moves_nothing():
    result = exploration.explore(LIFT, episodes=2, act=still, max_episode_steps=5, one_object=True)
    assert (result["touched"], result["moved"], result["mean_length"]) == (0.0, 0.0, 5.0)


def test_a_policy_that_goes_for_the_object_touches_and_moves_it():
    # seeds 6 and 7: the object (dropped anywhere with one_object) far enough from the wall the pusher comes down by
    # (in seed 3 it comes down on the object, and whether it drags it along is the contact's luck)
    result = exploration.explore(LIFT, episodes=2, seed=6, act=push_the_object, max_episode_steps=16, one_object=True)
    assert result["touched"] == 1.0 and result["moved"] == 1.0
    # The grasp point beside the object it pushes: 2.1 cm from its centre in these seeds (objects 1-3 cm across);
    # held still at its start it stays 6.2 cm away.
    assert result["closest"] < 0.03


def test_reach_has_no_object_and_counts_its_successes():
    result = exploration.explore("binpick_sim/FrankaReach-v0", episodes=2, act=still, max_episode_steps=3)
    assert (result["touched"], result["moved"]) == (0.0, 0.0) and result["closest"] == np.inf


def test_the_bench_group_reports_each_goal_env(monkeypatch):
    """The group's figures: touch, move and success for the object envs, success for Reach, and the wall time."""
    calls = []

    def fake(env_id, **kwargs):
        calls.append((env_id, kwargs))
        return {"episodes": 2, "touched": 0.5, "moved": 0.25, "success_any": 0.0, "closest": 0.03,
                "mean_length": 50.0}
    monkeypatch.setattr(exploration, "explore", fake)
    figures = exploration.measure()
    assert [c[0] for c in calls] == [e[0] for e in exploration.ENVS]
    touched = {f.name: f.value for f in figures if "touched" in f.name}
    assert touched == {"FrankaLift-v0: arm touched the object": 50.0,
                       "FrankaLift-v0 one_object: arm touched the object": 50.0,
                       "FrankaPickPlace-v0: arm touched the object": 50.0}
    assert {f.name: f.value for f in figures if "moved" in f.name}["FrankaLift-v0: object moved > 5 mm"] == 25.0
    assert all(f.group == "exploration" for f in figures)
