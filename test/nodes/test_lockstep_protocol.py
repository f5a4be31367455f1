"""task/step -> task/observation, the lock-step protocol of the gym envs' ROS backend: one request,
one reply, the command through the arm node's checks, bad requests refused and counted."""
import contextlib
import json

import numpy as np
import pytest
from std_msgs.msg import Float64MultiArray, String

from binpick_sim.nodes.common.wire import OBSERVATION_TOPIC, STEP_TOPIC

from helpers import parameters


@pytest.fixture
def lockstep(ros_context):
    from binpick_sim.nodes.clients.client import SimClient
    from binpick_sim.nodes.process.stack import SimStack

    overrides = {"world": parameters(lockstep=True, task=True, camera=False)}
    with SimStack(ros_context, overrides) as stack:
        client = SimClient("lockstep_test", context=ros_context, topics={OBSERVATION_TOPIC: String})
        requests = client.node.create_publisher(Float64MultiArray, STEP_TOPIC, 10)
        client.spin_until(lambda: requests.get_subscription_count() > 0 and
                          client.subscriptions[OBSERVATION_TOPIC].get_publisher_count() > 0, 30, "the task node")
        try:
            yield stack, client, requests
        finally:
            client.close()


def exchange(client, requests, data, timeout=30.0):
    requests.publish(Float64MultiArray(data=[float(v) for v in data]))
    client.spin_until(lambda: OBSERVATION_TOPIC in client.latest and
                      json.loads(client.latest[OBSERVATION_TOPIC].data)["request"] >= data[0], timeout,
                      f"the reply to request {data[0]}")
    return json.loads(client.latest[OBSERVATION_TOPIC].data)


def test_one_request_takes_the_command_and_the_steps_and_one_reply_reports_them(lockstep):
    stack, client, requests = lockstep
    start = exchange(client, requests, [1, 0, 0])  # nothing: just observe
    target = np.array(start["joint_positions"])
    target[0] += 0.2
    reply = exchange(client, requests, [2, 1, 48, *target])  # position command, 48 steps
    assert reply["request"] == 2 and reply["taken"]
    assert reply["stamp"] == pytest.approx(start["stamp"] + 48 * stack.sim.world.timestep)
    assert reply["joint_positions"][0] - start["joint_positions"][0] > 0.1  # it moved toward the target
    assert len(reply["objects"]) == stack.sim.scene.object_count and {"reward", "grabs"} <= set(reply)


def test_bad_requests_are_refused_and_counted_and_a_bad_command_is_reported(lockstep):
    stack, client, requests = lockstep
    task = next(n for n in stack.nodes if n.get_name() == "task")
    arm = stack.nodes[1]
    start = exchange(client, requests, [1, 0, 0])
    for bad in ([], [2, 1], [2.5, 0, 1], [2, 7, 1], [2, 0, -1], [2, 0, 1e12], [np.nan, 0, 1], [2**63, 0, 1]):
        requests.publish(Float64MultiArray(data=[float(v) for v in bad]))
    reply = exchange(client, requests, [3, 2, 1, *[np.nan] * 9])  # velocity NaN: through the arm's checks
    assert reply["request"] == 3 and not reply["taken"]
    assert sum(task.diagnostics.rejected.values()) == 8
    assert sum(arm.diagnostics.rejected.values()) == 1
    assert reply["stamp"] == pytest.approx(start["stamp"] + stack.sim.world.timestep)  # none of the bad steps


