"""cProfile of direct env steps: where one step's time goes.

    python -m bench.profile_direct [--scene config/scene_one_object.yaml] [--env FrankaDelta-v0] [--steps 300]

Random actions (seeded), state observations, the direct backend; the steps after a warm-up are
profiled. PyBullet's functions are reached through a client object, so cProfile books their C time
to the Python function that called them: `World.step` is the physics, `PandaIK.solve` the IK.
Prints the CPU time per env step of the functions that matter (cumulative, profiler's own cost
included), then where the env step's time goes by kind: each PyBullet function it calls (calls and
time per env step: each is wrapped in a one-line Python function named after it, file `<pybullet>`,
so that cProfile books its C time apart; `--no-split` leaves them booked to their callers), and the
Python around them; then cProfile's own top list.

`--timed` measures instead of profiling (cProfile makes Python look several times dearer than it is):
each PyBullet function the env step calls is wrapped in a timer (two `perf_counter_ns` reads, ~0.2 us;
with `--cpu` the thread's CPU clock, a system call of ~1.5 us here, which a busy machine disturbs less), and
`World.step` too, over rounds of steps; it prints each one's calls and microseconds per env step
(medians over the rounds), World.step's own Python loop, and the rest of the env step's Python.
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
    ("physics (World.step: stepSimulation)", "cell/world.py", ("step",)),
    ("command: delta -> joint targets (IK included)", "cell/arm/actions.py", ("delta_targets",)),
    ("  IK (PandaIK.solve, or .pass_on on the live arm)", "cell/arm/ik.py", ("solve", "pass_on")),
    ("command: motor targets (command_motors)", "cell/arm/motors.py", ("command_motors",)),
    ("task rules (PickTask.update)", "picking/task.py", ("update",)),
    ("observation (joints, gripper pose, objects)", "envs/backends.py", ("observe",)),
]


def profile(scene: str | None, env_id: str, steps: int, seed: int = 0,
            split: bool = True) -> tuple[pstats.Stats, float]:
    env = gym.make(f"binpick_sim/{env_id}", backend="direct", observation="state", config_file=scene)
    try:
        env.reset(seed=seed)
        env.action_space.seed(seed)
        actions = [env.action_space.sample() for _ in range(steps + 20)]
        for action in actions[:20]:  # warm up
            env.step(action)
        if split:
            sim = env.unwrapped.backend.sim
            for client in {id(c): c for c in (sim.world.client, sim.arm.solver.client)}.values():
                split_pybullet(client)
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


PYBULLET = "<pybullet>"  # the file name of the wrappers split_pybullet makes


def split_pybullet(client) -> None:
    """Wrap every PyBullet function `client` has bound so far (World's Client binds each at its first
    use; after the warm-up, every one an env step calls) in a Python function of the same name, so
    that cProfile books each one's C time to it rather than to its caller."""
    for name, function in list(vars(client).items()):
        if name.startswith("_") or not callable(function):
            continue
        namespace = {"function": function}
        exec(compile(f"def {name}(*args, **kwargs):\n    return function(*args, **kwargs)\n", PYBULLET, "exec"),
             namespace)
        setattr(client, name, namespace[name])


def by_kind(stats: pstats.Stats, steps: int) -> list[tuple[str, float, float]]:
    """(what, calls per env step, ms per env step) of each PyBullet function (own time: its C time and
    its wrapper's frame), then the Python of the env step (everything else: ours, gymnasium's
    wrappers, numpy)."""
    total = sum(entry[3] for (filename, _, function), entry in stats.stats.items()
                if function == "step" and filename.endswith("envs/franka.py"))
    rows, pybullet = [], 0.0
    for (filename, _, function), (_, calls, own, _, _) in stats.stats.items():
        if filename == PYBULLET:
            rows.append((f"PyBullet {function}", calls / steps, 1000.0 * own / steps))
            pybullet += own
    rows.sort(key=lambda row: -row[2])
    rows.append(("Python around them (ours, gymnasium's wrappers, numpy)", float("nan"),
                 1000.0 * (total - pybullet) / steps))
    return rows


