"""A gym env's step channel whose peer stalls (issue 53): the sim's physics thread never waits on it.

A `sim` process of its own serves a channel whose other end is this test's socket; after one good exchange
the peer sends half a length and stays silent, or sends steps and never reads a reply. `world/reset` must still
be answered over ROS, and Ctrl-C must end the process with exit 0 within 2 s (before the fix, the physics
thread sat in a blocking read or write for good: the reset went unanswered and only SIGKILL ended `sim`).
The server's own rules (the drop after STALL, the unread-message bound) are checked on a socket pair alone.
"""
from __future__ import annotations

import array
import os
import signal
import socket
import struct
import subprocess
import time

import pytest

from binpick_sim.nodes.clients.client import SimClient
from binpick_sim.nodes.common import step_channel
from binpick_sim.nodes.process.spawn import SimProcess

EXIT_WAIT = 2.0  # s from Ctrl-C to the sim's exit (the measure)


def message(values) -> bytes:
    """A request as the env's Client frames it (multiprocessing.connection: length, then float64 values)."""
    data = array.array("d", values).tobytes()
    return struct.pack("!i", len(data)) + data


def half_a_length(sock: socket.socket) -> None:
    sock.sendall(b"\0\0")


def steps_never_read(sock: socket.socket) -> None:
    """Steps until the socket takes no more (the sim stops reading once its replies are not read)."""
    sock.setblocking(False)
    for request in range(2, 2000):
        try:
            sock.send(message([request, 0, 1]))
        except BlockingIOError:
            break
    sock.setblocking(True)


@pytest.mark.parametrize("stall", [half_a_length, steps_never_read])
def test_a_stalled_channel_peer_leaves_resets_answered_and_ctrl_c_ending_the_sim(ros_context, tmp_path, stall):
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    environ = dict(os.environ, **{step_channel.VARIABLE: str(theirs.fileno())})
    sim = SimProcess({"camera": False, "lockstep": True, "task": True}, log=tmp_path / "sim.log", env=environ,
                     pass_fds=(theirs.fileno(),))
    theirs.close()
    client = SimClient("stall_client", context=ros_context, topics={})
    try:
        ours.sendall(message([1, 0, 0]))  # one good exchange first
        ours.settimeout(60)
        assert struct.unpack("!i", ours.recv(4))[0] > 0, "no reply to the first request"
        stall(ours)
        time.sleep(0.5)  # the sim has read what it will read
        answer = client.call("world/reset", timeout=30, resend=5.0)
        assert answer.success, answer.message
        sim.check_alive()
        sim.process.send_signal(signal.SIGINT)
        try:
            code = sim.process.wait(EXIT_WAIT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"sim still running {EXIT_WAIT} s after Ctrl-C; its log:\n{(tmp_path / 'sim.log').read_text()}")
        assert code == 0, (tmp_path / "sim.log").read_text()
    finally:
        client.close()
        sim.stop(signal.SIGKILL)
        ours.close()


# --- the server's own rules, on a socket pair ------------------------------------------------------------
def serving(handle, stall=0.5):
    client, theirs = step_channel.pair()
    logs: list[str] = []
    server = step_channel.Server(socket.socket(fileno=theirs), handle, logs.append, stall=stall)
    return client, server, logs


def serve_until_dropped(server, within: float) -> float:
    start = time.monotonic()
    while server.sock is not None and time.monotonic() - start < within:
        server.serve(0.05)
    return time.monotonic() - start


def test_a_request_left_half_sent_loses_the_channel_after_the_stall_bound_with_one_line():
    taken = []
    client, server, logs = serving(lambda data, reply: (taken.append(data), reply(b'{"request": 1}')))
    client.send([1, 0, 0])
    server.serve(1.0)
    assert client.ready(1.0) and client.receive() == {"request": 1}
    client.connection._send(message([2, 0, 0])[:7])  # the length and 3 bytes of the request
    waited = serve_until_dropped(server, 5.0)
    assert server.sock is None and 0.4 < waited < 1.5
    assert logs == ["step channel closed: the env sent part of a request for 0.5 s"]
    assert len(taken) == 1
    with pytest.raises(EOFError):
        client.receive()


def test_replies_left_unread_stop_the_reading_and_lose_the_channel_after_the_stall_bound():
    """The sim takes requests while the socket holds its replies, then no more: at most one reply waits in
    its own memory, whatever the peer sends; the peer's own socket fills instead."""
    taken = []
    client, server, logs = serving(lambda data, reply: (taken.append(data), reply(bytes(100_000))))
    os.set_blocking(client.connection.fileno(), False)
    sent = 0
    start = time.monotonic()
    while server.sock is not None and time.monotonic() - start < 5.0:
        try:
            client.send([sent, 0, 0])
            sent += 1
        except BlockingIOError:
            pass
        server.serve(0.01)
        assert len(server._out) <= 1  # at most the reply being written
    assert server.sock is None
    assert logs == ["step channel closed: the env left its replies unread for 0.5 s"]
    assert 0 < len(taken) < sent


def test_a_request_is_taken_only_while_the_loop_owes_no_steps():
    idle = [False]
    taken = []
    client, theirs = step_channel.pair()
    server = step_channel.Server(socket.socket(fileno=theirs), lambda data, reply: taken.append(data), print,
                                 idle=lambda: idle[0])
    client.send([1, 0, 0])
    server.serve(0.2)
    assert taken == []
    idle[0] = True
    server.serve(0.2)
    assert len(taken) == 1


def test_more_unread_messages_than_the_bound_lose_the_channel():
    """Frames the camera sends for steps asked over ROS, which an env that no longer reads leaves there."""
    client, server, logs = serving(lambda data, reply: None, stall=60.0)
    frame = {"rgb": bytes(400_000)}
    sends = 0
    while server.sock is not None and sends < 100:
        server.frame(float(sends), {name: memoryview(b) for name, b in frame.items()})
        sends += 1
    assert server.sock is None and sends <= step_channel.MAX_PENDING + 2
    assert len(logs) == 1 and "unread" in logs[0]