def test_the_physics_thread_serves_the_lockstep_requests_and_hears_other_threads(lockstep, monkeypatch):
    """In lock-step the physics thread serves the short callbacks itself (no executor thread hands each
    request over). Work from another thread (the reasoning and action pool, a test) must still be taken at
    once: the wait for requests is made an hour long here, so only the wake-up can end it."""
    import threading

    from binpick_sim.cell import loop as loop_module

    stack, client, requests = lockstep
    assert stack.physics_serves and not any(t.name == "executor" for t in threading.enumerate())
    monkeypatch.setattr(loop_module, "HOLD_WAIT", 3600.0)
    first = exchange(client, requests, [1, 0, 0])
    exchange(client, requests, [2, 0, 0])  # the loop now waits in an hour-long serve
    assert stack.loop.run(lambda: stack.sim.world.time, timeout=10) == pytest.approx(first["stamp"])
    assert client.call("world/reset", timeout=10).success  # a service, served on the physics thread
    settled = stack.loop.run(lambda: stack.sim.world.time, timeout=10)
    reply = exchange(client, requests, [3, 0, 24])
    assert reply["stamp"] == pytest.approx(settled + 24 * stack.sim.world.timestep)


@pytest.mark.parametrize("kind", ["events", "single"])
def test_the_waker_ends_a_wait_for_requests_from_another_thread(ros_context, kind):
    """What hands the physics thread work while it waits in spin_once: called from another thread, it must
    end an hour-long spin_once of a node with nothing else to serve, with either executor."""
    import threading

    import rclpy

    from binpick_sim.nodes.process.stack import make_executor, waker

    node = rclpy.create_node("waker_test", context=ros_context)
    executor = make_executor(kind, ros_context)
    executor.add_node(node)
    try:
        wake = waker(node)
        for _ in range(3):  # a wake-up, then the wait again, more than once
            spinner = threading.Thread(target=lambda: executor.spin_once(timeout_sec=3600))
            spinner.start()
            spinner.join(0.2)
            assert spinner.is_alive()  # nothing to serve: it waits
            wake()
            spinner.join(10)
            assert not spinner.is_alive()
    finally:
        executor.shutdown()
        node.destroy_node()


BOX = ('<robot name="thing"><link name="base"><inertial><mass value="0.05"/><inertia ixx="1e-5" iyy="1e-5" '
       'izz="1e-5" ixy="0" ixz="0" iyz="0"/></inertial><visual><geometry><box size="{s} {s} {s}"/></geometry>'
       '</visual><collision><geometry><box size="{s} {s} {s}"/></geometry></collision></link></robot>')


def test_a_reply_shapes_each_object_as_it_is_now_also_after_a_delete_and_a_spawn_under_its_name(lockstep):
    """The task node reads an object's shape once while it lives; an object deleted and another spawned
    under the same name (and perhaps the same PyBullet body id) must show its own shape."""
    from binpick_sim.cell.entities.registry import Entities

    stack, client, requests = lockstep
    entities = stack.loop.run(Entities, stack.sim)
    try:
        def shape_of(request):
            reply = exchange(client, requests, [request, 0, 1])
            return next((kind, size) for name, _, _, kind, size, _ in reply["objects"] if name == "thing")

        above = stack.loop.run(lambda: {p.name: p for p in entities.named_poses()}["above_pick_bin"])
        for request, size in ((1, 0.02), (2, 0.04), (3, 0.03)):
            stack.loop.run(lambda: entities.delete("thing") if "thing" in entities.names() else None)
            stack.loop.run(entities.spawn, "thing", False, "", BOX.format(s=size), "world", above.position,
                           above.orientation)
            assert shape_of(request) == ("box", pytest.approx([size] * 3))
    finally:
        stack.loop.run(entities.close)


# --- the step channel (nodes/common/step_channel.py): the same exchange over a socket pair -------------------

@pytest.fixture
def channel_stack(ros_context, monkeypatch):
    """A lock-step stack serving a step channel whose other end is this test's: (stack, client, channel)."""
    with serving_channel(ros_context, monkeypatch) as served:
        yield served


