"""The simulation standard's StepSimulation against the home-made lock-step request (`world/step`, then
the `task/status` that follows), both asking a lock-step `sim` for one env step (24 physics steps)."""
from __future__ import annotations

import json
import time

from std_msgs.msg import String, UInt32

from binpick_sim.nodes.servers import simulation_node

from .direct import direct_sim
from .figures import Figure, Skipped, percentile
from .session import sim_and_client

TRIALS = 60
STEPS = 24  # one env step (task.steps_per_action)


def raw_steps_ms(sim) -> float:
    start = time.perf_counter()
    for _ in range(STEPS):
        sim.world.client.stepSimulation()
    return (time.perf_counter() - start) * 1000


def steps_ms(trials: int = TRIALS) -> tuple[list[float], list[float], list[float]]:
    """(raw, world/step -> task/status, step_simulation round trip) in milliseconds, interleaved so the
    machine's load weighs on all three alike."""
    from simulation_interfaces.srv import StepSimulation

    with sim_and_client({"lockstep": True, "task": True, "camera": False}, {}) as (_, client):
        client.node.create_subscription(String, "task/status", client._keeper("task/status"), 10)
        stepper = client.node.create_publisher(UInt32, "world/step", 10)
        service = client.node.create_client(StepSimulation, "step_simulation")
        client.spin_until(lambda: service.service_is_ready() and stepper.get_subscription_count() > 0, 120, "sim")
        stepper.publish(UInt32(data=0))  # a lock-step world publishes only when asked
        client.wait_for_topics(["task/status"], timeout=60)
        sequence = lambda: json.loads(client.latest["task/status"].data)["sequence"]  # noqa: E731
        sim = direct_sim()
        raw, home_made, standard = [], [], []
        for _ in range(trials):
            raw.append(raw_steps_ms(sim))
            target = sequence() + 1
            start = time.perf_counter()
            stepper.publish(UInt32(data=STEPS))
            client.spin_until(lambda: sequence() >= target, 30, "task/status")
            home_made.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            future = service.call_async(StepSimulation.Request(steps=STEPS))
            client.spin_until(future.done, 30, "step_simulation")
            standard.append((time.perf_counter() - start) * 1000)
            client.spin_until(lambda: sequence() >= target + 1, 30, "its task/status")  # let it settle too
        sim.close()
        return raw, home_made, standard


def measure() -> list[Figure]:
    if not simulation_node.available():
        raise Skipped("needs simulation_interfaces, which a sourced ROS 2 Jazzy install has "
                      "(ros-jazzy-simulation-interfaces); the pip-only venv has not")
    raw, home_made, standard = steps_ms()
    figures = []
    for q in (50, 99):
        figures.append(Figure("standard", f"world/step {STEPS} steps -> task/status, p{q}", percentile(home_made, q),
                              "ms", percentile(raw, q), f"raw: {STEPS} stepSimulation"))
        figures.append(Figure("standard", f"step_simulation {STEPS} steps round trip, p{q}", percentile(standard, q),
                              "ms", percentile(raw, q), f"raw: {STEPS} stepSimulation"))
    return figures


if __name__ == "__main__":
    for figure in measure():
        print(figure.as_dict())
