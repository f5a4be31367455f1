"""The step channel: a gym env's lock-step exchange with its own `sim` process over a socket pair,
instead of the `task/step` and `task/observation` topics (opt-in: `RosBackend(step_channel=True)`,
`gym.make(..., backend="ros", step_channel=True)`).

Why: over the topics an env step costs about 1 ms more than in-process. About half of that is DDS's
round trip with the two processes' wake-ups, which no code of ours can shorten; much of the rest is
rclpy's executors and messages on both sides (issue 33; doc/benchmarks.md, "ros path"). The env's sim
process is its private child, so the exchange with it need not be a ROS topic: the parent makes a Unix
socket pair and the child inherits one end, named by the environment variable below. Everything else
stays ROS (parameters, resets, every topic a user watches, the camera's included); only the step exchange,
and an image env's own frames (below), leave what `ros2 topic echo` and rosbag see.

Messages are `multiprocessing.connection` frames (a length, then the bytes): the request is the same
float64 layout as task/step's (wire.STEP_COMMANDS), the reply the same JSON as task/observation's.

An image env asks (FRAMES_VARIABLE) for the camera's lock-step frame on the channel too, after the reply: a
JSON header (the stamp, each part's name, dtype and shape), then each part's bytes as a message of its own,
received straight into the env's arrays. Over the topics the same frame is two Images (three with the
labels): built, serialized, sent through DDS, taken by the env's executor and turned back into arrays by
cv_bridge. With the frames here, a 64 x 64 image env over the channel went from 0.90-0.93 of its bare block
to 0.91-0.95 with tiny, and from 0.89-0.90 to 0.91-0.93 with egl (doc/benchmarks.md, "frames on the step
channel"). The camera still publishes every topic that somebody else watches.
"""
from __future__ import annotations

import array
import json
import os
import select
import socket
import stat
from multiprocessing.connection import Connection

import numpy as np

VARIABLE = "BINPICK_STEP_CHANNEL"  # the child's end: a file descriptor number
FRAMES_VARIABLE = "BINPICK_STEP_CHANNEL_FRAMES"  # the frames the env takes on the channel: one of FRAMES
FRAMES = {"rgbd": ("rgb", "depth"), "rgbd+segmentation": ("rgb", "depth", "segmentation")}
MAX_REQUEST = 64 * 1024  # bytes: [request id, command, steps, values...] is a few hundred


