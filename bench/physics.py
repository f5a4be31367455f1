"""Physics: steps per second of the world node's loop (publishing everything) vs raw stepSimulation."""
from __future__ import annotations

import os
import time
from pathlib import Path

from geometry_msgs.msg import WrenchStamped
from rosgraph_msgs.msg import Clock

from binpick_sim.nodes.clients.client import TOPICS

from .figures import Figure
from .direct import TIMESTEP, direct_sim
from .session import sim_and_client

SECONDS = 5.0
WATCHED = {"joint_states": TOPICS["joint_states"], "arm/ee_pose": TOPICS["arm/ee_pose"],
           "world/objects": TOPICS["world/objects"], "/clock": Clock,
           "arm/left_finger/wrench": WrenchStamped, "arm/right_finger/wrench": WrenchStamped}


def raw_steps_per_second(seconds: float = SECONDS, clock=time.perf_counter) -> float:
    """stepSimulation in a tight loop on the same scene (cell, arm holding home, settled objects), per
    second of `clock`: wall time, or (time.process_time) this process's CPU time, which other processes
    on the machine barely move."""
    sim = direct_sim()
    try:
        step, count, start = sim.world.client.stepSimulation, 0, clock()
        while clock() - start < seconds:
            for _ in range(100):
                step()
            count += 100
        return count / (clock() - start)
    finally:
        sim.close()


def node_steps_per_second(seconds: float = SECONDS) -> tuple[float, float]:
    """The `sim` process as fast as it can go, camera off, read from the stamps of joint_states; every
    state topic has a subscriber (the nodes publish only what someone subscribes to). Returns steps per
    wall second and per CPU second of the whole sim process (every thread of it)."""
    with sim_and_client({"realtime_factor": 0.0, "camera": False}, WATCHED) as (process, client):
        client.spin_for(1.0)
        sim0, wall0, cpu0 = client.stamp("joint_states"), time.perf_counter(), process_cpu(process.process.pid)
        client.spin_for(seconds)
        sim1, wall1, cpu1 = client.stamp("joint_states"), time.perf_counter(), process_cpu(process.process.pid)
        steps = (sim1 - sim0) / TIMESTEP
        return steps / (wall1 - wall0), steps / (cpu1 - cpu0)


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of a process, all its threads."""
    return stat_cpu(Path(f"/proc/{pid}/stat").read_text())


def stat_cpu(stat: str) -> float:
    """User + system CPU seconds in the text of a /proc/<pid>/stat (or .../task/<tid>/stat) file."""
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure() -> list[Figure]:
    raw = raw_steps_per_second()
    node, node_cpu = node_steps_per_second()
    raw_cpu = raw_steps_per_second(SECONDS / 2, clock=time.process_time)
    return [Figure("physics", "world node loop, all publishers on", node, "steps/s", raw,
                   "realtime_factor 0, camera off"),
            Figure("physics", "world node loop, all publishers on, per CPU second of the sim process", node_cpu,
                   "steps/CPU s", raw_cpu, "raw: per CPU second of stepSimulation alone")]


if __name__ == "__main__":
    for figure in measure():
        print(figure.as_dict())
