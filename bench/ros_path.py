"""The ROS path against the in-process one: env steps per second of the ROS backend beside the direct
backend's, measured interleaved (both envs open, batches taking turns) so the load of a shared machine
falls on both alike; and the same for the sim process's other executors. Beside each rate, the CPU time
an env step costs (this process plus the sim process), which a busy machine disturbs far less. The
reference column holds the direct backend's figure of the same run; the ratio is the median of the
rounds' ratios (each round: one batch of each, taking turns), min-max beside it. In the same rounds, the
floor: an empty request and its reply between two processes, exchanged as the lock-step step is
(bench/echo.py), beside the gap between a ROS step and a direct one, and the share of the gap it is; and
the same exchange over a socket pair, without DDS (the floor of the step channel), beside the ROS backend
with its step channel (step_channel=True) against the same direct steps.
Last, image steps over ROS with the package's Fast DDS profile against Fast DDS's defaults: how many
waited for a lost frame's repair."""
from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import gymnasium as gym
from tqdm import tqdm

import binpick_sim.envs  # noqa: F401  (registers the ids)
from binpick_sim.envs import ENV_IDS

from binpick_sim.nodes.common.dds import PROFILE_VARIABLE

from .echo import Echo, SocketEcho
from .figures import Figure, median, per_round, percentile
from .physics import process_cpu

BATCH = {"state": 20, "image": 5}
STALL_STEPS = 200  # image steps per profile (a stall came about once in a hundred without the profile)
STALL_BATCH = 20
STALL = 0.5  # s: an image step this long waited for a frame's repair (the median step takes ~0.1 s)
ROUNDS = {"state": 21, "image": 15}  # 5 swung the ratio by +-0.1 from run to run; 12 by +-0.03
EXECUTORS = ("single", "multi")  # besides the default (events)
CHANNEL = "ros, step channel"  # the ROS backend exchanging its steps over a socket pair (step_channel=True)
WORK = 0.005  # s the echo servers keep busy before replying in the floor "around work" (~ a direct env step)


def cpu_seconds(env) -> float:
    """CPU time used so far by this process and, for the ROS backend, its sim process: what a step
    costs whatever else the machine runs (wall-clock rates on a shared machine swing with its load)."""
    backend = env.unwrapped.backend
    total = time.process_time()
    if hasattr(backend, "process"):
        total += process_cpu(backend.process.process.pid)
    return total


def interleaved(env_id: str, observation: str, variants: dict[str, dict],
                echoes: dict | None = None) -> dict[str, tuple[list[float], float]]:
    """(env steps/s of each round, CPU ms per env step) of each variant (name -> gym.make options) over
    ROUNDS turns of one batch; with `echoes` (name -> (Echo or SocketEcho, seconds of work the server does
    before each reply)), theirs too: exchanges per second, a batch of them in each round's turns (CPU: this
    process's and the echo process's)."""
    echoes = echoes or {}
    envs = {name: gym.make(env_id, observation=observation, **options) for name, options in variants.items()}
    rates: dict[str, list[float]] = {name: [] for name in [*envs, *echoes]}
    cpu: dict[str, float] = {name: 0.0 for name in rates}
    batch = BATCH[observation]
    try:
        for env in envs.values():
            env.reset(seed=0)
            env.action_space.seed(0)
            env.step(env.action_space.sample())  # warm up
        for _ in range(ROUNDS[observation]):
            for name, env in envs.items():
                start, cpu_start = time.perf_counter(), cpu_seconds(env)
                for _ in range(batch):
                    env.step(env.action_space.sample())
                rates[name].append(batch / (time.perf_counter() - start))
                cpu[name] += cpu_seconds(env) - cpu_start
            for name, (echo, work) in echoes.items():
                start, cpu_start = time.perf_counter(), echo_cpu_seconds(echo)
                for _ in range(batch):
                    echo.exchange(work=work)
                rates[name].append(batch / (time.perf_counter() - start))
                cpu[name] += echo_cpu_seconds(echo) - cpu_start
    finally:
        for env in envs.values():
            env.close()
    steps = ROUNDS[observation] * batch
    return {name: (r, 1000.0 * cpu[name] / steps) for name, r in rates.items()}


