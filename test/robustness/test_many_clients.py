"""Many clients at once (issue 25, item 11): every service request the `sim` process takes gets an
answer, and every FollowJointTrajectory goal a response and, once accepted, a result (aborted with a
reason is fine: a newer goal replaces the one in progress, as on ros2_control's controller).

Clients: 20 service clients of four services that run on different threads of `sim` (the short-callback
executor, the simulation node's pool, the physics thread), each keeping OUTSTANDING requests in flight,
and 20 action clients sending goals. `sim` runs in a process of its own over DDS on loopback. The small
run is in `make test`; the soak run (`-m soak`) sends about 8,000 requests and 500 goals.
"""
from __future__ import annotations

import time

import pytest
from builtin_interfaces.msg import Duration
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

import ros_env
from binpick_sim.cell.arm.panda import JOINT_NAMES

CLIENTS = 20
OUTSTANDING = 4  # requests each service client keeps in flight
ANSWER_WAIT = 30.0  # s after the last request is sent, for the last answers
RESULT_WAIT = 15.0  # s a goal's result may take after its response (the measure)
ARM = list(JOINT_NAMES[:7])
SETTLE = 2.0
# Every client of a service receives every answer of that service and picks out its own (rmw_fastrtps): a
# client keeping the last 10, rclpy's default, loses its own answers under 20 clients' traffic before it
# takes them. The clients here keep every answer; the server side is what is under test.
CLIENT_QOS = QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)


def needs():
    missing = ros_env.missing("simulation_interfaces", "control_msgs")
    if missing:
        pytest.skip(missing)


@pytest.fixture
def sim_and_client(ros_context):
    needs()
    from bench.session import sim_and_client

    with sim_and_client({"camera": False}, {}, context=ros_context) as (sim, client):
        yield sim, client


class Services:
    """CLIENTS service clients, each keeping OUTSTANDING requests in flight until it has sent `calls`."""

    def __init__(self, node, calls: int):
        from simulation_interfaces.srv import GetEntityState, GetSimulationState
        from std_srvs.srv import Trigger

        kinds = [(GetSimulationState, "get_simulation_state", lambda: GetSimulationState.Request()),
                 (GetEntityState, "get_entity_state", lambda: GetEntityState.Request(entity="panda")),
                 (Trigger, "arm/open_gripper", Trigger.Request),
                 (Trigger, "world/cancel_steps", Trigger.Request)]
        self.clients = []
        for k in range(CLIENTS):
            kind, name, request = kinds[k % len(kinds)]
            self.clients.append((node.create_client(kind, name, qos_profile=CLIENT_QOS), name, request))
        self.calls = calls
        self.sent = [0] * CLIENTS
        self.answered = [0] * CLIENTS
        self.last_sent = time.monotonic()
        self.pending: dict[int, set] = {}

    def ready(self) -> bool:
        return all(c.service_is_ready() for c, _, _ in self.clients)

    def start(self) -> None:
        for k in range(CLIENTS):
            for _ in range(OUTSTANDING):
                self._send(k)

    def _send(self, k: int) -> None:
        if self.sent[k] >= self.calls:
            return
        client, _, request = self.clients[k]
        self.sent[k] += 1
        self.last_sent = time.monotonic()
        n = self.sent[k]
        self.pending.setdefault(k, set()).add(n)
        client.call_async(request()).add_done_callback(lambda _f, k=k, n=n: self._answered(k, n))

    def _answered(self, k: int, n: int = 0) -> None:
        self.pending[k].discard(n)
        self.answered[k] += 1
        self._send(k)

    def done(self) -> bool:
        return sum(self.answered) == CLIENTS * self.calls

    def unanswered(self) -> dict[str, int]:
        lost = {}
        for (_, name, _), sent, answered in zip(self.clients, self.sent, self.answered):
            if sent > answered:
                lost[name] = lost.get(name, 0) + sent - answered
        return lost


