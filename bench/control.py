"""The 1 kHz control loop of the time-indexed interface: how fast it runs free, how close it holds
real time, and what a closed loop (append an action, wait for its observation) costs in-process and
over ROS. The raw reference is PyBullet's own torque loop on the same scene: set the torques, step,
read the joints."""
from __future__ import annotations

import tempfile
import time
from pathlib import Path


from binpick_sim.nodes.clients.robot_client import RosRobotFrontend
from binpick_sim.nodes.process.spawn import SimProcess
from binpick_sim.control.robot_interface import Action, Robot

from .direct import direct_sim
from .figures import Figure, percentile

RATE = 1000.0
SECONDS = 3.0
ROUND_TRIPS = 1000


def raw_torque_loop() -> tuple[float, list[float]]:
    """(cycles per second, per-cycle ms) of the bare torque loop at 1 kHz physics."""
    sim = direct_sim(timestep=1.0 / RATE)
    try:
        c, arm = sim.world.client, sim.arm
        c.setJointMotorControlArray(arm.body, arm.joints, c.VELOCITY_CONTROL, forces=[0.0] * len(arm.joints))
        torque = [0.0] * len(arm.joints)
        samples, start = [], time.perf_counter()
        while time.perf_counter() - start < SECONDS:
            begin = time.perf_counter()
            c.setJointMotorControlArray(arm.body, arm.joints, c.TORQUE_CONTROL, forces=torque)
            c.stepSimulation()
            c.getJointStates(arm.body, arm.joints)
            samples.append((time.perf_counter() - begin) * 1000)
        return len(samples) / (time.perf_counter() - start), samples
    finally:
        sim.close()


def holding(frontend) -> Action:
    """Hold the pose the arm is in (PD on every joint), so the loop does real work."""
    return Action.make(position=frontend.get_robot_observation(frontend.get_current_timeindex()).position)


def free_running_steps_per_second(realtime_factor: float) -> float:
    with Robot(rate=RATE, realtime_factor=realtime_factor) as robot:
        f = robot.frontend
        f.wait_until_timeindex(f.append_desired_action(Action()))
        f.append_desired_action(holding(f))
        time.sleep(0.5)
        t0, wall0 = f.get_current_timeindex(), time.perf_counter()
        time.sleep(SECONDS)
        return (f.get_current_timeindex() - t0) / (time.perf_counter() - wall0)


def closed_loop_ms(frontend, trips: int = ROUND_TRIPS) -> tuple[float, list[float]]:
    """(round trips per second, per-trip ms): append an action, wait for the observation of its step."""
    action = holding(frontend)
    samples, start = [], time.perf_counter()
    for _ in range(trips):
        begin = time.perf_counter()
        frontend.get_robot_observation(frontend.append_desired_action(action))
        samples.append((time.perf_counter() - begin) * 1000)
    return trips / (time.perf_counter() - start), samples


def in_process_closed_loop() -> tuple[float, list[float]]:
    with Robot(rate=RATE, realtime_factor=1.0) as robot:
        robot.frontend.wait_until_timeindex(robot.frontend.append_desired_action(Action()))
        return closed_loop_ms(robot.frontend)


def ros_closed_loop() -> tuple[float, list[float]]:
    """A `sim` process serving robot/... at 1 kHz real time; this process is the user's controller."""
    with tempfile.TemporaryDirectory() as folder:
        process = SimProcess({"robot_interface": True, "camera": False, "realtime_factor": 1.0},
                             log=Path(folder) / "sim.log")
        try:
            with RosRobotFrontend(timeout=60.0) as frontend:
                frontend.wait_until_timeindex(frontend.append_desired_action(Action()))
                closed_loop_ms(frontend, 100)  # warm up discovery and the first allocations
                return closed_loop_ms(frontend)
        finally:
            process.stop()


def measure() -> list[Figure]:
    raw_rate, raw_ms = raw_torque_loop()
    raw_rtf = raw_rate / RATE
    free = free_running_steps_per_second(0.0) / RATE
    paced = free_running_steps_per_second(1.0) / RATE
    local_rate, local_ms = in_process_closed_loop()
    ros_rate, ros_ms = ros_closed_loop()
    figures = [
        Figure("control", "1 kHz loop free-running (realtime_factor 0)", free, "x real time", raw_rtf,
               "raw: torque, step, read"),
        Figure("control", "1 kHz loop at realtime_factor 1", paced, "x real time", raw_rtf),
        Figure("control", "closed loop in-process", local_rate, "round trips/s", raw_rate),
        Figure("control", "closed loop over ROS", ros_rate, "round trips/s", raw_rate,
               "sim in its own process"),
    ]
    figures += [Figure("control", f"closed loop over ROS, p{q}", percentile(ros_ms, q), "ms",
                       percentile(raw_ms, q)) for q in (50, 99)]
    figures += [Figure("control", f"closed loop in-process, p{q}", percentile(local_ms, q), "ms",
                       percentile(raw_ms, q)) for q in (50, 99)]
    return figures


if __name__ == "__main__":
    for figure in measure():
        print(figure.as_dict())