def echo_cpu_seconds(echo: Echo | SocketEcho) -> float:
    return time.process_time() + process_cpu(echo.process.pid)


def floor_figures(name: str, rates: dict, note: str) -> list[Figure]:
    """The gap between a ROS step and a direct one (ms, median of the rounds') and the floor beside it:
    the empty exchange's round trip and the share of the gap it is (the ratio of the two medians: a
    round's own gap comes near 0, or below, on a busy machine, and a ratio per round would blow up); the
    same around WORK of the server's work; and the step channel's gap beside its floor around that work."""
    def gap(variant: str) -> list[float]:
        return [1000.0 / r - 1000.0 / d for r, d in zip(rates[variant][0], rates["direct"][0])]

    def around_work(echo: str) -> float:
        return median([1000.0 / f - 1000.0 * WORK for f in rates[echo][0]])

    gaps = gap("ros")
    trips = [1000.0 / f for f in rates["floor"][0]]
    work = f"around {1000 * WORK:.0f} ms of the server's work (a state env step's physics), the client idle meanwhile"
    return [Figure("ros path", f"{name}: the gap, ros step - direct step", median(gaps), "ms", note=note),
            Figure("ros path", f"{name}: the floor, an empty request/reply between two processes (bench/echo.py)",
                   median(trips), "ms", median(gaps), "raw: the gap; ratio: the share of the gap the floor is, "
                   "medians of the same rounds"),  # (a round's own gap can be ~0 or below on a busy machine)
            Figure("ros path", f"{name}: the floor, CPU per exchange (both processes)", rates["floor"][1], "ms",
                   rates["ros"][1] - rates["direct"][1], "raw: CPU per step, ros - direct; ratio: the floor's share"),
            Figure("ros path", f"{name}: the floor without DDS, the same exchange over a socket pair (bench/echo.py)",
                   median([1000.0 / f for f in rates["socket floor"][0]]), "ms", median(trips),
                   "raw: the floor over DDS; ratio: the share of it the step channel still pays"),
            Figure("ros path", f"{name}: the floor over DDS {work}", around_work("floor, working"), "ms",
                   median(gaps), "raw: the gap; ratio: the share of the gap the floor is"),
            Figure("ros path", f"{name}: the gap with step_channel=True", median(gap(CHANNEL)), "ms", note=note),
            Figure("ros path", f"{name}: the step channel's floor, the socket pair's exchange {work}",
                   around_work("socket floor, working"), "ms", median(gap(CHANNEL)),
                   "raw: the gap with step_channel=True; ratio: the share of it the floor is")]


