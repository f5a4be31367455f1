"""SAC + HER up the goal envs' ladder, beside panda-gym (issues 27, 55): honest runs and their curves.

`python -m bench.her [--envs ...] [--steps N] [--long-steps M] [--eval-every K] [--reward sparse|dense]
[--no-normalize] [--out build/her]` (`make bench-her`, which installs requirements-her.txt: Stable-Baselines3
and a CPU build of torch; not part of `make bench`).

Stable-Baselines3's SAC with its HerReplayBuffer (goal_selection_strategy "future", n_sampled_goal 4, as
panda-gym's and the RL Zoo's HER runs use; learning rate 1e-3, gamma 0.95, tau 0.05, batch 256, two layers of
256, sparse reward; observations and goals normalised by running statistics as the HER paper's learner had them,
`--no-normalize` for the raw ones) learns each env in turn, on the CPU, seeded, the goal envs on the direct
backend. The first two, FrankaReach-v0 and panda-gym's PandaReach-v3, get the same budget (`--steps`, 10,000 by
default) and the same evaluation, so that their curves compare a learning setup on this cell with the same setup
on panda-gym; FrankaLift-v0 (by default its one-object option with a cube started over it, half the training
episodes grasped: LIFT_LEARNT) and FrankaPickPlace-v0 get the longer budget (`--long-steps`, 100,000). Every K
steps the deterministic policy runs one episode on each of a fixed set of held-out seeds (EVAL_SEEDS, 20, never
used for training: training resets are unseeded after the first); its success rate is `info["is_success"]` at the
episode's last step (Gymnasium-Robotics' and SB3's convention), and beside it the share successful at any step. A
policy that never moves (zero actions) on the same seeds is the reference: the goal can lie where the object
already is.

Written into --out: her.json (every run's curve and settings, and for the two Reach envs the steps each first
reached SUCCESS_TARGET and their ratio), one her_<env>.png per run (success, return, final distance against
steps) and her_reach_vs_panda.png (the two Reach curves on one plot). Success rates are not timings: they mean
the same on a loaded machine, the wall seconds and steps/s do not.

`evaluate` needs neither torch nor SB3 (the tests use it with a stub policy); the learner is imported only when
training.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from binpick_sim.extras import MissingExtra, require

EVAL_SEEDS = tuple(range(1000, 1020))  # 20 held-out seeds, as bench.learnability's
SEED = 0  # the learner's seed (networks, exploration, the first training reset)
SUCCESS_TARGET = 0.95  # the Reach comparison: steps until the held-out success first reaches this
# SAC as the RL Zoo runs it on panda-gym's and Fetch's goal tasks (gamma, tau, learning rate, batch, networks)
HYPERPARAMETERS = dict(learning_rate=1e-3, gamma=0.95, tau=0.05, batch_size=256, learning_starts=1000,
                       train_freq=1, gradient_steps=1, net_arch=[256, 256])
HER = dict(n_sampled_goal=4, goal_selection_strategy="future")
# The HER paper's pick-and-place curriculum: half the training episodes start with the object in the gripper
# (evaluation starts as the task does)
GRASPED = {"grasped_starts": 0.5}
# ... and a success radius that starts at panda-gym's 5 cm and tightens to the task's as the learner succeeds
TIGHTENING = {**GRASPED, "distance_threshold": 0.05}
TIGHTEN_AFTER, TIGHTEN_AT, TIGHTEN_BY = 50, 0.5, 0.005  # episodes, their success, metres


@dataclass(frozen=True)
class Task:
    """One env of the ladder: its gym id, keyword arguments, and which budget it gets."""

    name: str  # as --envs names it
    env_id: str
    kwargs: dict = field(default_factory=dict)
    long: bool = False  # the longer budget (--long-steps)
    curriculum: dict = field(default_factory=dict)  # the training env's arguments besides `kwargs` (not evaluated)

    def make(self, reward_type: str = "sparse", training: bool = False):
        """The env with `reward_type` (panda-gym's dense tasks are ids of their own: PandaReachDense-v3); the
        training env (`training`) with the curriculum's arguments too, the evaluated one without."""
        import gymnasium as gym

        if self.env_id.startswith("binpick_sim/"):
            import binpick_sim.envs  # noqa: F401  (registers the ids)

            return gym.make(self.env_id, reward_type=reward_type, **self.kwargs,
                            **(self.curriculum if training else {}))
        import panda_gym  # noqa: F401  (registers PandaReach-v3 & co.)

        return gym.make(self.env_id.replace("-v3", "Dense-v3") if reward_type == "dense" else self.env_id, **self.kwargs)


TASKS = {task.name: task for task in (
    Task("FrankaReach-v0", "binpick_sim/FrankaReach-v0"),
    Task("PandaReach-v3", "PandaReach-v3"),
    Task("FrankaLift-v0", "binpick_sim/FrankaLift-v0", long=True),
    Task("FrankaLift-v0:one_object", "binpick_sim/FrankaLift-v0", {"one_object": True}, long=True),
    Task("FrankaLift-v0:grasped_starts", "binpick_sim/FrankaLift-v0", long=True, curriculum=GRASPED),
    Task("FrankaLift-v0:one_object:grasped_starts", "binpick_sim/FrankaLift-v0", {"one_object": True}, long=True,
         curriculum=GRASPED),
    Task("FrankaLift-v0:one_object:over_object:grasped_starts", "binpick_sim/FrankaLift-v0",
         {"one_object": True, "start_over_object": True}, long=True, curriculum=GRASPED),
    Task("FrankaLift-v0:one_object:cube:over_object:grasped_starts", "binpick_sim/FrankaLift-v0",
         {"one_object": True, "object_set": "cube", "start_over_object": True}, long=True, curriculum=GRASPED),
    Task("FrankaLift-v0:one_object:grasped_starts:tightening", "binpick_sim/FrankaLift-v0", {"one_object": True},
         long=True, curriculum=TIGHTENING),
    Task("FrankaPickPlace-v0", "binpick_sim/FrankaPickPlace-v0", long=True),
    Task("PandaPickAndPlace-v3", "PandaPickAndPlace-v3", long=True),  # the peer of Lift's and PickPlace's runs
)}
# Lift's run is the option the benchmarks page reports learnt (one cube started over, half the training grasped);
# the plain FrankaLift-v0 and the others are --envs choices
LIFT_LEARNT = "FrankaLift-v0:one_object:cube:over_object:grasped_starts"
DEFAULT_ENVS = ("FrankaReach-v0", "PandaReach-v3", LIFT_LEARNT, "FrankaPickPlace-v0")
REACH_PAIR = ("FrankaReach-v0", "PandaReach-v3")


def evaluate(env, act: Callable[[dict], np.ndarray], seeds: Iterable[int]) -> dict:
    """One episode per seed, `act(observation) -> action` choosing every step. Returns the share of
    episodes whose last step's `info["is_success"]` is true (`success`), the share that were a success at
    any step after the reset (`success_any`), the mean return and the mean length; and, as signs of
    progress short of success, the mean distance [m] from the achieved goal to the desired one at the end
    (`final_distance`) and the share of episodes in which the achieved goal moved more than 1 cm (`moved`);
    the share that ended with a bin contact (`bin_contact`, where the env reports one)."""
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
        contact.append(bool(info.get("bin_collision", False)))
    return {"success": float(np.mean(final)), "success_any": float(np.mean(ever)),
            "mean_return": float(np.mean(returns)), "mean_length": float(np.mean(lengths)),
            "final_distance": float(np.mean(distances)), "moved": float(np.mean(moved)),
            "bin_contact": float(np.mean(contact))}


def steps_to(curve: list[dict], target: float = SUCCESS_TARGET) -> int | None:
    """The training steps of the first evaluation whose success reached `target` (None: none did)."""
    return next((row["steps"] for row in curve if row["success"] >= target), None)


def train(task: Task, steps: int, eval_every: int, seed: int = SEED, threads: int = 1,
          seeds: Iterable[int] = EVAL_SEEDS, log: Callable[[str], None] = print,
          on_point: Callable[[dict], None] | None = None, reward_type: str = "sparse",
          normalize: bool = True) -> dict:
    """Trains SAC + HER on `task` for `steps` env steps, evaluating at 0 and every `eval_every` steps; the
    curve. `on_point(result so far)` after every evaluation (a long run's partial curve is saved there).
    `normalize`: the learner sees observations and goals normalised (`learner_view`)."""
    import torch
    from stable_baselines3 import SAC, HerReplayBuffer
    from stable_baselines3.common.callbacks import BaseCallback

    torch.set_num_threads(threads)
    seeds = tuple(seeds)
    env, eval_env = task.make(reward_type, training=True), task.make(reward_type)
    still = np.zeros(eval_env.action_space.shape, np.float32)
    reference = evaluate(eval_env, lambda _: still, seeds)
    log(f"{task.name}: zero-action policy on seeds {seeds[0]}-{seeds[-1]}: success {reference['success']:.0%} "
        f"(any step {reference['success_any']:.0%}), mean return {reference['mean_return']:.1f}, "
        f"goal distance at the end {100 * reference['final_distance']:.1f} cm")
    hp = dict(HYPERPARAMETERS)
    learner_env, seen = learner_view(env, normalize)
    model = SAC("MultiInputPolicy", learner_env, replay_buffer_class=HerReplayBuffer, replay_buffer_kwargs=dict(HER),
                policy_kwargs=dict(net_arch=hp.pop("net_arch")), buffer_size=max(steps, 1), seed=seed, device="cpu",
                verbose=0, **hp)
    curve: list[dict] = []
    clock = {"start": time.perf_counter(), "evaluating": 0.0}
    import stable_baselines3

    result = {"env": task.env_id, "name": task.name, "env_kwargs": task.kwargs, "curriculum": task.curriculum,
              "algorithm": "SAC",
              "replay_buffer": "HerReplayBuffer", "her": HER, "hyperparameters": HYPERPARAMETERS,
              "reward_type": reward_type, "normalized_observations": normalize,
              "episode_steps": env.spec.max_episode_steps, "seed": seed,
              "torch_threads": threads, "eval_seeds": list(seeds), "budget": steps,
              "success_measure": "info['is_success'] at the episode's last step (success_any: at any step)",
              "eval_every": eval_every, "zero_action_policy": reference, "curve": curve,
              "versions": {"stable_baselines3": stable_baselines3.__version__, "torch": torch.__version__}}

    def point(step: int) -> None:
        started = time.perf_counter()
        row = evaluate(eval_env, lambda o: model.predict(seen(o), deterministic=True)[0], seeds)
        clock["evaluating"] += time.perf_counter() - started
        wall = time.perf_counter() - clock["start"]
        row.update(steps=step, wall_s=wall, train_s=wall - clock["evaluating"])
        curve.append(row)
        log(f"{task.name:>18} {step:>8} {row['success']:>8.0%} {row['success_any']:>8.0%} {row['mean_return']:>8.1f} "
            f"{100 * row['final_distance']:>8.1f} {row['moved']:>6.0%} {row['wall_s']:>7.0f}")
        result.update(steps=step, wall_s=wall, train_s=row["train_s"],
                      train_steps_per_s=step / row["train_s"] if row["train_s"] else None,
                      steps_to_target=steps_to(curve))
        if on_point is not None:
            on_point(result)

    radius = Tightening(env.unwrapped, eval_env.unwrapped, log)

    class Every(BaseCallback):
        def _on_step(self) -> bool:
            radius.after_step(self.locals["dones"], self.locals["infos"], self.num_timesteps)
            if self.num_timesteps % eval_every == 0:
                point(self.num_timesteps)
            return True

    log(f"{'env':>18} {'steps':>8} {'success':>8} {'any step':>8} {'return':>8} {'dist cm':>8} {'moved':>6} "
        f"{'wall s':>7}")
    point(0)
    model.learn(total_timesteps=steps, callback=Every())
    if curve[-1]["steps"] != model.num_timesteps:
        point(model.num_timesteps)
    env.close()
    eval_env.close()
    return result


def learner_view(env, normalize: bool):
    """The env as the learner steps it, and what the evaluation hands the policy for an observation. With
    `normalize`, SB3's VecNormalize over it: observations and both goals shifted and scaled by their running mean
    and variance (clipped at 10 deviations), rewards as they are (HER recomputes them from the raw goals, which
    the replay buffer keeps); the evaluation normalises with the statistics training has gathered so far. Why:
    the pick bin's goals span 12 cm around a point half a metre out, and a raw network resolves 2 cm there
    slowly (doc/benchmarks-history.md, 2026-12-03 afternoon); the HER paper's learner normalised its inputs so."""
    if not normalize:
        return env, lambda observation: observation
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    vec = VecNormalize(DummyVecEnv([lambda: env]), norm_obs=True, norm_reward=False)
    return vec, vec.normalize_obs


class Tightening:
    """A success radius that tightens as the learner succeeds: where the training env's `distance_threshold`
    (a curriculum's) is wider than the evaluated env's, it narrows by TIGHTEN_BY each time the last TIGHTEN_AFTER
    training episodes ended in success at least TIGHTEN_AT of the time, down to the evaluated radius. HER
    relabels with the env's `compute_reward`, so its relabelled rewards follow the radius at once."""

    def __init__(self, training, evaluated, log: Callable[[str], None]):
        self.env, self.goal, self.log = training, getattr(evaluated, "distance_threshold", None), log
        self.recent: list[bool] = []

    def after_step(self, dones, infos, steps: int) -> None:
        if self.goal is None or self.env.distance_threshold <= self.goal:
            return
        for done, info in zip(dones, infos):
            if done:
                self.recent = (self.recent + [bool(info.get("is_success", False))])[-TIGHTEN_AFTER:]
        if len(self.recent) == TIGHTEN_AFTER and np.mean(self.recent) >= TIGHTEN_AT:
            self.env.distance_threshold = max(self.goal, round(self.env.distance_threshold - TIGHTEN_BY, 6))
            self.recent = []
            self.log(f"{steps} steps: the training radius tightens to {100 * self.env.distance_threshold:.1f} cm")


def compare_reach(runs: dict) -> dict | None:
    """FrankaReach-v0 beside PandaReach-v3 (both in this run): the steps each needed to reach SUCCESS_TARGET
    and FrankaReach's as a multiple of PandaReach's (None where either never reached it)."""
    if not all(name in runs for name in REACH_PAIR):
        return None
    franka, panda = (runs[name]["steps_to_target"] for name in REACH_PAIR)
    return {"target": SUCCESS_TARGET, "FrankaReach-v0": franka, "PandaReach-v3": panda,
            "ratio": franka / panda if franka and panda else None}


def inputs(result: dict) -> str:
    """What the learner saw, for a plot's title (a run recorded before `normalized_observations` saw raw ones)."""
    return "observations normalised" if result.get("normalized_observations") else "raw observations"


def plot(result: dict, path: Path) -> None:
    """Success rate (last step, any step), mean return and the final distance to the goal against steps, the
    zero-action policy's as a dotted line."""
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
    right.set(xlabel="training steps", ylabel="goal distance at the end [cm]", title="distance", ylim=(0, None))
    figure.suptitle(f"SAC + HER on {result['name']}, {result['reward_type']} reward, {inputs(result)}", fontsize=10)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def plot_pair(runs: dict, path: Path) -> None:
    """The two Reach envs' held-out success against steps on one plot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(5.5, 3.4), dpi=90)
    for name in REACH_PAIR:
        curve = runs[name]["curve"]
        axes.plot([r["steps"] for r in curve], [100 * r["success"] for r in curve], "o-", ms=3, label=name)
    axes.axhline(100 * SUCCESS_TARGET, color="grey", lw=1, ls=":", label=f"{SUCCESS_TARGET:.0%}")
    first = runs[REACH_PAIR[0]]
    seeds = first["eval_seeds"]
    axes.set(xlabel="training steps", ylabel="held-out success [%]", ylim=(-3, 103),
             title=f"SAC + HER, same settings and budget (learner seed {first['seed']})\n"
                   f"held-out seeds {seeds[0]}-{seeds[-1]}, {inputs(first)}")
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def reached(steps: int | None) -> str:
    return f"first at {steps} steps" if steps is not None else "never reached"


def file_name(name: str) -> str:
    return "her_" + name.replace(":", "_").replace("-", "_").lower() + ".png"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", nargs="+", default=list(DEFAULT_ENVS), choices=sorted(TASKS), metavar="ENV",
                        help=f"in this order (default: {' '.join(DEFAULT_ENVS)}; also: FrankaLift-v0, its options)")
    parser.add_argument("--steps", type=int, default=10_000, help="training env steps of the Reach envs")
    parser.add_argument("--long-steps", type=int, default=100_000,
                        help="training env steps of FrankaLift-v0 and FrankaPickPlace-v0")
    parser.add_argument("--eval-every", type=int, default=500, help="evaluate every this many steps (Reach)")
    parser.add_argument("--long-eval-every", type=int, default=5_000, help="... and for the long runs")
    parser.add_argument("--eval-episodes", type=int, default=len(EVAL_SEEDS),
                        help=f"held-out seeds from {EVAL_SEEDS[0]} on (default {len(EVAL_SEEDS)})")
    parser.add_argument("--out", type=Path, default=Path("build/her"), help="her.json and the curves go here")
    parser.add_argument("--reward", choices=("sparse", "dense"), default="sparse",
                        help="the envs' reward (HER's is sparse; dense: minus the distance, PandaReachDense-v3)")
    parser.add_argument("--no-normalize", dest="normalize", action="store_false",
                        help="the learner sees the raw observations (by default they are normalised, VecNormalize)")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--threads", type=int, default=1, help="torch's CPU threads")
    args = parser.parse_args(argv)
    try:
        require("make bench-her", "stable_baselines3", "torch")
        if any(name.startswith("Panda") for name in args.envs):
            require("make bench-her (panda-gym's envs)", "panda_gym")
    except MissingExtra as exc:
        print(f"bench-her: error: {exc}", file=sys.stderr)
        return 2
    if min(args.steps, args.long_steps, args.eval_every, args.long_eval_every, args.eval_episodes) < 1:
        parser.error("--steps, --long-steps, --eval-every, --long-eval-every and --eval-episodes must be positive")
    args.out.mkdir(parents=True, exist_ok=True)
    seeds = range(EVAL_SEEDS[0], EVAL_SEEDS[0] + args.eval_episodes)
    report = {"date": time.strftime("%Y-%m-%d"), "command": " ".join(sys.argv), "runs": {}}

    def save(result: dict | None = None) -> None:
        if result is not None:
            report["runs"][result["name"]] = result
        report["reach_comparison"] = compare_reach(report["runs"])
        (args.out / "her.json").write_text(json.dumps(report, indent=1))

    for name in args.envs:
        task = TASKS[name]
        budget = args.long_steps if task.long else args.steps
        every = args.long_eval_every if task.long else args.eval_every
        result = train(task, budget, every, args.seed, args.threads, seeds, on_point=save, reward_type=args.reward,
                       normalize=args.normalize)
        save(result)
        plot(result, args.out / file_name(name))
        print(f"{name}: {result['steps']} steps in {result['wall_s']:.0f} s ({result['train_steps_per_s']:.1f} training "
              f"steps/s, evaluations excluded); final success {result['curve'][-1]['success']:.0%} on "
              f"{len(result['eval_seeds'])} held-out seeds, {SUCCESS_TARGET:.0%} {reached(result['steps_to_target'])}; "
              f"{args.out / file_name(name)}", flush=True)
    comparison = report["reach_comparison"]
    if comparison is not None:
        plot_pair(report["runs"], args.out / "her_reach_vs_panda.png")
        ratio = f"{comparison['ratio']:.2f}x" if comparison["ratio"] else "no ratio (one never got there)"
        print(f"Reach: {SUCCESS_TARGET:.0%} held-out success {reached(comparison['FrankaReach-v0'])} (FrankaReach-v0), "
              f"{reached(comparison['PandaReach-v3'])} (PandaReach-v3): {ratio}; {args.out / 'her_reach_vs_panda.png'}")
    print(f"{args.out / 'her.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
