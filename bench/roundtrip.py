"""ROS round trip: a command published -> the first joint_states that shows the arm obeying it."""
from __future__ import annotations

import time

from rclpy.experimental import EventsExecutor

from binpick_sim.nodes.clients.client import TOPICS

from .figures import Figure, percentile
from .direct import direct_sim
from .session import sim_and_client

TRIALS = 60
FAST_TRIALS = 300  # each takes ~1 ms: enough for a steady p99
SPEED = 0.3  # rad/s for joint 1, alternating in sign


def raw_round_trip_ms(trials: int = TRIALS) -> list[float]:
    """The same in-process: set the motor, step once, read the joint back."""
    sim = direct_sim()
    try:
        c, arm = sim.world.client, sim.arm
        samples = []
        for i in range(trials):
            speed = SPEED if i % 2 == 0 else -SPEED
            start = time.perf_counter()
            c.setJointMotorControl2(arm.body, arm.joints[0], c.VELOCITY_CONTROL, targetVelocity=speed, force=87)
            c.stepSimulation()
            c.getJointStates(arm.body, arm.joints)
            samples.append((time.perf_counter() - start) * 1000)
        return samples
    finally:
        sim.close()


def ros_round_trip_ms(trials: int = TRIALS, parameters: dict | None = None, **client_options) -> list[float]:
    """Real time (factor 1), as a user's controller sees it; joint_states at 100 Hz of sim time.
    `parameters` replace these (e.g. realtime_factor 0 and joint_states at every step: the transport)."""
    parameters = parameters or {"realtime_factor": 1.0}
    with sim_and_client({"camera": False, **parameters},
                        {"joint_states": TOPICS["joint_states"]}, **client_options) as (process, client):
        samples = []
        for i in range(trials):
            speed = SPEED if i % 2 == 0 else -SPEED
            client.spin_for(0.05)
            start = time.perf_counter()
            client.send("velocity", [speed] + [0.0] * 8)
            client.spin_until(lambda: client.latest["joint_states"].velocity[0] * speed > 0.05 * SPEED, 5.0,
                              "joint 1 following the command")
            samples.append((time.perf_counter() - start) * 1000)
        return samples


# As fast as the physics goes, joint_states after every physics step (240 Hz of sim time) and not
# capped to wall time: what is left of the round trip is the transport and one physics step.
EVERY_STEP = {"realtime_factor": 0.0, "arm:publish_rate": 240.0, "wall_rate_cap": False}


def measure() -> list[Figure]:
    raw, ros = raw_round_trip_ms(), ros_round_trip_ms()
    fast = ros_round_trip_ms(trials=FAST_TRIALS, parameters=EVERY_STEP, executor=EventsExecutor)
    figures = [Figure("round trip", f"velocity command -> joint_states, p{q}", percentile(ros, q), "ms",
                      percentile(raw, q), "raw: set motor, one step, read back")
               for q in (50, 99)]
    figures += [Figure("round trip", f"velocity command -> joint_states, p{q}", percentile(fast, q), "ms",
                       percentile(raw, q), "realtime_factor 0, joint_states every physics step, "
                       "client on EventsExecutor")
                for q in (50, 99)]
    return figures


if __name__ == "__main__":
    for figure in measure():
        print(figure.as_dict())
