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
import collections
import json
import os
import select
import socket
import stat
import struct
import time
from multiprocessing.connection import Connection

import numpy as np

VARIABLE = "BINPICK_STEP_CHANNEL"  # the child's end: a file descriptor number
FRAMES_VARIABLE = "BINPICK_STEP_CHANNEL_FRAMES"  # the frames the env takes on the channel: one of FRAMES
FRAMES = {"rgbd": ("rgb", "depth"), "rgbd+segmentation": ("rgb", "depth", "segmentation")}
MAX_REQUEST = 64 * 1024  # bytes: [request id, command, steps, values...] is a few hundred
HEADER = struct.Struct("!i")  # a message's length, as multiprocessing.connection writes it before the bytes
# s the env may leave a request half sent, or what the sim wrote unread, before it loses its channel. An env
# reads its reply and frame as soon as they come (and drains them while it waits on ROS after a timeout).
STALL = 10.0
MAX_PENDING = 8  # messages the sim holds unwritten: a reply and a frame's four, with room to spare


def pair() -> tuple["Client", int]:
    """(the parent's end, the child's end as a descriptor to pass on with `pass_fds`)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    return Client(Connection(ours.detach())), theirs.detach()


def inherited(environ=os.environ) -> socket.socket | None:
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
    return socket.socket(fileno=fd)


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
    `serve(timeout)` waits for a request, a `wake()` or room to write, and hands a request to
    `handle(data, reply)`.

    The physics thread never blocks on the env here (issue 53: a peer that sent half a length, or sent steps
    and never read a reply, kept it in a blocking read or write for good, and with it every reset and the
    Ctrl-C that waits on it). The socket is non-blocking: what arrives is gathered until a whole request is
    there, and what cannot be written yet waits in `_out` for the socket to take it. Two rules keep both
    bounded:
    - a request is taken only while nothing is left to write and the loop has no steps to take (`idle`), so
      an env that sends without reading runs out of room in its own socket, not in the sim's memory or
      physics thread, and at most one exchange (a reply and its frame) waits here;
    - an env that keeps a request half sent, or leaves output unread, for STALL seconds loses its channel,
      with one log line; so does one with more than MAX_PENDING messages unread (frames of steps that
      others asked for over ROS). The sim serves on over ROS.
    """

    def __init__(self, sock: socket.socket, handle, log, idle=lambda: True, stall: float | None = None):
        """`sock`: the sim's end (`inherited()`); `idle()`: whether the physics loop has no steps left to take;
        `stall`: STALL unless given."""
        self.sock: socket.socket | None = sock
        sock.setblocking(False)
        self.handle, self.log, self.idle = handle, log, idle
        self.stall = STALL if stall is None else stall
        self._in = bytearray()  # a request being received (its length first)
        self._out: collections.deque = collections.deque()  # each message not yet written whole: its views left
        self._since = 0.0  # monotonic time of the last progress while something is half received or unwritten
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        # One poll object for the server's life (multiprocessing.connection.wait builds a selector per call)
        self._poll = select.poll()
        self._poll.register(self._wake_r, select.POLLIN)
        self._events = select.POLLIN
        self._poll.register(self.sock.fileno(), self._events)

    def wake(self) -> None:
        try:
            os.write(self._wake_w, b"\0")
        except BlockingIOError:  # woken already: the pipe holds unread bytes
            pass

    def serve(self, timeout: float) -> None:
        if self.sock is not None:
            self._watch_for(select.POLLOUT if self._out else select.POLLIN if self.idle() else 0)
            if self._in or self._out:  # a deadline of its own: a stalled peer is noticed while nothing else comes
                timeout = min(timeout, max(self._since + self.stall - time.monotonic(), 0.0))
        for fd, events in self._poll.poll(1000.0 * timeout):
            if fd == self._wake_r:
                os.read(self._wake_r, 4096)
            elif self.sock is not None:
                if events & select.POLLOUT:
                    self._flush()
                elif events & (select.POLLIN | select.POLLHUP | select.POLLERR):
                    self._receive()
        if self.sock is not None and (self._in or self._out) and time.monotonic() - self._since > self.stall:
            what = "sent part of a request" if self._in and not self._out else "left its replies unread"
            self._drop(f"step channel closed: the env {what} for {self.stall:g} s")

    def _watch_for(self, events: int) -> None:
        """What the poll waits for on the socket: room to write while output waits, else requests while one
        may be taken, else only its end (POLLHUP comes regardless)."""
        if events != self._events:
            self._events = events
            self._poll.modify(self.sock.fileno(), events)

    def _receive(self) -> None:
        """Read what has come, up to one whole request (its length, then its bytes), and take it once whole."""
        while True:
            if len(self._in) < HEADER.size:
                wanted = HEADER.size - len(self._in)
            else:
                length = HEADER.unpack_from(self._in)[0]
                if not 0 <= length <= MAX_REQUEST:  # multiprocessing's -1 announces a length of over 2 GB
                    self._drop(f"step channel closed: a request of {length if length >= 0 else 'over 2**31'} "
                               f"bytes (at most {MAX_REQUEST})")
                    return
                wanted = HEADER.size + length - len(self._in)
                if wanted == 0:
                    data = bytes(self._in[HEADER.size:])
                    self._in.clear()
                    try:
                        self.handle(data, self.reply)
                    except Exception as exc:  # a broken request must not stop the physics thread that serves it
                        self.log(f"a step channel request failed: {exc!r}")
                    return
            try:
                data = self.sock.recv(wanted)
            except BlockingIOError:
                return
            except OSError as exc:
                self._drop(f"step channel closed: {exc}")
                return
            if not data:  # the env closed its end: no more steps
                self._drop()
                return
            self._in += data
            self._since = time.monotonic()

    def reply(self, data: bytes) -> None:
        self._send([data])

    def frame(self, stamp: float, parts: dict) -> None:
        """A frame after its reply (module docstring; frame_messages)."""
        self._send(frame_messages(stamp, parts))

    def _send(self, messages: list) -> None:
        """Queue `messages` (length-prefixed as multiprocessing.connection frames them) and write what the
        socket takes now; the rest waits for `serve`."""
        if self.sock is None:
            return
        if len(self._out) + len(messages) > MAX_PENDING:
            self._drop(f"step channel closed: the env left {len(self._out)} messages unread")
            return
        if not self._out:
            self._since = time.monotonic()
        for message in messages:
            view = memoryview(message).cast("B")
            self._out.append([memoryview(HEADER.pack(view.nbytes)), view])
        self._flush()

    def _flush(self) -> None:
        """Write what the socket takes now. The views left over keep their arrays alive, and nothing writes
        into those: each frame is rendered into arrays of its own."""
        while self._out:
            views = self._out[0]
            try:
                sent = self.sock.sendmsg(views)
            except BlockingIOError:
                return
            except OSError as exc:  # the env is gone; the sim follows its parent (stack.exit_with_parent)
                self._drop(f"step channel closed: {exc}")
                return
            self._since = time.monotonic()
            while views and sent >= views[0].nbytes:
                sent -= views.pop(0).nbytes
            if views:  # the socket is full: the rest when it has room (serve polls for it)
                views[0] = views[0][sent:]
                return
            self._out.popleft()

    def _drop(self, why: str | None = None) -> None:
        """No more steps on the channel (the wake-up pipe still serves); `why` logged once."""
        if why is not None:
            self.log(why)
        if self.sock is not None:
            self._poll.unregister(self.sock.fileno())
            self.sock.close()
            self.sock = None
        self._in.clear()
        self._out.clear()

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
