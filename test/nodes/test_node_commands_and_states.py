"""The nodes over real DDS: commands in, states and images out, resets, and garbage rejected."""
from pathlib import Path

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient
from rosgraph_msgs.msg import Clock
from std_msgs.msg import Float64MultiArray

from binpick_sim.cell.arm.panda import JOINT_NAMES
from binpick_sim.nodes.clients.client import TOPICS, SimClient
from helpers import parameter_setter, parameters

TARGET = np.array([0.3, -0.5, -0.2, -2.2, 0.1, 1.8, 0.5, 0.03, 0.03])


def wait_for_joints(client, target, tolerance=0.01, timeout=30):
    client.spin_until(lambda: np.abs(client.joint_positions() - target).max() < tolerance, timeout,
                      f"joints at {np.round(target, 2).tolist()}")


def settle(client, seconds=0.3):
    """Let `seconds` of sim time pass."""
    client.wait_for_stamp("joint_states", client.stamp("joint_states") + seconds)


def test_joint_states_name_all_nine_joints(client):
    msg = client.latest["joint_states"]
    assert list(msg.name) == list(JOINT_NAMES)
    assert len(msg.position) == len(msg.velocity) == len(msg.effort) == 9
    assert client.latest["arm/ee_pose"].header.frame_id == "world"


def test_position_command_is_reached(client):
    client.send("position", TARGET)
    wait_for_joints(client, TARGET)


def test_velocity_command_moves_then_holds_after_its_timeout(client):
    start = client.joint_positions()[0]
    client.send("velocity", [0.5] + [0.0] * 8)
    # turned, as its position says: the world runs flat out, and the 0.5 s (sim) the command lasts can pass
    # between two joint_states, so its velocity may never be seen
    client.spin_until(lambda: client.joint_positions()[0] - start > 0.15, 20, "joint 1 turned")
    settle(client, 1.0)  # past the 0.5 s velocity_timeout
    assert abs(client.latest["joint_states"].velocity[0]) < 0.02
    moved = client.joint_positions()[0] - start
    assert 0.15 < moved < 0.35  # about 0.5 rad/s for the 0.5 s the command lasted


def test_delta_command_moves_the_gripper(client, stack):
    above_bin = stack.sim.scene.pick_bin.to_world([0, 0, 0.12])
    client.send("delta", [*(above_bin - client.ee_pose()[0]), 0, 0])
    client.spin_until(lambda: np.linalg.norm(client.ee_pose()[0] - above_bin) < 0.003, 30, "gripper above bin")
    settle(client)
    start = client.ee_pose()[0]
    client.send("delta", [0.03, -0.02, 0.01, 0, 0])
    expected = start + [0.03, -0.02, 0.01]
    client.spin_until(lambda: np.linalg.norm(client.ee_pose()[0] - expected) < 0.003, 30, "gripper moved")


def test_gripper_and_home_services(client, stack):
    assert client.call("arm/close_gripper").success
    client.spin_until(lambda: client.joint_positions()[7:].max() < 0.002, 20, "fingers closed")
    assert client.call("arm/open_gripper").success
    client.spin_until(lambda: np.abs(client.joint_positions()[7:] - 0.02).max() < 0.002, 20, "fingers open")
    client.send("position", TARGET)
    wait_for_joints(client, TARGET)
    assert client.call("arm/home").success
    wait_for_joints(client, stack.sim.arm.home)


def test_clock_drives_every_stamp(ros_context, client, stack):
    """/clock counts physics steps; joint_states carry the same sim time (not wall time)."""
    ticks = []
    client.node.create_subscription(Clock, "/clock", lambda m: ticks.append(m.clock.sec + m.clock.nanosec * 1e-9), 10)
    client.spin_until(lambda: len(ticks) > 20, 20, "/clock")
    dt = stack.sim.world.timestep
    assert ticks == sorted(ticks) and ticks[-1] > ticks[0]
    for t in ticks + [client.stamp("joint_states")]:
        assert abs(t / dt - round(t / dt)) < 1e-3  # a whole number of physics steps
    assert abs(client.stamp("joint_states") - ticks[-1]) < 5.0  # the same clock: sim seconds, not 1.8e9


def test_every_node_of_the_stack_keeps_sim_time_and_says_so(client, stack):
    """use_sim_time reads true on every node (asked over ROS, as `ros2 param get` does), cannot be turned off,
    and each node's clock reads the world's time; none of them subscribes to /clock for it (sim_clock)."""
    assert client.node.count_subscribers("/clock") == 0
    names = [node.get_fully_qualified_name() for node in stack.nodes]
    assert "/world" in names and "/arm" in names
    for name in names:
        remote = AsyncParameterClient(client.node, name)
        client.spin_until(remote.services_are_ready, 30, f"{name}'s parameter services")
        future = remote.get_parameters(["use_sim_time"])
        client.spin_until(future.done, 30, f"{name}'s use_sim_time")
        assert future.result().values[0].bool_value is True, name
    refused = parameter_setter(client, "/world")(use_sim_time=False)[0]
    assert not refused.successful and "sim time" in refused.reason
    assert stack.world.get_parameter("use_sim_time").value is True
    settle(client)
    for node in stack.nodes:
        seconds = node.get_clock().now().nanoseconds * 1e-9
        assert 0 < seconds <= stack.sim.world.time and stack.sim.world.time - seconds < 1.0, node.get_name()


