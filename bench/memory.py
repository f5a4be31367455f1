"""Memory: resident set size of the `sim` process after 1,000 and 100,000 physics steps with every
publisher on and watched, beside a plain PyBullet process stepping the same scene; and the resident set
of a process running one gym env (made, reset, 50 steps) per env and backend, beside panda-gym's
PandaPickAndPlace-v3 in the same kind of process (the raw column holds panda-gym's figure)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

from tqdm import tqdm

from binpick_sim.nodes.clients.client import TOPICS

from .figures import Figure
from .direct import TIMESTEP
from .session import sim_and_client

CHECKPOINTS = (1_000, 100_000)
CAMERA = {"camera.width": 160, "camera.height": 120}  # keeps 100,000 steps to a few minutes

RAW_SCRIPT = textwrap.dedent("""
    import sys
    from bench.direct import direct_sim
    sim = direct_sim(width=160, height=120)
    done = 0
    for checkpoint in map(int, sys.argv[1:]):
        for _ in range(checkpoint - done):
            sim.world.client.stepSimulation()
        done = checkpoint
        print(open("/proc/self/status").read().split("VmRSS:")[1].split()[0], flush=True)
""")


GYM_STEPS = 50
GYM_SCRIPT = textwrap.dedent("""
    import sys, json
    import gymnasium as gym
    env_id, kwargs = sys.argv[1], json.loads(sys.argv[2])
    if env_id.startswith("binpick_sim/"):
        import binpick_sim.envs
    else:
        import panda_gym
    env = gym.make(env_id, **kwargs)
    env.reset(seed=0)
    env.action_space.seed(0)
    for _ in range({steps}):
        env.step(env.action_space.sample())
    status = open("/proc/self/status").read()
    figures = {{key: int(status.split(key + ":")[1].split()[0]) for key in ("VmRSS", "VmHWM")}}
    backend = getattr(env.unwrapped, "_backend", None)
    process = getattr(getattr(backend, "process", None), "process", None)  # the ROS backend's private sim
    if process is not None:
        figures["sim"] = int(open(f"/proc/{{process.pid}}/status").read().split("VmRSS:")[1].split()[0])
    print(json.dumps(figures), flush=True)
    env.close()
""").format(steps=GYM_STEPS)
PEER_ID = "PandaPickAndPlace-v3"
GYM_ENVS = [("FrankaDelta-v0 direct, state", "binpick_sim/FrankaDelta-v0", {"observation": "state"}),
            ("FrankaVelocity-v0 direct, state", "binpick_sim/FrankaVelocity-v0", {"observation": "state"}),
            ("FrankaDelta-v0 direct, image", "binpick_sim/FrankaDelta-v0", {"observation": "image"}),
            ("FrankaDelta-v0 ros, state", "binpick_sim/FrankaDelta-v0", {"observation": "state", "backend": "ros"})]


def gym_process_kb(env_id: str, kwargs: dict) -> dict | None:
    """VmRSS / VmHWM [kB] of a fresh process that made `env_id`, reset it and took GYM_STEPS random steps
    (with `sim`: the ROS backend's sim process); None where the env cannot be made (panda-gym absent)."""
    import json

    done = subprocess.run([sys.executable, "-c", GYM_SCRIPT, env_id, json.dumps(kwargs)], capture_output=True,
                          text=True, timeout=600)
    if done.returncode != 0:
        if "panda_gym" in done.stderr and "ModuleNotFoundError" in done.stderr:
            return None
        raise RuntimeError(f"{env_id} {kwargs}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def gym_figures() -> list[Figure]:
    peer = gym_process_kb(PEER_ID, {})
    peer_mb = peer["VmRSS"] / 1024 if peer else None
    figures = []
    for name, env_id, kwargs in tqdm(GYM_ENVS, desc="gym memory", leave=False, disable=None):
        found = gym_process_kb(env_id, kwargs)
        note = f"after reset + {GYM_STEPS} steps; peak {found['VmHWM'] / 1024:.0f} MB"
        note += f"; raw: {PEER_ID} (panda-gym)" if peer else "; panda-gym not installed"
        figures.append(Figure("memory", f"gym env process RSS, {name}", found["VmRSS"] / 1024, "MB", peer_mb, note))
        if "sim" in found:
            figures.append(Figure("memory", f"gym env's sim process RSS, {name}", found["sim"] / 1024, "MB", None,
                                  "the ROS backend's private sim"))
    return figures


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        return int(status.read().split("VmRSS:")[1].split()[0]) / 1024


def raw_rss_mb() -> list[float]:
    output = subprocess.run([sys.executable, "-c", RAW_SCRIPT, *map(str, CHECKPOINTS)], capture_output=True,
                            text=True, check=True, timeout=1200).stdout
    return [int(line) / 1024 for line in output.split()]


def node_rss_mb() -> list[float]:
    with sim_and_client({"realtime_factor": 0.0}, TOPICS, CAMERA) as (process, client):
        start = client.stamp("joint_states")
        found = []
        with tqdm(total=CHECKPOINTS[-1], desc="memory soak", unit="step", leave=False, disable=None) as bar:
            for checkpoint in CHECKPOINTS:
                while (client.stamp("joint_states") - start) / TIMESTEP < checkpoint:
                    client.spin_for(0.5)
                    bar.n = min(int((client.stamp("joint_states") - start) / TIMESTEP), CHECKPOINTS[-1])
                    bar.refresh()
                found.append(rss_mb(process.process.pid))
        return found


def measure() -> list[Figure]:
    figures = gym_figures()
    raw, node = raw_rss_mb(), node_rss_mb()
    return figures + [Figure("memory", f"sim process RSS after {steps:,} steps", n, "MB", r,
                             "all topics subscribed, camera 160x120")
                      for steps, n, r in zip(CHECKPOINTS, node, raw)]


if __name__ == "__main__":
    for figure in measure():
        print(figure.as_dict())
