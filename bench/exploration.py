"""What random actions find in the goal envs (issue 55): no learning, a figure of how much HER has to relabel.

`python -m bench.exploration` (or `python -m bench.run exploration`, part of `make bench`). Over EPISODES
episodes of each goal env (seeds 0..EPISODES-1, direct backend, the registered episode length) a uniformly
random policy (the action space's own sampler, seeded) acts; per episode it records whether the arm touched
the chosen object at the end of any step (a contact point between any of the arm's links and the object, as
PyBullet reports it, read from the in-process world) and whether the object moved more than MOVED (5 mm) from
where it lay after the reset at any step; and whether the episode was a success at any step. FrankaReach has no
object: its row is the random policy's success.

The issue's targets: on FrankaLift-v0 a touch in at least 30 % of episodes and a move in at least 10 %
(under the seed's rules: no touch in 12 episodes, the gripper 32-55 cm from the object).
"""
from __future__ import annotations

import os
import time

import numpy as np

from .figures import Figure

EPISODES = int(os.environ.get("BENCH_EXPLORE_EPISODES", 50))
MOVED = 0.005  # m
# (id, keyword arguments, label); FrankaLift's one-object option beside its default
ENVS = (("binpick_sim/FrankaReach-v0", {}, "FrankaReach-v0"),
        ("binpick_sim/FrankaLift-v0", {}, "FrankaLift-v0"),
        ("binpick_sim/FrankaLift-v0", {"one_object": True}, "FrankaLift-v0 one_object"),
        ("binpick_sim/FrankaPickPlace-v0", {}, "FrankaPickPlace-v0"))


def explore(env_id: str, episodes: int = EPISODES, seed: int = 0, act=None, **kwargs) -> dict:
    """Shares of `episodes` episodes (seeds `seed`, `seed` + 1, ...) in which the arm touched the chosen object
    after any physics step (`touched`), the object moved more than MOVED (`moved`), the goal was reached at
    any step (`success_any`); their mean length, and the closest the grasp point came to the object [m]
    (`closest`, median over the episodes). `act(env, observation) -> action`: the policy, by default the
    action space's sampler (seeded with `seed`)."""
    import gymnasium as gym

    import binpick_sim.envs  # noqa: F401  (registers the ids)

    env = gym.make(env_id, **kwargs)
    env.action_space.seed(seed)
    act = act or (lambda env, observation: env.action_space.sample())
    touched, moved, success, closest, lengths = [], [], [], [], []
    try:
        for episode in range(episodes):
            observation, info = env.reset(seed=seed + episode)
            unwrapped = env.unwrapped
            sim = unwrapped.backend.sim
            body = _body(sim, info.get("chosen_object"))
            start = np.array(observation["achieved_goal"], float)
            move = reached = False
            touch = []  # set by the hook after any physics step in which the arm touches the object

            def check(body=body, arm=sim.arm, touch=touch):
                if not touch and any(point[2] == body for point in arm.contacts()):
                    touch.append(True)
            if body is not None:
                sim.world.add_step_hooks(after=check)
            near, steps, done = np.inf, 0, False
            while not done:
                observation, _, terminated, truncated, info = env.step(act(env, observation))
                steps += 1
                done = terminated or truncated
                reached = reached or bool(info["is_success"])
                if body is None:
                    continue
                achieved = np.array(observation["achieved_goal"], float)
                move = move or bool(np.linalg.norm(achieved - start) > MOVED)
                near = min(near, float(np.linalg.norm(np.asarray(unwrapped.last.ee_position) - achieved)))
            if body is not None:
                sim.world.remove_step_hooks(after=check)
            touch = bool(touch)
            touched.append(touch)
            moved.append(move)
            success.append(reached)
            closest.append(near)
            lengths.append(steps)
    finally:
        env.close()
    return {"episodes": episodes, "touched": float(np.mean(touched)), "moved": float(np.mean(moved)),
            "success_any": float(np.mean(success)), "closest": float(np.median(closest)),
            "mean_length": float(np.mean(lengths))}


def _body(sim, name: str | None) -> int | None:
    """The chosen object's body id in the in-process world (None: no object)."""
    if name is None:
        return None
    return sim.scene.object_named(name).body


def measure() -> list[Figure]:
    figures = []
    for env_id, kwargs, label in ENVS:
        started = time.perf_counter()
        result = explore(env_id, **kwargs)
        note = f"{result['episodes']} random-policy episodes, seeds 0-{result['episodes'] - 1}"
        if env_id.endswith("Reach-v0"):
            figures.append(Figure("exploration", f"{label}: goal reached at any step", 100 * result["success_any"],
                                  "% episodes", note=note))
        else:
            figures.append(Figure("exploration", f"{label}: arm touched the object", 100 * result["touched"],
                                  "% episodes", note=note))
            figures.append(Figure("exploration", f"{label}: object moved > {1000 * MOVED:.0f} mm",
                                  100 * result["moved"], "% episodes", note=note))
            figures.append(Figure("exploration", f"{label}: goal reached at any step", 100 * result["success_any"],
                                  "% episodes", note=note))
        figures.append(Figure("exploration", f"{label}: {result['episodes']} episodes",
                              time.perf_counter() - started, "s", note="wall time, direct backend"))
    return figures


def main() -> None:
    from .run import table

    print(table(measure()))


if __name__ == "__main__":
    main()