def test_no_node_timer_runs_on_the_clock_the_physics_thread_sets():
    """A timer on a node's own clock (now the world's) would stop while the simulation is paused: quitting
    from the paused state waited for its 0.2 s timer for good. Every timer goes through steady_timer."""
    import binpick_sim

    package = Path(binpick_sim.__file__).parent
    on_node_clock = [f"{path.relative_to(package)}:{number}" for path in sorted(package.rglob("*.py"))
                     for number, line in enumerate(path.read_text().splitlines(), 1)
                     if ".create_timer(" in line and path.name != "sim_clock.py"]
    assert on_node_clock == []


def test_reset_starts_a_new_seeded_episode(ros_context, client):
    """The world runs on while the markers come, so a settled object may have crept a fraction of a
    millimetre between two looks: the same episode is the same objects within 1 mm, another episode has
    objects centimetres elsewhere."""
    def snapshot():
        client.wait_for_new("world/objects", 2)
        return sorted((m.text, m.pose.position.x, m.pose.position.y)
                      for m in client.latest["world/objects"].markers if m.action == m.ADD)

    def same(a, b):
        return [name for name, _, _ in a] == [name for name, _, _ in b] and all(
            abs(xa - xb) < 1e-3 and abs(ya - yb) < 1e-3 for (_, xa, ya), (_, xb, yb) in zip(a, b))

    parameters = AsyncParameterClient(client.node, "world")
    client.spin_until(lambda: parameters.services_are_ready(), 20, "world's parameter services")

    def reset_with_seed(seed):
        future = parameters.set_parameters([Parameter("seed", value=seed)])
        client.spin_until(future.done, 20, "seed set")
        assert future.result().results[0].successful
        answer = client.call("world/reset")
        assert answer.success and f"seed {seed}" in answer.message
        return snapshot()

    first = reset_with_seed(5)
    unseeded = client.call("world/reset")
    assert unseeded.success and "seed" not in unseeded.message
    assert not same(snapshot(), first)
    assert same(reset_with_seed(5), first)

    bad = parameters.set_parameters([Parameter("seed", value=-3)])
    client.spin_until(bad.done, 20, "bad seed refused")
    assert not bad.result().results[0].successful


def world_parameters(client):
    """set(**values): set the world node's parameters over ROS; each one's success, in order."""
    world = parameter_setter(client, "world")
    return lambda **values: [r.successful for r in world(**values)]


def test_a_reset_sent_again_under_its_reset_id_resets_nothing(client, stack):
    """A client that lost a reset's reply sends it again: with the same reset_id set, the copy gets the
    first one's reply and the world stays in that episode (a second, unseeded reset would lose the seed)."""
    set_parameters = world_parameters(client)
    try:
        # (under a reset_id the calls may resend: a request lost as its new client is discovered then costs 5 s)
        assert set_parameters(reset_id=7, seed=5) == [True, True]
        first = client.call("world/reset", resend=5.0)
        episode = stack.sim.scene.episode
        assert first.success and "seed 5" in first.message
        again = client.call("world/reset", resend=5.0)
        copy = " (reset_id 7 again: nothing reset)"
        reply = first.message.removesuffix(copy)  # (if the first call was resent, a copy answered it)
        assert again.success and again.message == reply + copy
        assert stack.sim.scene.episode == episode
        assert set_parameters(reset_id=8) == [True]
        assert client.call("world/reset", resend=5.0).success and stack.sim.scene.episode == episode + 1
        assert set_parameters(reset_id=-1) == [False]
    finally:
        assert set_parameters(reset_id=0) == [True]  # the other tests' resets all reset
    assert client.call("world/reset").success and stack.sim.scene.episode == episode + 2


def test_a_failed_reset_keeps_its_seed_for_the_next_one(client, stack, monkeypatch):
    """A world/reset that fails (here the rebuild raises, once) does not use up the seed set for it: the
    client's next reset is that seeded episode, not an unseeded one."""
    set_parameters = world_parameters(client)

    def episode_start():  # the world's random state just after the reset seeded it (the world runs on: not its poses)
        return stack.loop.run(lambda: stack.sim.episode_start)

    assert set_parameters(seed=5) == [True]
    assert client.call("world/reset").success
    seeded = episode_start()
    assert set_parameters(seed=5) == [True]
    reset = stack.sim.reset

    def fails_once(*args, **kwargs):
        monkeypatch.setattr(stack.sim, "reset", reset)
        raise RuntimeError("injected: the rebuild failed")
    monkeypatch.setattr(stack.sim, "reset", fails_once)
    failed = client.call("world/reset")
    assert not failed.success and "injected" in failed.message
    retried = client.call("world/reset")
    assert retried.success and "seed 5" in retried.message, retried.message
    assert episode_start() == seeded
    unseeded = client.call("world/reset")  # the seed is used up now
    assert unseeded.success and "seed" not in unseeded.message, unseeded.message
    assert episode_start() != seeded


