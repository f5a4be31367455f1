"""A fixed amount of ROS env steps to profile (FrankaDelta-v0, state, seed 0), e.g.

    py-spy record --nonblocking --subprocesses --threads -r 250 --format raw -o build/ros_step.txt \
        -- python -m bench.profile_ros
    python -m bench.profile_ros --summary build/ros_step.txt

The summary splits the samples of each process into where one env step's time goes (see `PARTS`).
"""
from __future__ import annotations

import argparse
import collections
import time

STEPS = 300
RATE = 250  # py-spy samples per second (-r)
# (part, frame substrings): a sample goes to the first part any of its frames matches, looking from the
# innermost frame outwards; start-up and shut-down samples are left out (see SETUP)
PARTS = [
    ("physics: stepSimulation", ("World.step (",)),
    ("IK (delta commands)", ("PandaIK.", "FrankaArm.ik (")),
    ("task rules", ("PickTask.", "BinScene.remove_objects_outside_bins", "FrankaArm.touching")),
    ("observation built (PyBullet reads)", ("TaskNode.observation", "DirectBackend.observe", "object_views")),
    ("JSON", ("json/", "(json")),
    ("publish (serialize, DDS write)", ("Publisher.publish (",)),
    ("arm command: checks, targets", ("ArmNode.", "TaskNode.on_step")),
    ("take + callbacks (executor)", ("handle_subscription", "_take", "take_message", "execute_callback")),
    ("executor bookkeeping (rclpy)", ("rclpy/executors.py", "SimStack._serve", "spin_once")),
    ("client wait loop", ("SimClient.spin_until",)),
    ("physics thread hand-off", ("PhysicsLoop.",)),
]
SETUP = ("_find_and_load", "__init__ (binpick_sim", "BinPickingSim.reset", "close (", "destroy", "Popen",
         "RosBackend.__init__", "RosBackend.reset", "make_backend", "TemporaryDirectory")


def run(steps: int = STEPS, env_id: str = "binpick_sim/FrankaDelta-v0") -> float:
    import gymnasium as gym

    import binpick_sim.envs  # noqa: F401

    env = gym.make(env_id, backend="ros", observation="state")
    try:
        env.reset(seed=0)
        env.action_space.seed(0)
        start = time.perf_counter()
        for _ in range(steps):
            env.step(env.action_space.sample())
        return steps / (time.perf_counter() - start)
    finally:
        env.close()


def summary(path: str, steps: int = STEPS, rate: float = RATE) -> str:
    """Milliseconds per env step of each process and thread in each part, from py-spy's raw format
    (recorded with --threads and without --idle: samples of threads that were running)."""
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    samples = [line.rstrip().rpartition(" ") for line in open(path)]
    names = {}  # thread id -> name, where some sample had it
    for stack, _, _ in samples:
        for frame in stack.split(";"):
            if frame.startswith("thread (") and ": " in frame:
                names[frame.split(": ")[0]] = frame.split(": ", 1)[1]
    for stack, _, n in samples:
        frames = stack.split(";")
        if any(key in frame for frame in frames for key in SETUP):
            continue
        process = "sim" if any("binpick_sim.nodes." in f for f in frames if f.startswith("process ")) else "client"
        thread = next((f for f in frames if f.startswith("thread (")), "?")
        thread = names.get(thread.split(": ")[0], thread)
        part = next((name for frame in reversed(frames) for name, keys in PARTS if any(k in frame for k in keys)),
                    "other Python / native")
        counts[f"{process} {thread}"][part] += int(n)
    lines = []
    per_step = 1000.0 / rate / steps
    for where, parts in sorted(counts.items(), key=lambda kv: -sum(kv[1].values())):
        lines.append(f"{where}: {sum(parts.values()) * per_step:.2f} ms per env step")
        lines += [f"    {n * per_step:6.2f} ms  {part}" for part, n in parts.most_common()]
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--summary", help="summarise a py-spy raw profile instead of running")
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--env", default="binpick_sim/FrankaDelta-v0")
    args = parser.parse_args()
    if args.summary:
        print(summary(args.summary, args.steps))
    else:
        print(f"{run(args.steps, args.env):.1f} env steps/s")
