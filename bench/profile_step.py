"""A fixed amount of ROS env steps to profile (FrankaDelta-v0, state, seed 0), e.g.

    py-spy record --subprocesses --idle --format raw -o build/ros_step.txt -- python -m bench.profile_step
    python -m bench.profile_step --summary build/ros_step.txt

The summary splits the samples of each process into where one env step's time goes (see `PARTS`).
"""
from __future__ import annotations

import argparse
import collections
import time

STEPS = 300
# (part, frame substrings that put a sample there); the first part that matches a stack wins, from
# the innermost frame outwards
PARTS = [
    ("physics (stepSimulation)", ("stepSimulation", "world.py:step")),
    ("IK and arm (PyBullet)", ("calculateInverseKinematics", "delta_targets", "set_position_targets",
                               "joint_states", "ee_pose", "getLinkState")),
    ("task rules", ("task.py",)),
    ("publish (serialize + DDS write)", ("publish (rclpy/publisher.py",)),
    ("take (DDS read + deserialize)", ("_take", "take_message", "handle_subscription", "take (")),
    ("JSON", ("json/",)),
    ("executor bookkeeping", ("rclpy/executors.py", "events_executor", "spin_once")),
    ("waiting (idle, GIL free)", ("wait (threading.py", "get (queue.py", "_drain", "poll (")),
]


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


def summary(path: str) -> str:
    """Per process (pid) and thread: share of samples in each part, from py-spy's raw format."""
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for line in open(path):
        stack, _, n = line.rstrip().rpartition(" ")
        frames = stack.split(";")
        where = frames[0] + " " + (frames[1] if len(frames) > 1 and frames[1].startswith("thread") else "")
        part = "other Python"
        for frame in reversed(frames):
            hit = next((name for name, keys in PARTS if any(k in frame for k in keys)), None)
            if hit:
                part = hit
                break
        counts[where.strip()][part] += int(n)
    lines = []
    for where, parts in sorted(counts.items(), key=lambda kv: -sum(kv[1].values())):
        total = sum(parts.values())
        lines.append(f"{where}: {total} samples")
        lines += [f"    {share / total:6.1%}  {part}" for part, share in parts.most_common()]
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--summary", help="summarise a py-spy raw profile instead of running")
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--env", default="binpick_sim/FrankaDelta-v0")
    args = parser.parse_args()
    if args.summary:
        print(summary(args.summary))
    else:
        print(f"{run(args.steps, args.env):.1f} env steps/s")
