"""cProfile of direct env steps: where one step's time goes.

    python -m bench.profile_direct [--scene config/scene_one_object.yaml] [--env FrankaDelta-v0] [--steps 300]

Random actions (seeded), state observations, the direct backend; the steps after a warm-up are
profiled. PyBullet's functions are reached through a client object, so cProfile books their C time
to the Python function that called them: `World.step` is the physics, `PandaIK.solve` the IK.
Prints the CPU time per env step of the functions that matter (cumulative, profiler's own cost
included), then cProfile's own top list.
Uses nothing but the package and the standard library, so that it also profiles an older checkout:
`PYTHONPATH=<checkout> python bench/profile_direct.py ...`.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time

import gymnasium as gym

import binpick_sim.envs  # noqa: F401  (registers the ids)

SUMMARY = [  # (label, file suffix, functions): cumulative time per env step
    ("env step, all of it", "envs/franka.py", ("step",)),
    ("physics (World.step: stepSimulation)", "world.py", ("step",)),
    ("command: delta -> joint targets (IK included)", "arm.py", ("delta_targets",)),
    ("  IK (PandaIK.solve, or .pass_on on the live arm)", "ik.py", ("solve", "pass_on")),
    ("command: motor targets (command_motors)", "arm.py", ("command_motors",)),
    ("task rules (PickTask.update)", "task.py", ("update",)),
    ("observation (joints, gripper pose, objects)", "envs/backends.py", ("observe",)),
]


def profile(scene: str | None, env_id: str, steps: int, seed: int = 0) -> tuple[pstats.Stats, float]:
    env = gym.make(f"binpick_sim/{env_id}", backend="direct", observation="state", config_file=scene)
    try:
        env.reset(seed=seed)
        env.action_space.seed(seed)
        actions = [env.action_space.sample() for _ in range(steps + 20)]
        for action in actions[:20]:  # warm up
            env.step(action)
        profiler = cProfile.Profile(time.process_time)  # CPU time: a busy machine inflates wall time
        start = time.process_time()
        for action in actions[20:]:
            profiler.enable()
            _, _, terminated, truncated, _ = env.step(action)
            profiler.disable()
            if terminated or truncated:
                env.reset()
        return pstats.Stats(profiler), time.process_time() - start
    finally:
        env.close()


def summary(stats: pstats.Stats, steps: int) -> list[tuple[str, float]]:
    rows = []
    for label, suffix, names in SUMMARY:
        total = sum(entry[3] for (filename, _, function), entry in stats.stats.items()
                    if function in names and filename.endswith(suffix))
        rows.append((label, 1000.0 * total / steps))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scene", default=None, help="scene file (default: the package's scene.yaml)")
    parser.add_argument("--env", default="FrankaDelta-v0", help="env id without the binpick_sim/ prefix")
    parser.add_argument("--steps", type=int, default=300, help="env steps profiled")
    parser.add_argument("--top", type=int, default=15, help="rows of cProfile's list (by own time)")
    args = parser.parse_args(argv)
    stats, _ = profile(args.scene, args.env, args.steps)
    print(f"{args.env}, {args.scene or 'scene.yaml'}, {args.steps} steps: ms per env step (cProfile, cumulative)")
    for label, ms in summary(stats, args.steps):
        print(f"  {label:50s} {ms:7.3f}")
    print(f"  {'function calls per env step (cProfile counts C calls too)':50s} {stats.total_calls / args.steps:7.0f}")
    text = io.StringIO()
    stats.stream = text
    stats.sort_stats("tottime").print_stats(args.top)
    print(text.getvalue())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