def timed(scene: str | None, env_id: str, steps: int, rounds: int = 10, seed: int = 0,
          clock_ns=time.perf_counter_ns) -> list[tuple[str, float, float]]:
    """(what, calls per env step, us per env step) by kind, measured in `rounds` rounds of
    `steps // rounds` env steps, medians over the rounds, by `clock_ns` (each timed call carries about
    one clock read, the Python around it the other and the wrapper's frame)."""
    import statistics

    env = gym.make(f"binpick_sim/{env_id}", backend="direct", observation="state", config_file=scene)
    spent: dict[str, int] = {}
    calls: dict[str, int] = {}

    def timer(name, function):
        def wrapper(*args, **kwargs):
            start = clock_ns()
            try:
                return function(*args, **kwargs)
            finally:
                spent[name] = spent.get(name, 0) + clock_ns() - start
                calls[name] = calls.get(name, 0) + 1
        return wrapper

    try:
        env.reset(seed=seed)
        env.action_space.seed(seed)
        for _ in range(20):  # warm up: every PyBullet function a step calls is bound by now
            env.step(env.action_space.sample())
        sim = env.unwrapped.backend.sim
        for client in {id(c): c for c in (sim.world.client, sim.arm.solver.client)}.values():
            for name, function in list(vars(client).items()):
                if not name.startswith("_") and callable(function):
                    setattr(client, name, timer(f"PyBullet {name}", function))
        sim.world.step = timer("World.step", sim.world.step)
        per_round = max(1, steps // rounds)
        samples: dict[str, list[float]] = {}
        counts: dict[str, float] = {}
        for _ in range(rounds):
            spent.clear()
            calls.clear()
            taken = 0
            start = clock_ns()
            for _ in range(per_round):
                _, _, terminated, truncated, _ = env.step(env.action_space.sample())
                taken += 1
                if terminated or truncated:
                    break
            total = clock_ns() - start
            pybullet = sum(t for name, t in spent.items() if name.startswith("PyBullet"))
            stepping = spent.get("PyBullet stepSimulation", 0)
            row = {name: t for name, t in spent.items() if name != "World.step"}
            row["World.step's Python loop"] = spent.get("World.step", 0) - stepping
            row["the env step's other Python (ours, gymnasium's wrappers, numpy)"] = \
                total - spent.get("World.step", 0) - (pybullet - stepping)
            row["the whole env step"] = total
            for name, t in row.items():
                samples.setdefault(name, []).append(t / 1000.0 / taken)
            for name, n in calls.items():
                counts[name] = counts.get(name, 0) + n / taken / rounds
            if terminated or truncated:
                env.reset()  # outside the round's figures (cleared with the next round)
    finally:
        env.close()
    rows = [(name, counts.get(name, float("nan")), statistics.median(values)) for name, values in samples.items()]
    return sorted(rows, key=lambda row: -row[2])


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
    parser.add_argument("--no-split", dest="split", action="store_false",
                        help="book PyBullet's C time to its Python callers (no wrappers)")
    parser.add_argument("--timed", action="store_true",
                        help="time each PyBullet call and the Python around them instead of profiling")
    parser.add_argument("--cpu", action="store_true", help="--timed by the thread's CPU clock, not wall time")
    args = parser.parse_args(argv)
    if args.timed:
        print(f"{args.env}, {args.scene or 'scene.yaml'}, {args.steps} steps in 10 rounds: per env step, "
              f"medians of the rounds ({'thread CPU' if args.cpu else 'wall'} time)")
        print(f"  {'':66s} {'calls':>5s} {'us':>8s}")
        clock = time.thread_time_ns if args.cpu else time.perf_counter_ns
        for label, calls, us in timed(args.scene, args.env, args.steps, clock_ns=clock):
            print(f"  {label:66s} {'' if calls != calls else f'{calls:5.1f}':>5s} {us:8.1f}")
        return 0
    stats, _ = profile(args.scene, args.env, args.steps, split=args.split)
    print(f"{args.env}, {args.scene or 'scene.yaml'}, {args.steps} steps: ms per env step (cProfile, cumulative)")
    for label, ms in summary(stats, args.steps):
        print(f"  {label:50s} {ms:7.3f}")
    print(f"  {'function calls per env step (cProfile counts C calls too)':50s} {stats.total_calls / args.steps:7.0f}")
    if args.split:
        print("\nby kind, per env step (own time):        calls       ms")
        for label, calls, ms in by_kind(stats, args.steps):
            print(f"  {label:55s} {'' if calls != calls else f'{calls:5.1f}':>5s} {ms:8.4f}")
    text = io.StringIO()
    stats.stream = text
    stats.sort_stats("tottime").print_stats(args.top)
    print(text.getvalue())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
