"""Survives its users' mistakes: garbage in bursts, resets under load, bad scene files, signals, and
long runs; and repeats itself exactly in lock-step."""
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import yaml
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient
from std_msgs.msg import Float64MultiArray, UInt32

from binpick_sim.config import required_keys
from binpick_sim.envs.backends import RosBackend
from binpick_sim.nodes.clients.client import TOPICS, SimClient
from binpick_sim.nodes.process.spawn import SimProcess
from binpick_sim.paths import default_config

from helpers import rss_mb

GOOD = [0.3, -0.5, -0.2, -2.2, 0.1, 1.8, 0.5, 0.03, 0.03]


def latest_status(client, node_name):
    arrays = []
    client.node.create_subscription(DiagnosticArray, "/diagnostics", arrays.append, 10)

    def status():
        found = [s for a in arrays for s in a.status if s.name == node_name]
        return {kv.key: kv.value for kv in found[-1].values} if found else {}
    return status


def garbage(length):
    return [[], [0.0] * (length - 1), [0.0] * (length + 7), [float("nan")] * length, [float("inf")] * length,
            [-float("inf")] + [0.0] * (length - 1), [1e308, -1e308] + [float("nan")] * (length - 2)]


@pytest.mark.parametrize("kind, length", [("position", 9), ("velocity", 9), ("delta", 5)])
def test_a_burst_of_garbage_changes_nothing_and_the_node_keeps_serving(client, stack, kind, length):
    status = latest_status(client, "/arm")
    client.spin_for(0.3)
    before = stack.loop.run(lambda: (stack.sim.arm.joint_states()[0], stack.sim.arm.targets.copy()))
    bad = garbage(length)
    for i in range(1000):
        client.publishers[kind].publish(Float64MultiArray(data=bad[i % len(bad)]))
    client.spin_until(lambda: int(status().get(f"rejected[arm/{kind}_commands]", 0)) > 0, 30, "rejections counted")
    client.spin_for(0.5)
    after = stack.loop.run(lambda: (stack.sim.arm.joint_states()[0], stack.sim.arm.targets.copy()))
    assert np.abs(after[0] - before[0]).max() < 1e-3
    assert np.array_equal(after[1], before[1])
    rejected = int(status()[f"rejected[arm/{kind}_commands]"])
    assert 0 < rejected <= 1000  # a keep-last queue of 10 may drop some of a burst, never invent any
    client.send("position", GOOD)  # still serving
    client.spin_until(lambda: np.abs(client.joint_positions() - GOOD).max() < 0.01, 30, "the good command")


def test_huge_finite_values_are_clipped_not_obeyed(client, stack):
    status = latest_status(client, "/arm")
    client.send("position", [1e300] * 9)
    client.spin_until(lambda: int(status().get("clipped_total", 0)) >= 1, 30, "the clip counted")
    assert np.array_equal(stack.loop.run(lambda: stack.sim.arm.targets), stack.sim.arm.limits.upper)
    client.send("velocity", [-1e300] * 9)
    client.spin_until(lambda: int(status().get("clipped_total", 0)) >= 2, 30, "the second clip counted")
    for _ in range(20):
        velocity = np.array(client.wait_for_new("joint_states").velocity)
        assert np.all(np.abs(velocity) <= stack.sim.arm.limits.velocity * 1.05)


def test_step_requests_are_refused_when_the_world_runs_freely(client, stack):
    status = latest_status(client, "/world")
    stepper = client.node.create_publisher(UInt32, "world/step", 10)
    client.spin_until(lambda: stepper.get_subscription_count() > 0, 10, "world/step subscriber")
    stepper.publish(UInt32(data=100))
    client.spin_until(lambda: int(status().get("rejected[world/step]", 0)) == 1, 30, "the refusal counted")


def test_bad_parameter_values_are_refused(client):
    parameters = AsyncParameterClient(client.node, "world")
    client.spin_until(parameters.services_are_ready, 20, "parameter services")
    for name, value in [("seed", -1), ("seed", "seven"), ("realtime_factor", -2.0), ("realtime_factor", "fast"),
                        ("keep_object_type", 3), ("config", "/elsewhere.yaml"), ("gui", True)]:
        future = parameters.set_parameters([Parameter(name, value=value)])
        client.spin_until(future.done, 20, f"{name} answered")
        assert not future.result().results[0].successful, (name, value)
    assert client.call("world/reset").success  # still serving