def pair() -> tuple["Client", int]:
    """(the parent's end, the child's end as a descriptor to pass on with `pass_fds`)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    return Client(Connection(ours.detach())), theirs.detach()


def inherited(environ=os.environ) -> Connection | None:
    """The child's end named by VARIABLE (removed from `environ`, so the sim's own children do not
    inherit the name), or None without it. ValueError for a value that is not an open socket."""
    value = environ.pop(VARIABLE, None)
    if value is None:
        return None
    try:
        fd = int(value)
        is_socket = stat.S_ISSOCK(os.fstat(fd).st_mode)
    except (ValueError, OSError):
        is_socket = False
    if not is_socket:
        raise ValueError(f"{VARIABLE}={value!r} names no open socket (the gym env's ROS backend sets it for its own "
                         "sim process; unset it)")
    os.set_inheritable(fd, False)  # the sim's own children (a render worker) do not hold the env's channel open
    return Connection(fd)


def frames_wanted(environ=os.environ) -> tuple[str, ...]:
    """The frame parts the env asked for on the channel (FRAMES_VARIABLE, removed from `environ`), () if it
    asked for none; ValueError for a value not in FRAMES."""
    value = environ.pop(FRAMES_VARIABLE, None)
    if value is None:
        return ()
    if value not in FRAMES:
        raise ValueError(f"{FRAMES_VARIABLE}={value!r} is not one of {', '.join(FRAMES)} (the gym env's ROS backend "
                         "sets it for its own sim process; unset it)")
    return FRAMES[value]


def request_values(data: bytes) -> array.array:
    """The float64 values of a request; ValueError for a length that is not a whole number of them."""
    if len(data) % 8:
        raise ValueError(f"a step request is float64 values, got {len(data)} bytes")
    values = array.array("d")
    values.frombytes(data)
    return values


class Client:
    """The parent's end (the env, or bench/echo.py's SocketEcho): requests out, JSON replies in. One poll
    object for its life (multiprocessing.connection's `Connection.poll` builds a selector per call)."""

    def __init__(self, connection: Connection):
        self.connection = connection
        self._poll = select.poll()
        self._poll.register(connection.fileno(), select.POLLIN)

    def send(self, values) -> None:
        """A request: [request id, command, steps, values...] as float64."""
        self.connection.send_bytes(array.array("d", values))

    def ready(self, timeout: float) -> bool:
        """Whether a reply (or the end of the channel) is there to read, waiting up to `timeout` seconds."""
        return bool(self._poll.poll(1000.0 * timeout))

    def receive(self) -> dict:
        """The next reply, or the next frame: its header with `arrays` added, each part received into an
        array of its own; EOFError once the other end has closed."""
        message = json.loads(self.connection.recv_bytes())
        if "parts" in message:
            arrays = message["arrays"] = {}
            for name, dtype, shape in message["parts"]:
                array = arrays[name] = np.empty(shape, dtype)
                if self.connection.recv_bytes_into(_flat_bytes(array)) != array.nbytes:
                    raise OSError(f"the frame's {name} came with a size other than its header's {shape} {dtype}")
        return message

    def close(self) -> None:
        self.connection.close()


class Server:
    """The sim's end, served by the physics thread between requests (PhysicsLoop.serve_while_holding):
    `serve(timeout)` waits for a request or a `wake()` and hands a request to `handle(data, reply)`."""

    def __init__(self, connection: Connection, handle, log):
        self.connection: Connection | None = connection
        self.handle, self.log = handle, log
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        # One poll object for the server's life (multiprocessing.connection.wait builds a selector per call)
        self._poll = select.poll()
        for fd in (self._wake_r, connection.fileno()):
            self._poll.register(fd, select.POLLIN)

    def wake(self) -> None:
        try:
            os.write(self._wake_w, b"\0")
        except BlockingIOError:  # woken already: the pipe holds unread bytes
            pass

    def serve(self, timeout: float) -> None:
        for fd, _ in self._poll.poll(1000.0 * timeout):
            if fd == self._wake_r:
                os.read(self._wake_r, 4096)
            elif self.connection is not None:
                self._take()

    def _take(self) -> None:
        try:
            data = self.connection.recv_bytes(MAX_REQUEST)
        except (EOFError, OSError) as exc:  # the env closed its end (or sent a frame too long): no more steps
            if not isinstance(exc, EOFError):
                self.log(f"step channel closed: {exc}")
            self._drop()
            return
        try:
            self.handle(data, self.reply)
        except Exception as exc:  # a broken request must not stop the physics thread that serves it
            self.log(f"a step channel request failed: {exc!r}")

    def reply(self, data: bytes) -> None:
        self._send([data])

    def frame(self, stamp: float, parts: dict) -> None:
        """A frame after its reply (module docstring; frame_messages)."""
        self._send(frame_messages(stamp, parts))

    def _send(self, messages: list) -> None:
        if self.connection is None:
            return
        try:
            for message in messages:
                self.connection.send_bytes(message)
        except OSError as exc:  # the env is gone; the sim follows its parent (stack.exit_with_parent)
            self.log(f"step channel closed: {exc}")
            self._drop()

    def _drop(self) -> None:
        """No more steps on the channel (the wake-up pipe still serves)."""
        if self.connection is not None:
            self._poll.unregister(self.connection.fileno())
            self.connection.close()
            self.connection = None

    def close(self) -> None:
        self._drop()
        for fd in (self._wake_r, self._wake_w):
            os.close(fd)


def frame_messages(stamp: float, parts: dict) -> list:
    """A frame's messages: the header, then each part's bytes (C order), as Client.receive takes them."""
    arrays = [np.ascontiguousarray(a) for a in parts.values()]
    header = {"frame": stamp, "parts": [[name, a.dtype.str, list(a.shape)] for name, a in zip(parts, arrays)]}
    return [json.dumps(header).encode(), *map(_flat_bytes, arrays)]


def _flat_bytes(array: np.ndarray) -> np.ndarray:
    """A C-contiguous array's bytes as one flat uint8 view: multiprocessing.connection sizes a buffer by its
    first dimension and item size, which is the whole of it only for a flat byte array."""
    return array.reshape(-1).view(np.uint8)
