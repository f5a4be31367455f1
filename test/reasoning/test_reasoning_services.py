"""The reasoning services over DDS: the same known answers as the core, JSON in, failures clean."""
import json

import pytest
from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient

from std_srvs.srv import Trigger

from binpick_sim.nodes.clients.client import TOPICS, SimClient
from binpick_sim.nodes.process.stack import SimStack

from helpers import parameters
from built_scenes import add_cube, along_the_optical_axis


@pytest.fixture
def cell(ros_context):
    yield from running_cell(ros_context, "tiny")


@pytest.fixture
def any_cell(ros_context, renderer):
    """`cell` with each renderer available here."""
    yield from running_cell(ros_context, renderer)


def running_cell(ros_context, renderer):
    """Stack with the reasoning node, crawling in time (1 % of real time) so scenes built between two
    queries stay as they were placed; the pick bin emptied."""
    world = parameters(realtime_factor=0.01, reasoning=True, camera=False, renderer=renderer)
    with SimStack(ros_context, {"world": world}) as stack:
        stack.loop.run(lambda: [stack.sim.scene.remove_object(o.name) for o in list(stack.sim.scene.objects)])
        client = SimClient("asker", context=ros_context, topics={"joint_states": TOPICS["joint_states"]})
        client.wait_for_topics(["joint_states"], timeout=30)
        yield stack, client
        client.close()


def ask(client, query):
    answer = client.call(f"reasoning/{query}")
    assert answer.success, answer.message
    return json.loads(answer.message)


def place(stack, position, size=0.04):
    return stack.loop.run(add_cube, stack.sim, position, size).name


def set_parameters(client, **values):
    remote = AsyncParameterClient(client.node, "reasoning")
    client.spin_until(remote.services_are_ready, 20, "reasoning's parameter services")
    future = remote.set_parameters([v if isinstance(v, Parameter) else Parameter(k, value=v)
                                    for k, v in values.items()])
    client.spin_until(future.done, 20, "parameters answered")
    return [r for r in future.result().results]


def test_stable_contact_and_supporting(cell):
    stack, client = cell
    lower = place(stack, [0.3, 0.6, 0.02])
    upper = place(stack, [0.3, 0.6, 0.06])
    floating = place(stack, [0.3, 0.8, 0.5])
    stable = ask(client, "stable")["objects"]
    assert stable == {lower: True, upper: True, floating: False}
    assert [lower, upper] in ask(client, "contact")["pairs"]
    support = ask(client, "supporting")
    assert [lower, upper] in support["pairs"] and ["ground", lower] in support["pairs"]
    assert support["types"]["ground"] == "environment" and support["types"][upper] == "object"


def test_visible_and_occluding(any_cell, renderer):
    """With each renderer, the same answers; each names the renderer that drew its masks (EGL with its GL
    strings), as does the node's /diagnostics status."""
    stack, client = any_cell
    behind = place(stack, along_the_optical_axis(stack.sim, 0.55), 0.03)
    front = place(stack, along_the_optical_axis(stack.sim, 0.35), 0.05)
    occluding = ask(client, "occluding")
    assert occluding["objects"][behind] == [front]
    expected = stack.sim.world.renderer.describe()
    assert expected.startswith(f"{renderer} (") and occluding["renderer"] == expected
    visible = ask(client, "visible")
    assert not visible["objects"][behind]["visible"] and visible["objects"][front]["visible"]
    assert visible["renderer"] == expected and visible["stamp"] <= stack.sim.world.time
    stack.loop.run(stack.sim.scene.remove_object, front)
    assert ask(client, "visible")["objects"][behind]["visible"]
    node = next(n for n in stack.nodes if n.get_name() == "reasoning")
    status = {kv.key: kv.value for kv in node.diagnostics.status().values}  # what /diagnostics carries
    assert status["visibility_renderer"] == expected


def test_reachable_and_blocking(cell):
    stack, client = cell
    pick_bin = stack.sim.scene.pick_bin
    near = place(stack, pick_bin.to_world([0, 0, 0.01]), 0.02)
    neighbour = place(stack, pick_bin.to_world([0, 0.03, 0.01]), 0.02)
    far = place(stack, [2.0, 0.0, 0.01], 0.02)
    assert all(r.successful for r in set_parameters(client, positions=[0.4, 0.0, 0.3, 3.0, 0.0, 0.3]))
    reach = ask(client, "reachable")
    assert reach["objects"][near]["reachable"] and not reach["objects"][far]["reachable"]
    assert [p["reachable"] for p in reach["positions"]] == [True, False]
    assert neighbour in ask(client, "blocking")["objects"][near]


def test_unknown_objects_and_bad_parameters_get_clear_failures(cell, capfd):
    stack, client = cell
    place(stack, [0.3, 0.6, 0.02])
    assert all(r.successful for r in set_parameters(client, objects=["object_9999"]))
    for query in ("stable", "visible", "occluding", "reachable", "blocking"):
        answer = client.call(f"reasoning/{query}")
        assert not answer.success and "object_9999" in answer.message, query
    log = capfd.readouterr().err  # the node's warnings name the service once
    assert "reasoning/stable: rejected, " in log and "rejected, reasoning/" not in log, log
    every = Parameter("objects", Parameter.Type.STRING_ARRAY, [])  # an empty list has no type of its own
    assert all(r.successful for r in set_parameters(client, objects=every))
    refused = [("camera_orientation", [0.0, 0.0, 0.0, 2.0]), ("camera_position", [0.0, float("nan"), 1.0]),
               ("front_axis", [0.0, 0.0, 0.0]), ("positions", [1.0, 2.0, 3.0, 4.0]), ("gripper_link", "panda_nose"),
               ("reach_threshold", -1.0), ("visible_threshold", 1.5), ("render_width", 0)]
    for name, value in refused:
        result = set_parameters(client, **{name: value})[0]
        assert not result.successful and name in result.reason, name
    assert ask(client, "stable")["objects"]  # still serving, with the old values


def test_queries_and_resets_interleave_without_failures(cell):
    stack, client = cell
    reset = client.node.create_client(Trigger, "world/reset")
    query = client.node.create_client(Trigger, "reasoning/contact")
    client.spin_until(lambda: reset.service_is_ready() and query.service_is_ready(), 20, "services")
    futures = []
    for _ in range(3):
        futures += [reset.call_async(Trigger.Request()), query.call_async(Trigger.Request())]
    client.spin_until(lambda: all(f.done() for f in futures), 120, "all answers")
    assert all(f.result().success for f in futures)
    assert all("pairs" in json.loads(f.result().message) for f in futures[1::2])