def image_steps_by_profile() -> dict[str, list[float]]:
    """Wall seconds of each FrankaDelta-v0 image step over ROS with the package's Fast DDS profile
    (config/fastdds.xml, which the sim process loads itself) and with Fast DDS's defaults (an empty
    profile named in the variable, which the sim then leaves alone), the two envs taking turns."""
    with tempfile.TemporaryDirectory() as folder:
        empty = Path(folder) / "defaults.xml"
        empty.write_text('<?xml version="1.0" encoding="UTF-8" ?>\n'
                         '<profiles xmlns="http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles"/>\n')
        envs = {}
        try:
            envs["package profile"] = make_env(None)
            envs["Fast DDS defaults"] = make_env(str(empty))
            steps: dict[str, list[float]] = {name: [] for name in envs}
            for _ in range(STALL_STEPS // STALL_BATCH):
                for name, env in envs.items():
                    for _ in range(STALL_BATCH):
                        start = time.perf_counter()
                        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
                        steps[name].append(time.perf_counter() - start)
                        if terminated or truncated:
                            env.reset()
        finally:
            for env in envs.values():
                env.close()
    return steps


def make_env(profile: str | None):
    """A ROS image env, reset, whose sim process started with PROFILE_VARIABLE set to `profile` (None:
    unset)."""
    saved = os.environ.pop(PROFILE_VARIABLE, None)
    if profile is not None:
        os.environ[PROFILE_VARIABLE] = profile
    try:
        env = gym.make("binpick_sim/FrankaDelta-v0", backend="ros", observation="image")
        env.reset(seed=0)  # (the sim process starts here, with this environment)
        env.action_space.seed(0)
        return env
    finally:
        os.environ.pop(PROFILE_VARIABLE, None)
        if saved is not None:
            os.environ[PROFILE_VARIABLE] = saved


def measure() -> list[Figure]:
    figures = []
    note = "reference: direct backend, interleaved"
    cases = [(e, "state") for e in sorted(ENV_IDS)] + [("binpick_sim/FrankaPosition-v0", "image")]
    dds, socket_pair = Echo(), SocketEcho()
    echoes = {"floor": (dds, 0.0), "socket floor": (socket_pair, 0.0), "floor, working": (dds, WORK),
              "socket floor, working": (socket_pair, WORK)}
    try:
        for env_id, observation in tqdm(cases, desc="ROS path", leave=False, disable=None):
            rates = interleaved(env_id, observation, {"direct": {"backend": "direct"}, "ros": {"backend": "ros"},
                                                      CHANNEL: {"backend": "ros", "step_channel": True}}, echoes)
            name = f"{env_id.split('/')[1]} ros / direct, {observation}"
            camera = ", camera 640x480" if observation == "image" else ""
            for variant, label in (("ros", ""), (CHANNEL, ", step_channel=True")):
                figures.append(Figure("ros path", name + label, median(rates[variant][0]), "steps/s",
                                      median(rates["direct"][0]), note + camera,
                                      per_round(rates[variant][0], rates["direct"][0])))
                figures.append(Figure("ros path", name + label + ", CPU per step (both processes)", rates[variant][1],
                                      "ms", rates["direct"][1], note + camera))
            figures += floor_figures(name, rates, note + camera)
    finally:
        for echo in (dds, socket_pair):
            echo.close()
    variants = {"direct": {"backend": "direct"}, "events": {"backend": "ros"}}
    variants.update({kind: {"backend": "ros", "sim_parameters": {"executor": kind}} for kind in EXECUTORS})
    rates = interleaved("binpick_sim/FrankaDelta-v0", "state", variants)
    for kind in ("events", *EXECUTORS):
        name = f"FrankaDelta-v0 ros / direct, state, sim executor {kind}"
        figures.append(Figure("ros path", name, median(rates[kind][0]), "steps/s", median(rates["direct"][0]), note,
                              per_round(rates[kind][0], rates["direct"][0])))
        figures.append(Figure("ros path", name + ", CPU per step", rates[kind][1], "ms", rates["direct"][1], note))
    steps = image_steps_by_profile()
    ours, defaults = steps["package profile"], steps["Fast DDS defaults"]
    note = f"raw: Fast DDS's defaults, {STALL_STEPS} steps each, taking turns"
    figures += [
        Figure("ros path", f"FrankaDelta-v0 ros, image: steps over {STALL} s (waiting for a lost frame)",
               sum(t > STALL for t in ours), "steps", sum(t > STALL for t in defaults), note),
        Figure("ros path", "FrankaDelta-v0 ros, image: slowest step", 1000 * max(ours), "ms",
               1000 * max(defaults), note),
        Figure("ros path", "FrankaDelta-v0 ros, image: p50 step", 1000 * percentile(ours, 50), "ms",
               1000 * percentile(defaults, 50), note),
    ]
    return figures


if __name__ == "__main__":
    for figure in measure():
        print(figure.as_dict())