def test_twenty_resets_while_commands_stream_in(client, stack):
    """No exception, and the bookkeeping matches PyBullet: ground, two bins, arm, and the objects."""
    c = stack.sim.world.client
    for i in range(20):
        client.send("delta", [0.01 * np.sin(i), 0.01 * np.cos(i), -0.01, 0.1, 1 if i % 2 else -1])
        client.send("velocity", [0.2 * np.sin(i)] + [0.0] * 8)
        answer = client.call("world/reset")
        assert answer.success, answer.message
        bodies, objects = stack.loop.run(lambda: (c.getNumBodies(), stack.sim.scene.object_count))
        assert bodies == 4 + objects
    client.send("position", GOOD)
    client.spin_until(lambda: np.abs(client.joint_positions() - GOOD).max() < 0.01, 30, "a command after resets")


@pytest.mark.slow
def test_lockstep_runs_repeat_exactly(config):
    """Two separate processes, same seed and commands, in lock-step: identical joint trajectories."""
    commands = [("delta", [0.05, -0.02, -0.1, 0.3, 1]), ("velocity", [0.4, -0.3, 0.2, 0.1, -0.2, 0.3, 0.5, 0, 0]),
                ("delta", [0.0, 0.03, -0.05, 0.0, -1]), ("position", GOOD)] * 3

    def run():
        backend = RosBackend(config, images=False)
        try:
            trajectory = [backend.reset(seed=4, keep_object_type=False).joint_positions]
            for kind, values in commands:
                trajectory.append(backend.step(kind, np.array(values, float), 24).joint_positions)
            return np.array(trajectory)
        finally:
            backend.close()

    first, second = run(), run()
    assert np.array_equal(first, second)
    assert np.abs(first[-1] - first[0]).max() > 0.1  # the arm did move


def scene_without(tmp_path, mutate):
    data = yaml.safe_load(default_config().read_text())
    mutate(data)
    path = tmp_path / "scene.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def start_with(scene):
    return subprocess.run([sys.executable, "-m", "binpick_sim.nodes.process.stack", "--ros-args", "-p", f"config:={scene}"],
                          capture_output=True, text=True, timeout=60)


def drop(data, key):
    *parents, last = key.split(".")
    for part in parents:
        data = data[part]
    del data[last]


@pytest.mark.parametrize("key", required_keys())
def test_every_missing_required_key_stops_start_up_naming_it(tmp_path, key):
    result = start_with(scene_without(tmp_path, lambda data: drop(data, key)))
    assert result.returncode == 2
    assert f"{key}: required key is missing" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) <= 2


@pytest.mark.parametrize("key, value", [("simulation.timestep", "fast"), ("scene.pick_bin.size", [0.1]),
                                        ("arm.home", [0] * 3), ("camera.parent", "panda_nose"),
                                        ("task.steps_per_action", 0), ("camera.width", 64.5)])
def test_mistyped_keys_stop_start_up_naming_them(tmp_path, key, value):
    def mutate(data):
        *parents, last = key.split(".")
        for part in parents:
            data = data[part]
        data[last] = value
    result = start_with(scene_without(tmp_path, mutate))
    assert result.returncode == 2
    assert key.split(".")[0] in result.stderr and key.split(".")[-1] in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.serial
def test_sigterm_while_rendering_stops_within_two_seconds(ros_context, tmp_path):
    sim = SimProcess({"realtime_factor": 0.0, "camera:rate": 240.0}, log=tmp_path / "sim.log")
    watcher = SimClient("watcher", context=ros_context, topics={"camera/image_raw": TOPICS["camera/image_raw"]})
    try:
        watcher.wait_for_topics(["camera/image_raw"], timeout=60)  # frames are being rendered now
    finally:
        watcher.close()
        sim.process.send_signal(signal.SIGTERM)
        start = time.monotonic()
        code = sim.process.wait(10)
        elapsed = time.monotonic() - start
        sim.stop()
    assert code == 0 and elapsed < 2.0, (tmp_path / "sim.log").read_text()


@pytest.mark.slow
def test_memory_stays_flat_over_a_soak(ros_context, tmp_path):
    """20,000 physics steps with every non-camera publisher on and watched: the process grows by less
    than 15 MB between step 4,000 and step 20,000 (`make bench` runs the 100,000-step version)."""
    sim = SimProcess({"realtime_factor": 0.0, "camera": False, "task": True}, log=tmp_path / "sim.log")
    topics = {t: TOPICS[t] for t in ("joint_states", "arm/ee_pose", "world/objects")}
    client = SimClient("soak", context=ros_context, topics=topics)
    try:
        client.wait_for_topics(list(topics), timeout=60)
        start, dt = client.stamp("joint_states"), 1 / 240

        def reach(steps):
            client.spin_until(lambda: (client.stamp("joint_states") - start) / dt >= steps, 120, f"{steps} steps")
            return rss_mb(sim.process.pid)

        early, late = reach(4_000), reach(20_000)
    finally:
        client.close()
        sim.stop()
    assert late - early < 15.0, (early, late)
