"""Rollouts on Ray: env steps per second with 1 and 2 workers, beside the same episodes in this process.

FrankaDelta-v0, direct backend, state observations, seeded random actions, episodes capped at
EPISODE_STEPS. The Ray figures time the episodes only (workers built, dataset not yet written), as a
long collection run sees them; the cluster's start and the workers' start are reported apart. Each
figure includes its env's first episode (first-touch costs), in-process and on the workers alike.
"""
from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from .figures import Figure
from .physics import raw_steps_per_second

EPISODE_STEPS = 40
EPISODES_PER_WORKER = 6
STEPS_PER_ACTION = 24


def in_process_steps_per_second(spec, episodes: int) -> float:
    from binpick_sim.rollouts import EpisodeSpec, random, run_episode

    env = spec.make_env()
    try:
        start, steps = time.perf_counter(), 0
        for k in range(episodes):
            steps += len(run_episode(env, spec, EpisodeSpec(k, k), random)[1])
        return steps / (time.perf_counter() - start)
    finally:
        env.close()


def measure() -> list[Figure]:
    import ray

    from binpick_sim.rollouts import RunSpec, rollouts

    spec = RunSpec(policy="random", observation="state", max_steps=EPISODE_STEPS)
    raw = raw_steps_per_second(3.0) / STEPS_PER_ACTION
    note = f"FrankaDelta-v0 direct, state, random actions, {EPISODE_STEPS}-step episodes"
    local = in_process_steps_per_second(spec, EPISODES_PER_WORKER)
    figures = [Figure("rollouts", f"in-process env, no Ray ({note})", local, "steps/s", raw)]
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    start = time.perf_counter()
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    figures.append(Figure("rollouts", "local Ray cluster start (num_cpus=2)", time.perf_counter() - start, "s"))
    rates = {}
    try:
        with tempfile.TemporaryDirectory(prefix="bench_rollouts_") as folder:
            for workers in (1, 2):
                begun = time.perf_counter()
                result = rollouts(Path(folder) / f"w{workers}", EPISODES_PER_WORKER * workers, workers, 0, spec,
                                  progress=False)
                rates[workers] = result.steps_per_s
                whole = time.perf_counter() - begun
                figures.append(Figure("rollouts", f"Ray, {workers} worker{'s' if workers > 1 else ''} ({note})",
                                      result.steps_per_s, "steps/s", raw))
                figures.append(Figure("rollouts", f"Ray, {workers} worker{'s' if workers > 1 else ''}: whole run "
                                      "(workers start, episodes, Parquet written)", whole, "s"))
    finally:
        ray.shutdown()
    figures.append(Figure("rollouts", "2 workers / 1 worker", rates[2] / rates[1], "x"))
    figures.append(Figure("rollouts", "2 workers / in-process env", rates[2] / local, "x"))
    return figures


if __name__ == "__main__":
    for figure in measure():
        print(figure.as_dict())