class Goals:
    """CLIENTS action clients sending FollowJointTrajectory goals, one in flight each, `goals` in all."""

    def __init__(self, node, goals: int, start_positions):
        from control_msgs.action import FollowJointTrajectory
        from rclpy.action import ActionClient

        self.Goal = FollowJointTrajectory.Goal
        qos = {f"{kind}_service_qos_profile": CLIENT_QOS for kind in ("goal", "result", "cancel")}
        self.clients = [ActionClient(node, FollowJointTrajectory, "panda_arm_controller/follow_joint_trajectory", **qos)
                        for _ in range(CLIENTS)]
        self.home = list(map(float, start_positions[:7]))
        self.goals = goals
        self.sent = self.responded = self.accepted = self.results = 0
        self.waiting: dict[int, float] = {}  # goal number -> wall time of its response, until its result
        self.late_results = 0
        self.last_event = time.monotonic()

    def ready(self) -> bool:
        return all(c.server_is_ready() for c in self.clients)

    def start(self) -> None:
        for k in range(CLIENTS):
            self._send(k)

    def _goal(self, n: int):
        target = list(self.home)
        target[0] += 0.05 * ((n % 5) - 2)  # small moves about where the arm is
        point = JointTrajectoryPoint(positions=target, time_from_start=Duration(sec=0, nanosec=300_000_000))
        return self.Goal(trajectory=JointTrajectory(joint_names=ARM, points=[point]))

    def _send(self, k: int) -> None:
        if self.sent >= self.goals:
            return
        n = self.sent
        self.sent += 1
        self.last_event = time.monotonic()
        self.clients[k].send_goal_async(self._goal(n)).add_done_callback(lambda f, k=k, n=n: self._responded(k, n, f))

    def _responded(self, k: int, n: int, future) -> None:
        self.responded += 1
        self.last_event = time.monotonic()
        handle = future.result()
        if handle.accepted:
            self.accepted += 1
            self.waiting[n] = time.monotonic()
            handle.get_result_async().add_done_callback(lambda _f, k=k, n=n: self._result(k, n))
        else:
            self._send(k)

    def _result(self, k: int, n: int) -> None:
        if time.monotonic() - self.waiting.pop(n) > RESULT_WAIT:
            self.late_results += 1
        self.results += 1
        self.last_event = time.monotonic()
        self._send(k)

    def done(self) -> bool:
        return self.sent == self.goals and self.responded == self.goals and not self.waiting


def run_load(ros_context, sim, client, calls: int, goals: int) -> None:
    from sensor_msgs.msg import JointState

    positions = []
    client.node.create_subscription(JointState, "joint_states", lambda m: positions.append(list(m.position)), 10)
    services, actions = Services(client.node, calls), Goals(client.node, goals, [0.0] * 7)
    deadline = time.monotonic() + 90
    while not (positions and services.ready() and actions.ready()):
        sim.check_alive()
        assert time.monotonic() < deadline, "sim's services and action not ready in 90 s"
        client.spin_for(0.1)
    client.spin_for(SETTLE)
    actions.home = positions[-1][:7]
    services.start()
    actions.start()
    while True:
        sim.check_alive()
        now = time.monotonic()
        services_over = services.done() or now - services.last_sent > ANSWER_WAIT
        actions_over = actions.done() or any(now - t > RESULT_WAIT + 5 for t in actions.waiting.values()) or \
            (actions.sent == goals and now - actions.last_event > ANSWER_WAIT)
        if (services_over and actions_over) or now > deadline + 600:
            break
        client.spin_for(0.05)
    lost = services.unanswered()
    problems = [f"of {CLIENTS * calls} requests, never answered: {lost}"] if lost else []
    if actions.responded != actions.sent or actions.sent != goals:
        problems.append(f"of {actions.sent} goals sent ({goals} to send), {actions.sent - actions.responded} got no response")
    if actions.waiting or actions.late_results:
        problems.append(f"of {actions.accepted} accepted goals, {len(actions.waiting)} got no result and "
                        f"{actions.late_results} got it more than {RESULT_WAIT} s after their response")
    assert not problems, "; ".join(problems)
    assert sim.running()


@pytest.mark.slow
def test_twenty_clients_get_every_answer_and_every_goal_a_result(ros_context, sim_and_client):
    sim, client = sim_and_client
    run_load(ros_context, sim, client, calls=25, goals=60)


@pytest.mark.soak
def test_twenty_clients_soak(request, ros_context, sim_and_client):
    if "soak" not in (request.config.option.markexpr or ""):
        pytest.skip("a soak of minutes: run it with -m soak")
    sim, client = sim_and_client
    run_load(ros_context, sim, client, calls=400, goals=500)