@contextlib.contextmanager
def serving_channel(ros_context, monkeypatch, frames: str | None = None):
    """channel_stack's stack; with `frames` (step_channel.FRAMES), a camera of 64 x 48 whose frames the
    channel carries, as an image env's RosBackend(step_channel=True) asks."""
    from binpick_sim.nodes.clients.client import SimClient
    from binpick_sim.nodes.common import step_channel
    from binpick_sim.nodes.process.stack import SimStack

    ours, theirs = step_channel.pair()
    monkeypatch.setenv(step_channel.VARIABLE, str(theirs))  # as RosBackend(step_channel=True) starts its sim
    if frames is not None:
        monkeypatch.setenv(step_channel.FRAMES_VARIABLE, frames)
    overrides = {"world": parameters(lockstep=True, task=True, camera=frames is not None),
                 "camera": parameters(width=64, height=48)}
    try:
        with SimStack(ros_context, overrides) as stack:
            client = SimClient("channel_test", context=ros_context, topics={})
            try:
                yield stack, client, ours
            finally:
                client.close()
    finally:
        ours.close()


def channel_exchange(channel, data, timeout=30.0):
    channel.send(data)
    assert channel.ready(timeout), f"no reply to request {data[0]} within {timeout} s"
    return channel.receive()


def test_the_step_channel_takes_requests_and_refuses_bad_ones_as_task_step_does(channel_stack, monkeypatch):
    """The same requests as task/step's tests, over the channel: one reply each, the command through the
    arm's checks, bad ones (and a frame that is no float64 array) refused, counted and unanswered. The
    physics thread serves the channel; the other callbacks are the executor thread's again, and its work
    wakes an hour-long wait for the next request."""
    import threading

    from binpick_sim.cell import loop as loop_module

    stack, client, channel = channel_stack
    assert stack.channel is not None and not stack.physics_serves
    assert any(t.name == "executor" for t in threading.enumerate())
    task, arm = stack.task, stack.nodes[1]
    start = channel_exchange(channel, [1, 0, 0])
    target = np.array(start["joint_positions"])
    target[0] += 0.2
    reply = channel_exchange(channel, [2, 1, 48, *target])
    assert reply["request"] == 2 and reply["taken"]
    assert reply["stamp"] == pytest.approx(start["stamp"] + 48 * stack.sim.world.timestep)
    assert reply["joint_positions"][0] - start["joint_positions"][0] > 0.1
    for bad in ([], [3, 1], [3.5, 0, 1], [3, 7, 1], [3, 0, -1], [3, 0, 1e12], [np.nan, 0, 1], [2**63, 0, 1]):
        channel.connection.send_bytes(np.array(bad, dtype=float).tobytes())
    channel.connection.send_bytes(b"seven b")
    reply = channel_exchange(channel, [4, 2, 1, *[np.nan] * 9])
    assert reply["request"] == 4 and not reply["taken"]
    assert sum(task.diagnostics.rejected.values()) == 9 and sum(arm.diagnostics.rejected.values()) == 1
    assert reply["stamp"] == pytest.approx(start["stamp"] + 49 * stack.sim.world.timestep)
    monkeypatch.setattr(loop_module, "HOLD_WAIT", 3600.0)
    channel_exchange(channel, [5, 0, 0])  # the loop now waits an hour for the next request
    assert client.call("world/reset", timeout=10).success  # served by the executor thread, handed over
    settled = stack.loop.run(lambda: stack.sim.world.time, timeout=10)
    assert channel_exchange(channel, [6, 0, 24])["stamp"] == pytest.approx(settled + 24 * stack.sim.world.timestep)


def test_a_frame_longer_than_any_request_closes_the_channel_and_the_sim_serves_on(channel_stack):
    from binpick_sim.nodes.common import step_channel

    stack, client, channel = channel_stack
    channel_exchange(channel, [1, 0, 0])
    try:
        channel.connection.send_bytes(bytes(step_channel.MAX_REQUEST + 8))
    except BrokenPipeError:  # the sim read the length and closed the channel before the rest was written
        pass  # (the payload goes in writes of its own after the length; seen once in a rehearsal)
    else:
        assert channel.ready(10)
    with pytest.raises((EOFError, ConnectionResetError)):  # (reset: the frame's bytes were left unread)
        channel.receive()  # closed by the sim: a frame that long is no env's
    assert client.call("world/reset", timeout=10).success  # the rest of the sim goes on


