"""The ROS path against the in-process one: env steps per second of the ROS backend beside the direct
backend's, measured interleaved (both envs open, batches taking turns) so the load of a shared machine
falls on both alike; and the same for the sim process's other executors. The reference column holds the
direct backend's figure of the same run."""
from __future__ import annotations

import statistics
import time

import gymnasium as gym
from tqdm import tqdm

import binpick_sim.envs  # noqa: F401  (registers the ids)
from binpick_sim.envs import ENV_IDS

from .figures import Figure

BATCH = {"state": 20, "image": 5}
ROUNDS = 5
EXECUTORS = ("single", "multi")  # besides the default (events)


def interleaved(env_id: str, observation: str, variants: dict[str, dict]) -> dict[str, float]:
    """Median env steps/s of each variant (name -> gym.make options) over ROUNDS turns of one batch."""
    envs = {name: gym.make(env_id, observation=observation, **options) for name, options in variants.items()}
    rates: dict[str, list[float]] = {name: [] for name in envs}
    try:
        for env in envs.values():
            env.reset(seed=0)
            env.action_space.seed(0)
            env.step(env.action_space.sample())  # warm up
        for _ in range(ROUNDS):
            for name, env in envs.items():
                start = time.perf_counter()
                for _ in range(BATCH[observation]):
                    env.step(env.action_space.sample())
                rates[name].append(BATCH[observation] / (time.perf_counter() - start))
    finally:
        for env in envs.values():
            env.close()
    return {name: statistics.median(r) for name, r in rates.items()}


def measure() -> list[Figure]:
    figures = []
    note = "reference: direct backend, interleaved"
    cases = [(e, "state") for e in sorted(ENV_IDS)] + [("binpick_sim/FrankaPosition-v0", "image")]
    for env_id, observation in tqdm(cases, desc="ROS path", leave=False, disable=None):
        rates = interleaved(env_id, observation, {"direct": {"backend": "direct"}, "ros": {"backend": "ros"}})
        name = f"{env_id.split('/')[1]} ros / direct, {observation}"
        figures.append(Figure("ros path", name, rates["ros"], "steps/s", rates["direct"],
                              note + (", camera 640x480" if observation == "image" else "")))
    variants = {"direct": {"backend": "direct"}, "events": {"backend": "ros"}}
    variants.update({kind: {"backend": "ros", "sim_parameters": {"executor": kind}} for kind in EXECUTORS})
    rates = interleaved("binpick_sim/FrankaDelta-v0", "state", variants)
    for kind in ("events", *EXECUTORS):
        figures.append(Figure("ros path", f"FrankaDelta-v0 ros / direct, state, sim executor {kind}", rates[kind],
                              "steps/s", rates["direct"], note))
    return figures


if __name__ == "__main__":
    for figure in measure():
        print(figure.as_dict())
