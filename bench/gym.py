"""Gym: env steps per second for every env x backend x observation, beside raw PyBullet stepping of
the same scene (as env steps: 24 physics steps each), the two taking turns in ROUNDS rounds (the ratio:
the median of the rounds', min-max beside it); and the scripted picker's success rate."""
from __future__ import annotations

import time
from typing import Callable

import gymnasium as gym
from tqdm import tqdm

import binpick_sim.envs  # noqa: F401  (registers the ids)
from binpick_sim.envs import ENV_IDS

from .direct import direct_sim
from .figures import Figure, median, per_round, timed_turn

STEPS = {"state": 100, "image": 15}
ROUNDS = 5  # turns of STEPS / ROUNDS env steps, each beside as many raw env steps
STEPS_PER_ACTION = 24  # the default scene's task.steps_per_action
SUCCESS_SEEDS = range(20)


def env_steps_per_second(env_id: str, backend: str, observation: str, **options) -> float:
    """`options`: further env arguments, e.g. renderer="egl"."""
    return median(env_and_raw_rates(env_id, backend, observation, None, **options)[0])


def raw_env_step(raw_world):
    """One env step's worth of stepSimulation calls on `raw_world` (a BinPickingSim of the same scene)."""
    step = raw_world.world.client.stepSimulation

    def env_step():
        for _ in range(STEPS_PER_ACTION):
            step()
    return env_step


def env_and_raw_rates(env_id: str, backend: str, observation: str, raw_turn: Callable[[int], float] | None,
                      rounds: int = ROUNDS, turn: int | None = None, **options) -> tuple[list, list]:
    """(env steps/s, raw env steps/s) of each of `rounds` rounds: a turn of the env's steps (`turn`, default
    STEPS / ROUNDS), then (with `raw_turn`) as many raw steps: `raw_turn(turn)` makes them and returns their
    rate, e.g. timed_turn(raw_env_step(...)) here, or a call to another process. `options`: further env
    arguments, e.g. renderer="egl"."""
    env = gym.make(env_id, backend=backend, observation=observation, **options)
    turn = turn or max(1, STEPS[observation] // ROUNDS)
    rates, raw = [], []
    try:
        env.reset(seed=0)
        env.action_space.seed(0)
        env.step(env.action_space.sample())  # warm up
        turns = [(rates, timed_turn(lambda: env.step(env.action_space.sample())))]
        if raw_turn is not None:
            turns.append((raw, raw_turn))
        for _ in range(rounds):
            for samples, run in turns:
                samples.append(run(turn))
        return rates, raw
    finally:
        env.close()


RESETS = 10


def reset_seconds(env_id: str, backend: str, observation: str) -> float:
    """Mean wall time of a seeded reset: the cell rebuilt in an emptied PyBullet world (what makes the same
    seed give the same episode whatever ran before), the pick bin refilled and settled, observed."""
    env = gym.make(env_id, backend=backend, observation=observation)
    try:
        env.reset(seed=0)
        start = time.perf_counter()
        for seed in range(RESETS):
            env.reset(seed=seed)
        return (time.perf_counter() - start) / RESETS
    finally:
        env.close()


def rebuild_seconds() -> float:
    """Mean wall time of the rebuild alone (BinPickingSim.rebuild: resetSimulation, ground, bins, arm)."""
    env = gym.make("binpick_sim/FrankaDelta-v0", observation="state")
    try:
        env.reset(seed=0)
        sim = env.unwrapped.backend.sim
        start = time.perf_counter()
        for _ in range(RESETS):
            sim.rebuild()
        return (time.perf_counter() - start) / RESETS
    finally:
        env.close()


def picker_success(backend: str = "ros") -> float:
    from binpick_sim.envs.scripted import run_episode  # here: scipy, which it needs, is not a camera row's need

    env = gym.make("binpick_sim/FrankaDelta-v0", backend=backend, observation="state")
    try:
        grabs = [run_episode(env, seed)["grabs"] > 0
                 for seed in tqdm(SUCCESS_SEEDS, desc="scripted picker", leave=False, disable=None)]
    finally:
        env.close()
    return 100.0 * sum(grabs) / len(grabs)


# What an image observation draws: FrankaDelta-v0 draws the camera at its 64 x 64 observation size (issue 30),
# the others the scene's 640 x 480 camera.
IMAGE_CAMERA = {"binpick_sim/FrankaDelta-v0": "drawn at 64x64", "binpick_sim/FrankaPosition-v0": "640x480",
                "binpick_sim/FrankaVelocity-v0": "640x480"}


def measure() -> list[Figure]:
    figures = []
    combos = [(e, b, o) for e in sorted(ENV_IDS) for b in ("direct", "ros") for o in ("state", "image")]
    raw_world = direct_sim()  # the same scene, settled, the arm holding home
    try:
        for env_id, backend, observation in tqdm(combos, desc="gym envs", leave=False, disable=None):
            rates, raw = env_and_raw_rates(env_id, backend, observation, timed_turn(raw_env_step(raw_world)))
            name = f"{env_id.split('/')[1]} {backend}, {observation}"
            note = f"raw: {STEPS_PER_ACTION} stepSimulation calls, taking turns" + \
                (f", camera {IMAGE_CAMERA.get(env_id, '640x480')}" if observation == "image" else "")
            figures.append(Figure("gym", name, median(rates), "steps/s", median(raw), note, per_round(rates, raw)))
    finally:
        raw_world.close()
    for backend, observation in (("direct", "state"), ("direct", "image"), ("ros", "state")):
        figures.append(Figure("gym", f"reset(seed), FrankaDelta-v0 {backend}, {observation}",
                              1000 * reset_seconds("binpick_sim/FrankaDelta-v0", backend, observation), "ms",
                              note="the cell rebuilt, the bin refilled and settled"))
    figures.append(Figure("gym", "of which the rebuild (BinPickingSim.rebuild), direct, state", 1000 * rebuild_seconds(),
                          "ms", note="resetSimulation, ground, bins, arm"))
    figures.append(Figure("gym", "scripted picker, FrankaDelta-v0 ros, seeds 0-19", picker_success("ros"),
                          "% episodes with a grab"))
    return figures


if __name__ == "__main__":
    for figure in measure():
        print(figure.as_dict())