def test_a_world_nothing_draws_loads_its_arm_without_visual_meshes(ros_context):
    """A state-only gym env's sim (no camera, robot interface or reasoner) never draws its world: the arm
    loads without its visual meshes, at start-up and at every reset (~50 ms a reset less). With
    the camera on, the camera's frames show the arm: it has them."""
    from binpick_sim.nodes.process.stack import SimStack

    for camera in (False, True):
        with SimStack(ros_context, {"world": parameters(realtime_factor=0.0, camera=camera)}) as stack:
            def visual_meshes():  # (without them PyBullet shows a link by its collision mesh)
                rows = stack.sim.world.client.getVisualShapeData(stack.sim.arm.body)
                return sum(b"/visual/" in row[4] for row in rows)
            meshes = [stack.loop.run(visual_meshes)]
            stack.loop.run(stack.world.reset_world)
            meshes.append(stack.loop.run(visual_meshes))
        assert (meshes == [0, 0]) if not camera else (min(meshes) > 0), (camera, meshes)


def diagnostics_of(client, node_name):
    arrays = []
    client.node.create_subscription(DiagnosticArray, "/diagnostics", arrays.append, 10)

    def status():
        found = [s for a in arrays for s in a.status if s.name == node_name]
        return {kv.key: kv.value for kv in found[-1].values} if found else None
    return status


@pytest.mark.parametrize("kind, length", [("position", 9), ("velocity", 9), ("delta", 5)])
def test_malformed_commands_are_rejected_and_change_nothing(client, stack, kind, length):
    status = diagnostics_of(client, "/arm")
    settle(client)
    before = client.joint_positions()
    targets_before = stack.loop.run(lambda: stack.sim.arm.targets.copy())
    garbage = [[], [0.1] * (length - 1), [0.1] * (length + 1), [float("nan")] * length,
               [0.0] * (length - 1) + [float("inf")], [-float("inf")] * length]
    for values in garbage:
        client.publishers[kind].publish(Float64MultiArray(data=values))
    client.spin_until(lambda: status() is not None and int(status()["rejected_total"]) >= len(garbage), 20,
                      "the rejections on /diagnostics")
    assert int(status()[f"rejected[arm/{kind}_commands]"]) == len(garbage)
    settle(client)
    assert np.abs(client.joint_positions() - before).max() < 1e-3
    assert np.array_equal(stack.loop.run(lambda: stack.sim.arm.targets), targets_before)
    client.send("position", TARGET)  # still serving
    wait_for_joints(client, TARGET)


def test_out_of_limit_positions_are_clipped_and_counted(client, stack):
    status = diagnostics_of(client, "/arm")
    wild = TARGET.copy()
    wild[0] = 50.0
    client.send("position", wild)
    client.spin_until(lambda: status() is not None and status().get("clipped[arm/position_commands]") == "1", 20,
                      "the clip on /diagnostics")
    expected = TARGET.copy()
    expected[0] = stack.sim.arm.limits.upper[0]
    wait_for_joints(client, expected, tolerance=0.02)


def test_camera_publishes_matching_images_only_while_watched(ros_context, stack, client):
    camera_node = next(n for n in stack.nodes if n.get_name() == "camera")
    settle(client, 0.5)
    assert camera_node.frames == 0  # nobody watches: nothing rendered
    camera_topics = {t: TOPICS[t] for t in ("camera/image_raw", "camera/depth/image_raw", "camera/camera_info")}
    watcher = SimClient("watcher", context=ros_context, topics={**camera_topics,
                                                                  "camera/depth/camera_info": TOPICS["camera/camera_info"]})
    try:
        watcher.wait_for_topics(list(camera_topics), timeout=60)
        rgb, depth = watcher.latest["camera/image_raw"], watcher.latest["camera/depth/image_raw"]
        watcher.spin_until(lambda: watcher.stamp("camera/image_raw") == watcher.stamp("camera/depth/image_raw")
                           == watcher.stamp("camera/camera_info"), 30, "one frame on all topics")
        rgb, depth = watcher.latest["camera/image_raw"], watcher.latest["camera/depth/image_raw"]
        info = watcher.latest["camera/camera_info"]
        assert (rgb.encoding, rgb.width, rgb.height) == ("rgb8", 640, 480)
        assert (depth.encoding, depth.width, depth.height) == ("32FC1", 640, 480)
        assert rgb.header.frame_id == depth.header.frame_id == info.header.frame_id == "camera_optical_frame"
        assert np.allclose(np.reshape(info.k, (3, 3)), stack.sim.camera.intrinsics())
        image = watcher.depth()
        assert np.isfinite(image).all() and 0.2 < float(np.median(image)) < 1.5  # the cell, in metres
        assert watcher.rgb().std() > 10  # not a blank frame
    finally:
        watcher.close()
    assert camera_node.frames > 0
