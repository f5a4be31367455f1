"""Memory: resident set size of the `sim` process after 1,000 and 100,000 physics steps with every
publisher on and watched, beside a plain PyBullet process stepping the same scene."""
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
    raw, node = raw_rss_mb(), node_rss_mb()
    return [Figure("memory", f"sim process RSS after {steps:,} steps", n, "MB", r,
                   "all topics subscribed, camera 160x120")
            for steps, n, r in zip(CHECKPOINTS, node, raw)]


if __name__ == "__main__":
    for figure in measure():
        print(figure.as_dict())