@pytest.mark.parametrize("frames", ["rgbd", "rgbd+segmentation"])
def test_an_image_envs_channel_carries_each_steps_frame_after_its_reply(ros_context, monkeypatch, frames):
    """Asked for (FRAMES_VARIABLE, as an image env's ROS backend asks), each reply on the channel is followed by
    the camera's frame of the same state, though no topic of the camera is watched: stamped as the reply, the
    parts asked for, in the camera's size and dtypes, the same pixels as the camera's own render of that
    state (the labels as the segmentation topic's); then nothing more until the next request."""
    from binpick_sim.cell.vision.labels import label_image
    from binpick_sim.nodes.common import step_channel

    with serving_channel(ros_context, monkeypatch, frames) as (stack, client, channel):
        camera, segmented = stack.sim.camera, frames.endswith("segmentation")
        target = np.array(channel_exchange(channel, [1, 0, 0])["joint_positions"])
        assert channel.ready(30) and "frame" in channel.receive()
        target[0] += 0.3
        for request, command, steps in ((2, [0], 0), (3, [1, *target], 48), (4, [0], 24)):
            reply = channel_exchange(channel, [request, command[0], steps, *command[1:]])
            assert reply["request"] == request and reply["taken"]
            assert channel.ready(30), f"no frame after the reply to request {request}"
            frame = channel.receive()
            assert frame["frame"] == reply["stamp"] and "request" not in frame
            arrays = frame["arrays"]
            assert list(arrays) == list(step_channel.FRAMES[frames])
            own = stack.loop.run(lambda: camera.render(segmentation=segmented), timeout=10)
            assert arrays["rgb"].shape == (48, 64, 3) and arrays["rgb"].dtype == np.uint8
            assert arrays["depth"].dtype == np.float32 and arrays["rgb"].flags.writeable
            np.testing.assert_array_equal(arrays["rgb"], own.rgb)
            np.testing.assert_array_equal(arrays["depth"], own.depth)
            if segmented:
                labels = label_image(stack.sim, own.segmentation)
                assert arrays["segmentation"].dtype == np.int32 and len(np.unique(labels)) > 2
                np.testing.assert_array_equal(arrays["segmentation"], labels)
            assert not channel.ready(0.2)  # one frame per reply
        assert len(np.unique(arrays["rgb"].reshape(-1, 3), axis=0)) > 10  # drawn, not blank


def test_a_frames_variable_out_of_the_known_ones_is_refused_naming_them():
    from binpick_sim.nodes.common import step_channel

    for value in ("", "rgb", "rgbd+segmentation+points", "RGBD"):
        environ = {step_channel.FRAMES_VARIABLE: value}
        with pytest.raises(ValueError, match="is not one of rgbd, rgbd\\+segmentation"):
            step_channel.frames_wanted(environ)
        assert environ == {}
    assert step_channel.frames_wanted({}) == ()


def test_a_step_channel_variable_that_names_no_socket_is_refused_naming_it(tmp_path):
    from binpick_sim.nodes.common import step_channel

    with open(tmp_path / "file", "w") as not_a_socket:
        for value in ("x", "-1", "99999", str(not_a_socket.fileno())):
            environ = {step_channel.VARIABLE: value}
            with pytest.raises(ValueError, match=f"{step_channel.VARIABLE}='{value}' names no open socket"):
                step_channel.inherited(environ)
            assert environ == {}  # taken out: the sim's own children do not inherit it
    assert step_channel.inherited({}) is None


def test_a_channel_request_whose_handling_fails_leaves_the_physics_thread_serving(channel_stack, monkeypatch):
    """An exception from a request's handling (a bug, say) is logged on the physics thread that serves the
    channel, never raised out of it: the loop goes on and the next request is answered."""
    stack, client, channel = channel_stack
    handle = stack.channel.handle
    failed = []

    def fail_once(data, reply):
        if not failed:
            failed.append(data)
            raise RuntimeError("a bug")
        handle(data, reply)

    monkeypatch.setattr(stack.channel, "handle", fail_once)
    channel.send([1, 0, 0])
    reply = channel_exchange(channel, [2, 0, 24])
    assert failed and reply["request"] == 2 and stack.loop.running
