"""HER with a standard off-policy learner on the goal-conditioned env (issue 27): an honest run and its curve.

`python -m bench.her [--steps N] [--eval-every K] [--out build/her]` (`make bench-her`, which installs
requirements-her.txt: Stable-Baselines3 and a CPU build of torch; not part of `make bench`).

Stable-Baselines3's SAC with its HerReplayBuffer (goal_selection_strategy "future", n_sampled_goal 4, as
panda-gym's and the RL Zoo's HER runs use) learns binpick_sim/FrankaLift-v0 (envs/goal.py) on the direct
backend, on the CPU, seeded. Every K steps the deterministic policy runs one episode on each of a fixed set
of held-out seeds (EVAL_SEEDS, never used for training: training resets are unseeded after the first);
its success rate is `info["is_success"]` at the episode's last step (Gymnasium-Robotics' and SB3's
convention: where the episode ended, the object within 2 cm of the goal), and beside it the share of
episodes that were a success at any step. A policy that never moves (zero actions) on the same seeds is
the reference: the goal can lie where the object already is.

Written into --out: learning_curve.png (success rate, mean return, final distance against training steps) and
her.json (the curve: steps, success rates, mean return, final distance, wall seconds; the settings). Success rates are not
timings: they mean the same on a loaded machine, the wall seconds and steps/s do not.

`evaluate` needs neither torch nor SB3 (the tests use it with a stub policy); the learner is imported
only when training.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from binpick_sim.extras import MissingExtra, require

ENV = "binpick_sim/FrankaLift-v0"
EPISODE_STEPS = 100  # the episodes' step limit, training and evaluation (the scripted picker grabs in ~45)
EVAL_SEEDS = tuple(range(1000, 1010))  # held-out seeds, as bench.learnability's
SEED = 0  # the learner's seed (networks, exploration, the first training reset)
# SAC as the RL Zoo runs it on panda-gym's and Fetch's goal tasks (gamma, tau, learning rate), with the
# networks and batch at SB3's defaults so that a 2-core CPU does a run in minutes.
HYPERPARAMETERS = dict(learning_rate=1e-3, gamma=0.95, tau=0.05, batch_size=256, learning_starts=1000,
                       train_freq=1, gradient_steps=1, net_arch=[256, 256])
HER = dict(n_sampled_goal=4, goal_selection_strategy="future")


def evaluate(env, act: Callable[[dict], np.ndarray], seeds: Iterable[int]) -> dict:
    """One episode per seed, `act(observation) -> action` choosing every step. Returns the share of
    episodes whose last step's `info["is_success"]` is true (`success`), the share that were a success at
    any step after the reset (`success_any`), the mean return and the mean length; and, as signs of
    progress short of success, the mean distance [m] from the object to the goal at the end
    (`final_distance`) and the share of episodes in which the object moved more than 1 cm (`moved`); the
    share that ended with a bin contact (`bin_contact`: the task's early end a learner can seek)."""
    final, ever, returns, lengths, distances, moved, contact = [], [], [], [], [], [], []
    for seed in seeds:
        observation, _ = env.reset(seed=int(seed))
        start = np.array(observation["achieved_goal"], float)
        total, steps, succeeded, done, info = 0.0, 0, False, False, {}
        while not done:
            observation, reward, terminated, truncated, info = env.step(act(observation))
            total += float(reward)
            steps += 1
            succeeded = succeeded or bool(info["is_success"])
            done = terminated or truncated
        final.append(bool(info["is_success"]))
        ever.append(succeeded)
        returns.append(total)
        lengths.append(steps)
        achieved = np.array(observation["achieved_goal"], float)
        distances.append(float(np.linalg.norm(achieved - np.array(observation["desired_goal"], float))))
        moved.append(bool(np.linalg.norm(achieved - start) > 0.01))
        contact.append(bool(info["bin_collision"]))
    return {"success": float(np.mean(final)), "success_any": float(np.mean(ever)),
            "mean_return": float(np.mean(returns)), "mean_length": float(np.mean(lengths)),
            "final_distance": float(np.mean(distances)), "moved": float(np.mean(moved)),
            "bin_contact": float(np.mean(contact))}


def make_env(reward_type: str = "sparse"):
    import gymnasium as gym

    import binpick_sim.envs  # noqa: F401  (registers the ids)

    return gym.make(ENV, max_episode_steps=EPISODE_STEPS, reward_type=reward_type)


def train(steps: int, eval_every: int, reward_type: str = "sparse", seed: int = SEED, threads: int = 1,
          seeds: Iterable[int] = EVAL_SEEDS, log: Callable[[str], None] = print) -> dict:
    """Trains SAC + HER for `steps` env steps, evaluating at 0 and every `eval_every` steps; the curve."""
    import torch
    from stable_baselines3 import SAC, HerReplayBuffer
    from stable_baselines3.common.callbacks import BaseCallback

    torch.set_num_threads(threads)
    seeds = tuple(seeds)
    env, eval_env = make_env(reward_type), make_env(reward_type)
    still = np.zeros(eval_env.action_space.shape, np.float32)
    reference = evaluate(eval_env, lambda _: still, seeds)
    log(f"zero-action policy on seeds {seeds[0]}-{seeds[-1]}: success {reference['success']:.0%} "
        f"(any step {reference['success_any']:.0%}), mean return {reference['mean_return']:.1f}, "
        f"object to goal at the end {100 * reference['final_distance']:.1f} cm")
    hp = dict(HYPERPARAMETERS)
    model = SAC("MultiInputPolicy", env, replay_buffer_class=HerReplayBuffer, replay_buffer_kwargs=dict(HER),
                policy_kwargs=dict(net_arch=hp.pop("net_arch")), buffer_size=max(steps, 1), seed=seed, device="cpu",
                verbose=0, **hp)
    curve: list[dict] = []
    clock = {"start": time.perf_counter(), "evaluating": 0.0}

    def point(step: int) -> None:
        started = time.perf_counter()
        row = evaluate(eval_env, lambda o: model.predict(o, deterministic=True)[0], seeds)
        clock["evaluating"] += time.perf_counter() - started
        wall = time.perf_counter() - clock["start"]
        row.update(steps=step, wall_s=wall, train_s=wall - clock["evaluating"])
        curve.append(row)
        log(f"{step:>8} {row['success']:>8.0%} {row['success_any']:>8.0%} {row['mean_return']:>9.1f} "
            f"{row['mean_length']:>7.1f} {100 * row['final_distance']:>8.1f} {row['moved']:>6.0%} {row['bin_contact']:>6.0%} "
            f"{row['wall_s']:>7.0f}")

    class Every(BaseCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps % eval_every == 0:
                point(self.num_timesteps)
            return True

    log(f"{'steps':>8} {'success':>8} {'any step':>8} {'return':>9} {'length':>7} {'dist cm':>8} {'moved':>6} "
        f"{'bin':>6} {'wall s':>7}")
    point(0)
    model.learn(total_timesteps=steps, callback=Every())
    if curve[-1]["steps"] != model.num_timesteps:
        point(model.num_timesteps)
    env.close()
    eval_env.close()
    train_s = curve[-1]["train_s"]
    import stable_baselines3

    return {"env": ENV, "algorithm": "SAC", "replay_buffer": "HerReplayBuffer", "her": HER,
            "hyperparameters": HYPERPARAMETERS, "reward_type": reward_type, "episode_steps": EPISODE_STEPS,
            "seed": seed, "torch_threads": threads, "eval_seeds": list(seeds),
            "success_measure": "info['is_success'] at the episode's last step (success_any: at any step)",
            "steps": model.num_timesteps, "eval_every": eval_every, "wall_s": curve[-1]["wall_s"],
            "train_s": train_s, "train_steps_per_s": model.num_timesteps / train_s if train_s else None,
            "zero_action_policy": reference, "curve": curve,
            "versions": {"stable_baselines3": stable_baselines3.__version__, "torch": torch.__version__}}


def plot(result: dict, path: Path) -> None:
    """Success rate (last step, any step), mean return and the object's final distance to the goal against
    steps, the zero-action policy's as a dotted line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [r["steps"] for r in result["curve"]]
    figure, (left, middle, right) = plt.subplots(1, 3, figsize=(10, 3.2), dpi=90)
    left.plot(steps, [100 * r["success"] for r in result["curve"]], "o-", label="at episode end")
    left.plot(steps, [100 * r["success_any"] for r in result["curve"]], "s--", label="at any step", alpha=0.7)
    left.axhline(100 * result["zero_action_policy"]["success"], color="grey", lw=1, ls=":",
                 label="zero-action policy")
    left.set(xlabel="training steps", ylabel="success [%]", ylim=(-3, 103),
             title=f"held-out seeds {result['eval_seeds'][0]}-{result['eval_seeds'][-1]}")
    left.legend(fontsize=7)
    middle.plot(steps, [r["mean_return"] for r in result["curve"]], "o-")
    middle.axhline(result["zero_action_policy"]["mean_return"], color="grey", lw=1, ls=":")
    middle.set(xlabel="training steps", ylabel=f"mean return ({result['reward_type']})", title="return")
    right.plot(steps, [100 * r["final_distance"] for r in result["curve"]], "o-")
    right.axhline(100 * result["zero_action_policy"]["final_distance"], color="grey", lw=1, ls=":")
    right.set(xlabel="training steps", ylabel="object to goal at the end [cm]", title="distance", ylim=(0, None))
    figure.suptitle(f"SAC + HER on {result['env']}, {result['reward_type']} reward", fontsize=10)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=15_000, help="training env steps")
    parser.add_argument("--eval-every", type=int, default=1_500, help="evaluate every this many steps")
    parser.add_argument("--out", type=Path, default=Path("build/her"))
    parser.add_argument("--reward", choices=("sparse", "dense"), default="sparse",
                        help="the env's reward_type (HER's is sparse)")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--threads", type=int, default=1, help="torch's CPU threads")
    args = parser.parse_args(argv)
    try:
        require("make bench-her", "stable_baselines3", "torch")
    except MissingExtra as exc:
        print(f"bench-her: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    if args.steps < 1 or args.eval_every < 1:
        parser.error("--steps and --eval-every must be positive")
    args.out.mkdir(parents=True, exist_ok=True)
    result = train(args.steps, args.eval_every, args.reward, args.seed, args.threads)
    (args.out / "her.json").write_text(json.dumps(result, indent=1))
    plot(result, args.out / "learning_curve.png")
    print(f"{result['steps']} steps in {result['wall_s']:.0f} s ({result['train_steps_per_s']:.1f} training "
          f"steps/s, evaluations excluded); final success {result['curve'][-1]['success']:.0%} on "
          f"{len(result['eval_seeds'])} held-out seeds (zero-action policy "
          f"{result['zero_action_policy']['success']:.0%}); {args.out / 'learning_curve.png'}, "
          f"{args.out / 'her.json'}")


if __name__ == "__main__":
    main()
