"""Long step requests of the simulation standard (issue 25, item 5): they hold no executor thread, so
they cannot starve the other services; every one of them can be ended with an answer within a second
(a goal's cancel, `world/cancel_steps` for StepSimulation too); and a change of simulation state ends
the requests in flight, each answered with how far it got. Real DDS, the real simulation_interfaces.
"""
from __future__ import annotations

import time

import pytest
from rclpy.action import ActionClient
from std_srvs.srv import Trigger

from sim_standard import Standard

pytestmark = pytest.mark.slow  # a stack each, about 5 s a test

LONG = 50000  # steps: about a minute of stepping here, far longer than any wait below
ANSWER = 1.0  # s: the bound for an answer to a cancel or a state change


def send(std: Standard, name: str, request):
    """A request sent, not waited for: its future."""
    if name not in std.clients:
        std.clients[name] = std.client.node.create_client(std.srv(name), name)
    client = std.clients[name]
    std.client.spin_until(client.service_is_ready, 30, f"service {name}")
    return client.call_async(request)


def trigger(std: Standard, name: str):
    client = std.client.node.create_client(Trigger, name)
    std.client.spin_until(client.service_is_ready, 30, name)
    future = client.call_async(Trigger.Request())
    std.client.spin_until(future.done, 30, f"{name} answered")
    return future.result()


def timed(std: Standard, future, what: str, limit: float) -> float:
    start = time.monotonic()
    std.client.spin_until(future.done, limit, what)
    return time.monotonic() - start


class Goals:
    def __init__(self, std: Standard, si):  # noqa: F811
        self.std, self.si = std, si
        self.action = ActionClient(std.client.node, si.action.SimulateSteps, "simulate_steps")
        std.client.spin_until(self.action.server_is_ready, 30, "simulate_steps")

    def start(self, steps: int):
        """The goal's handle once accepted."""
        sent = self.action.send_goal_async(self.si.action.SimulateSteps.Goal(steps=steps))
        self.std.client.spin_until(sent.done, 30, "the goal answered")
        handle = sent.result()
        assert handle.accepted
        return handle


def long_steps(std: Standard, count: int) -> list:
    futures = [send(std, "step_simulation", std.request("step_simulation", steps=LONG)) for _ in range(count)]
    std.client.spin_for(0.5)  # taken by the server
    return futures


def test_four_long_step_requests_and_goals_do_not_starve_the_other_services(running, si):  # noqa: F811
    stack, std = running
    std.pause()
    goals = Goals(std, si)
    steps = long_steps(std, 4)
    handles = [goals.start(LONG) for _ in range(4)]  # accepted at once: no thread is held by the steps
    for name, request in (("get_simulation_state", None), ("get_entity_state", std.request("get_entity_state", entity="panda")),
                          ("get_simulator_features", None)):
        future = send(std, name, request if request is not None else std.request(name))
        timed(std, future, f"{name} answered while 8 long requests are in flight", 5.0)
        assert getattr(future.result(), "result", si.msg.Result(result=1)).result == si.msg.Result.RESULT_OK
    assert not any(f.done() for f in steps)
    # world/cancel_steps ends them all, each answered at once with how far it got.
    start = time.monotonic()
    assert trigger(std, "world/cancel_steps").success
    results = [h.get_result_async() for h in handles]
    std.client.spin_until(lambda: all(f.done() for f in steps + results), ANSWER + 1.0, "every request answered")
    assert time.monotonic() - start < ANSWER + 1.0
    messages = [f.result().result.error_message for f in steps]
    assert all(m.startswith("canceled (world/cancel_steps) after ") and m.endswith(f" of {LONG} steps") for m in messages)
    assert sum(int(m.split(" after ")[1].split(" of ")[0]) > 0 for m in messages) == 1  # one was being taken
    for result in results:
        assert result.result().status == 6  # ABORTED, with the reason
        assert "world/cancel_steps" in result.result().result.result.error_message
    goals.action.destroy()


def test_a_goal_queued_behind_long_requests_is_cancelled_within_a_second(running, si):  # noqa: F811
    stack, std = running
    std.pause()
    goals = Goals(std, si)
    steps = long_steps(std, 4)  # as many as the old pool had threads
    handle = goals.start(LONG)
    std.client.spin_for(0.3)
    cancel = handle.cancel_goal_async()
    assert timed(std, cancel, "the cancel answered", 5.0) < ANSWER
    result = handle.get_result_async()
    assert timed(std, result, "the cancelled goal's result", 5.0) < ANSWER
    assert result.result().status == 5  # CANCELED
    assert result.result().result.result.error_message == f"canceled after 0 of {LONG} steps"
    assert not any(f.done() for f in steps)  # the others go on
    trigger(std, "world/cancel_steps")
    std.client.spin_until(lambda: all(f.done() for f in steps), 5, "the step requests answered")
    goals.action.destroy()


def test_step_simulation_is_cancelled_by_world_cancel_steps_within_a_second(running, si):  # noqa: F811
    stack, std = running
    std.pause()
    start = stack.sim.world.step_count
    future = send(std, "step_simulation", std.request("step_simulation", steps=LONG))
    std.client.spin_for(1.0)
    assert not future.done()
    asked = time.monotonic()
    assert trigger(std, "world/cancel_steps").success
    std.client.spin_until(future.done, 5, "step_simulation answered")
    assert time.monotonic() - asked < ANSWER
    answer = future.result().result
    taken = stack.sim.world.step_count - start
    assert answer.result == si.msg.Result.RESULT_OPERATION_FAILED
    assert answer.error_message == f"canceled (world/cancel_steps) after {taken} of {LONG} steps" and 0 < taken < LONG
    std.client.spin_for(0.3)
    assert stack.sim.world.step_count == start + taken  # nothing more was taken for it


@pytest.mark.serial  # a request caught mid-flight by a state change: timing, so alone
@pytest.mark.parametrize("target", ["PLAYING", "STOPPED"])
def test_a_state_change_ends_the_requests_in_flight_with_how_far_they_got(running, si, target):  # noqa: F811
    stack, std = running
    s = si.msg.SimulationState
    std.pause()
    goals = Goals(std, si)
    step = send(std, "step_simulation", std.request("step_simulation", steps=LONG))
    handle = goals.start(LONG)
    std.client.spin_for(0.5)
    changed = send(std, "set_simulation_state", std.request("set_simulation_state",
                                                            state=s(state=getattr(s, f"STATE_{target}"))))
    result = handle.get_result_async()
    asked = time.monotonic()
    std.client.spin_until(lambda: changed.done() and step.done() and result.done(), 10, "every answer")
    assert time.monotonic() - asked < ANSWER + 0.5  # the state change's own answer includes a reset for STOPPED
    assert changed.result().result.result == si.msg.Result.RESULT_OK
    why = f"the simulation was set {target} after "
    answer = step.result().result
    assert answer.result == si.msg.Result.RESULT_OPERATION_FAILED and answer.error_message.startswith(why)
    assert result.result().status == 6 and result.result().result.result.error_message.startswith(why)
    if target == "PLAYING":  # runs on its own now, the old request no longer counted
        before = stack.sim.world.step_count
        std.client.spin_for(0.5)
        assert stack.sim.world.step_count > before
        assert std.ok("get_simulation_state").state.state == s.STATE_PLAYING
    else:
        assert std.ok("get_simulation_state").state.state == s.STATE_STOPPED
    goals.action.destroy()
