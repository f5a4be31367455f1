"""Physics: steps per second of the world node's loop (publishing everything) vs raw stepSimulation."""
from __future__ import annotations

import time

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


def raw_steps_per_second(seconds: float = SECONDS) -> float:
    """stepSimulation in a tight loop on the same scene (cell, arm holding home, settled objects)."""
    sim = direct_sim()
    try:
        step, count, start = sim.world.client.stepSimulation, 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            for _ in range(100):
                step()
            count += 100
        return count / (time.perf_counter() - start)
    finally:
        sim.close()


def node_steps_per_second(seconds: float = SECONDS) -> float:
    """The `sim` process as fast as it can go, camera off, read from the stamps of joint_states; every
    state topic has a subscriber (the nodes publish only what someone subscribes to)."""
    with sim_and_client({"realtime_factor": 0.0, "camera": False}, WATCHED) as (process, client):
        client.spin_for(1.0)
        sim0, wall0 = client.stamp("joint_states"), time.perf_counter()
        client.spin_for(seconds)
        sim1, wall1 = client.stamp("joint_states"), time.perf_counter()
        return (sim1 - sim0) / TIMESTEP / (wall1 - wall0)


def measure() -> list[Figure]:
    raw = raw_steps_per_second()
    node = node_steps_per_second()
    return [Figure("physics", "world node loop, all publishers on", node, "steps/s", raw,
                   "realtime_factor 0, camera off")]


if __name__ == "__main__":
    for figure in measure():
        print(figure.as_dict())
