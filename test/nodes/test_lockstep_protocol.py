"""task/step -> task/observation, the lock-step protocol of the gym envs' ROS backend: one request,
one reply, the command through the arm node's checks, bad requests refused and counted."""
import json

import numpy as np
import pytest
from std_msgs.msg import Float64MultiArray, String

from binpick_sim.nodes.servers.task_node import OBSERVATION_TOPIC, STEP_TOPIC

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
    from binpick_sim.cell.entities import Entities

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
