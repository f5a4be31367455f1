"""Issue 25's findings against the camera and the time-indexed robot interface, one test (or more) each:
a camera parameter that is not a whole camera (6), a dead render worker (6), frames past the camera's
pixel budget and memory kept after the last subscriber left (7), intrinsics that mean nothing (9), a
flood of oversized robot actions (10), and a time reset under the robot interface (12)."""
import os
import signal
import time

import numpy as np
import pytest
from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient
from std_msgs.msg import Float64MultiArray, Int64MultiArray

from binpick_sim.nodes.clients.client import TOPICS, SimClient

from conftest import parameters
from test_fuzz import set_parameter, statuses


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        return int(status.read().split("VmRSS:")[1].split()[0]) / 1024


# --- 12: a time reset opens a new epoch of the robot interface; its time never goes back -----------------

def test_robot_timestamps_keep_counting_across_a_time_reset_in_the_core():
    """/clock rewound to 0 under a running robot interface: t and timestamp_ms go on (one timestep per
    step, none negative), and the backend counts the new epoch."""
    from binpick_sim.control.robot_interface import Action, Robot

    with Robot(realtime_factor=0.0) as robot:
        f = robot.frontend
        t = f.append_desired_action(Action())
        f.wait_until_timeindex(t + 50)
        robot.loop.run(robot.loop.reset_time)
        now = f.get_current_timeindex()
        f.wait_until_timeindex(now + 50)
        stamps = [f.get_timestamp_ms(i) for i in range(now + 50)]
        step_ms = robot.sim.world.timestep * 1000
        assert stamps[0] == 0.0 and min(stamps) >= 0.0
        assert np.allclose(np.diff(stamps), step_ms), "one timestep between any two indices, reset or not"
        assert robot.backend.time_epoch == 1
        assert robot.loop.run(lambda: robot.sim.world.time) < (now + 50) * step_ms / 1000  # /clock did go back


def test_robot_steps_keep_counting_across_reset_simulation_time_over_ros(ros_context):
    """The same over ROS, as the issue found it: reset_simulation (scope TIME) while robot/steps streams;
    every step's timestamp_ms is after the one before, and the robot node reports the epoch."""
    from binpick_sim.nodes.process.stack import SimStack
    from binpick_sim.nodes.servers import simulation_node

    if not simulation_node.available():
        pytest.skip("simulation_interfaces is not installed (ros-jazzy-simulation-interfaces, or ../shared/ros-tools)")
    from simulation_interfaces.srv import ResetSimulation

    world = parameters(robot_interface=True, realtime_factor=0.0, camera=False)
    with SimStack(ros_context, {"world": world}) as stack:
        steps = []
        client = SimClient("epoch_watcher", context=ros_context, topics={"robot/accepted": Int64MultiArray})
        try:
            status = statuses(client)
            client.node.create_subscription(Float64MultiArray, "robot/steps", lambda m: steps.append(m.data[:2]), 1000)
            actions = client.node.create_publisher(Float64MultiArray, "robot/desired_actions", 10)
            client.spin_until(lambda: actions.get_subscription_count() > 0, 30, "the robot node")
            actions.publish(Float64MultiArray(data=[1.0] + [0.0] * 9 + [float("nan")] * 27))
            client.spin_until(lambda: len(steps) > 100, 60, "robot/steps")
            reset = client.node.create_client(ResetSimulation, "reset_simulation")
            assert reset.wait_for_service(timeout_sec=30)
            future = reset.call_async(ResetSimulation.Request(scope=ResetSimulation.Request.SCOPE_TIME))
            client.spin_until(future.done, 30, "reset_simulation answered")
            assert future.result().result.result == 1  # RESULT_OK
            seen = len(steps)
            client.spin_until(lambda: len(steps) > seen + 100, 60, "robot/steps after the reset")
            client.spin_until(lambda: status("/robot").get("time_epoch") == "1", 30, "time_epoch 1 on /diagnostics")
            t, stamps = np.array(steps).T
            order = np.argsort(t)
            assert np.all(np.diff(t[order]) > 0) and np.all(np.diff(stamps[order]) > 0), "timestamp_ms went back"
            assert stamps.min() >= 0.0
            assert stack.sim.world.time * 1000 < stamps.max()  # /clock restarted, the interface's time did not
        finally:
            client.close()


# --- 10: oversized robot actions are refused by their size; memory stays flat under a flood ----------------

FLOOD = 600


@pytest.mark.slow
def test_a_flood_of_oversized_actions_is_refused_without_keeping_memory(ros_context, tmp_path):
    """600 actions of a million values each (8 MB apiece, from a publisher of depth 100), all refused: each is answered [-1, -1] and counted,
    and the process grows by far less than the 800 MB a queue of 100 slots of 8 MB kept on main (margin:
    250 MB, for Fast DDS's own buffers and a busy machine's allocator)."""
    from binpick_sim.nodes.process.spawn import SimProcess

    process = SimProcess({"robot_interface": True, "camera": False}, log=tmp_path / "sim.log")
    client = SimClient("flooder", context=ros_context, topics={"robot/accepted": Int64MultiArray})
    try:
        status = statuses(client)
        actions = client.node.create_publisher(Float64MultiArray, "robot/desired_actions", 100)  # as the finding's
        client.spin_until(lambda: (process.check_alive(), actions.get_subscription_count() > 0)[1], 120,
                          "the robot node")
        client.spin_for(2.0)
        before = rss_mb(process.process.pid)
        huge = Float64MultiArray(data=[1.0] * 1_000_000)
        for i in range(FLOOD):
            actions.publish(huge)
            if i % 100 == 0:
                client.spin_for(0.01)
        client.spin_until(lambda: int(status("/robot").get("rejected[robot/desired_actions]", 0)) > 0, 60,
                          "the refusals counted")
        client.spin_for(3.0)
        process.check_alive()
        grown = rss_mb(process.process.pid) - before
        assert grown < 250, f"{grown:.0f} MB kept after a flood of refused actions"
        assert list(client.latest["robot/accepted"].data) == [-1, -1]
        # still serving: a good action is taken
        actions.publish(Float64MultiArray(data=[7.0] + [0.0] * 9 + [float("nan")] * 27))
        client.spin_until(lambda: client.latest["robot/accepted"].data[0] == 7, 30, "the good action answered")
        assert client.latest["robot/accepted"].data[1] >= 0
    finally:
        client.close()
        process.stop()
