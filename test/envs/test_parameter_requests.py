"""The ROS backend's parameter requests (envs/backends.py `_set_node_parameters`): a request whose reply is lost
(Fast DDS drops a service reply when the server has not yet matched the client's reply reader) goes out again
instead of waiting out the whole timeout. Driven with a stand-in parameter client: the race itself cannot be
provoked on demand."""
import time
from types import SimpleNamespace

import pytest
from rcl_interfaces.msg import SetParametersResult

from binpick_sim.envs.backends import RosBackend


class Future:
    def __init__(self, result=None):
        self._result = result

    def done(self):
        return self._result is not None

    def result(self):
        return self._result


class StandInParameterClient:
    """The first `lost` requests never get a reply; each later one is answered at once."""

    lost = 1
    sent: list = []
    made: list = []  # the remote node of each client made

    def __init__(self, node, remote):
        self.remote = remote
        StandInParameterClient.made.append(remote)

    def services_are_ready(self):
        return True

    def set_parameters(self, parameters):
        StandInParameterClient.sent.append(time.monotonic())
        if len(StandInParameterClient.sent) <= StandInParameterClient.lost:
            return Future()
        return Future(SimpleNamespace(results=[SetParametersResult(successful=True)]))


def spin_until(done, timeout, what="a condition"):  # SimClient.spin_until's contract, without ROS
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout:.0f} s for {what}")
        time.sleep(0.005)


@pytest.fixture
def backend(monkeypatch):
    import rclpy.parameter_client

    monkeypatch.setattr(rclpy.parameter_client, "AsyncParameterClient", StandInParameterClient)
    StandInParameterClient.sent, StandInParameterClient.made = [], []
    stand_in = SimpleNamespace(client=SimpleNamespace(node=None, spin_until=spin_until), TIMEOUT=2.0, RESEND=0.2,
                               _parameter_clients={})
    stand_in._parameter_client = lambda node: RosBackend._parameter_client(stand_in, node)
    return stand_in


def test_each_nodes_parameter_client_is_made_once(backend):
    """A client per request made six service clients a reset, kept by rclpy until the node goes, each
    discovered by the sim again before its request could go."""
    StandInParameterClient.lost = 0
    for node in ("world", "world", "task", "world"):
        RosBackend._set_node_parameters(backend, node, [])
    assert StandInParameterClient.made == ["world", "task"] and len(StandInParameterClient.sent) == 4


def test_a_request_whose_reply_is_lost_is_sent_again(backend):
    StandInParameterClient.lost = 1
    start = time.monotonic()
    RosBackend._set_node_parameters(backend, "world", [])
    assert len(StandInParameterClient.sent) == 2
    assert 0.15 < StandInParameterClient.sent[1] - start < 1.0  # after RESEND, far before TIMEOUT


def test_with_no_reply_at_all_it_gives_up_after_the_timeout_naming_the_node(backend):
    StandInParameterClient.lost = 10 ** 6
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="waited 2 s for the world's parameters"):
        RosBackend._set_node_parameters(backend, "world", [])
    assert 1.9 < time.monotonic() - start < 3.0 and len(StandInParameterClient.sent) >= 8
