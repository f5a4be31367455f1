"""The floor of the ROS backend's step: an empty request and its reply between two processes, exchanged
the way the lock-step step is (issue 33).

`python -m bench.echo <namespace>` is the serving side: a process of its own, one rclpy node on the
EventsExecutor, with the package's Fast DDS profile and the `sim` process's GIL switch interval, which
takes a `task/step` request (std_msgs/Float64MultiArray, depth 10) and answers on `task/observation`
(std_msgs/String: JSON of the request id), on the thread that took the request, as the sim's physics
thread serves lock-step requests itself. Nothing else runs in it: no physics, no task, no observation.
It answers at once, or after keeping its core busy for the seconds the request's third value says:
`exchange(work=0.005)` is the exchange around 5 ms of stepping, during which the client waits idle, as
an env step's is. On a machine whose idle cores sleep, waking the waiting side then costs more than
between two exchanges back to back.

`Echo` is the other side, as `RosBackend._exchange` does it: a SimClient on the EventsExecutor keeping
the newest reply (depth 1), a publisher on `task/step`, and per exchange one publish, `spin_until` the
reply's id comes back, one JSON parse. What an env step over ROS costs beyond this is ours: the
command's checks and hand-off, the reply's contents and their JSON, and the GIL's turns.

`SocketEcho` is the same exchange without DDS or rclpy (`python -m bench.echo --socket FD` serves it): the
request's three doubles sent and the JSON of its id read back by the env's own step channel client
(binpick_sim/nodes/common/step_channel.py), between two Python processes with the same GIL switch
interval. It is the floor of the ROS backend's
step channel (`step_channel=True`): what one exchange per step costs two Python processes.

`Echo(bare=renderer)` (`python -m bench.echo <namespace> --bare tiny`) is the floor of an image env step over
the topics (issue 30): the bare image step (bench/camera_in_process.py: steps_per_action stepSimulation, then one
getCameraImage at the observation's size) served over rclpy with nothing of the package's nodes. The server
steps, replies, draws, and publishes the frame's rgb and depth as an rgb8 and a 32FC1 Image on the camera's
topics (built by binpick_sim/nodes/common/convert.py, as the camera node's, stamped with the request's id);
the client waits for the reply and both images and turns them into arrays with cv_bridge, as
`RosBackend._exchange` does. Beside the busy loop of `work`, the real step matters: after 14 ms of drawing
with TinyRenderer the caches hold its data, not Python's or DDS's, and the exchange's share grows (0.4 ms
around a busy loop of the same length, 0.9 ms around the real step, 2026-11-27 on 2 cores).
`SocketEcho(bare=renderer)` (`python -m bench.echo --socket FD --bare tiny`) is the same over a socket pair,
the floor of an image env's step channel: the reply, then the frame's rgb and depth as the sim's camera
sends them there (step_channel.frame_messages), received into arrays by the channel's client.
"""
from __future__ import annotations

import argparse
import array
import itertools
import json
import os
import subprocess
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path

from std_msgs.msg import Float64MultiArray, String

from binpick_sim.nodes.common import convert, step_channel

STEP_TOPIC, OBSERVATION_TOPIC = "task/step", "task/observation"  # as binpick_sim.nodes.servers.task_node
IMAGE_TOPICS = ("camera/image_raw", "camera/depth/image_raw")  # as the camera node's, which the ROS backend reads
SWITCH_INTERVAL = 0.0001  # as binpick_sim.nodes.process.stack sets it in the sim process
TIMEOUT = 60.0


def serve(namespace: str, bare: str | None = None) -> None:
    """`bare`: a renderer; each request is then answered by the bare image step and its frame (Echo(bare=))."""
    import rclpy
    from rclpy.executors import ExternalShutdownException
    from rclpy.experimental import EventsExecutor

    from binpick_sim.nodes.common.dds import use_package_profile

    use_package_profile()  # before rclpy.init, as the sim's entry point does
    sys.setswitchinterval(SWITCH_INTERVAL)
    rclpy.init()
    node = rclpy.create_node("echo", namespace=namespace)
    reply = node.create_publisher(String, OBSERVATION_TOPIC, 10)
    frames = BareFrames(node, bare) if bare else None

    def on_request(msg: Float64MultiArray) -> None:
        if frames is None:
            work(msg.data[2])
        else:
            frames.steps()
        reply.publish(String(data=json.dumps({"request": msg.data[0]})))
        if frames is not None:
            frames.publish(msg.data[0])

    node.create_subscription(Float64MultiArray, STEP_TOPIC, on_request, 10)
    executor = EventsExecutor()
    executor.add_node(node)
    try:
        while rclpy.ok():
            executor.spin_once(timeout_sec=0.1)
    except (KeyboardInterrupt, ExternalShutdownException):  # Ctrl-C (Echo.close), as the sim stops
        pass
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()


class BareFrames:
    """The bare image step served over rclpy (Echo(bare=)): `steps()` before the reply, `publish(seconds)`
    after it, which draws the frame and publishes its rgb and depth stamped `seconds` on the camera node's
    topics, with its history."""

    def __init__(self, node, renderer: str):
        from sensor_msgs.msg import Image

        from binpick_sim.nodes.servers.camera_node import FRAME_DEPTH

        from .camera_in_process import bare_image_parts

        self.steps, self.render, _ = bare_image_parts(renderer)
        self.rgb, self.depth = (node.create_publisher(Image, topic, FRAME_DEPTH) for topic in IMAGE_TOPICS)

    def publish(self, seconds: float) -> None:
        rgb, depth = bare_frame(self.render)
        self.rgb.publish(convert.rgb_image(seconds, rgb))
        self.depth.publish(convert.depth_image(seconds, depth))


def bare_frame(render) -> tuple:
    """(rgb, depth) of one bare getCameraImage: the depth buffer as it comes, as both floors send it (turning it
    to metres is the camera's work, not the exchange's)."""
    _, _, rgba, buffer, _ = render()
    return rgba[:, :, :3], buffer


def serve_socket(fd: int, bare: str | None = None) -> None:
    """The other end of SocketEcho: each request's id answered at once as JSON, until the socket closes.
    `bare`: a renderer; each request is then answered by the bare image step, and its frame follows the reply."""
    sys.setswitchinterval(SWITCH_INTERVAL)
    if bare:
        from .camera_in_process import bare_image_parts

        steps, render, _ = bare_image_parts(bare)
    with Connection(fd) as connection:
        while True:
            try:
                request = step_channel.request_values(connection.recv_bytes())
            except EOFError:
                return
            if bare:
                steps()
            else:
                work(request[2])
            connection.send_bytes(json.dumps({"request": request[0]}).encode())
            if bare:
                rgb, depth = bare_frame(render)
                for message in step_channel.frame_messages(request[0], {"rgb": rgb, "depth": depth}):
                    connection.send_bytes(message)


def work(seconds: float) -> None:
    """Keep this thread's core busy for `seconds` before the reply, as the sim's physics thread is busy
    stepping before it answers (while the client waits, idle)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


class SocketEcho:
    """An empty step over a step channel between two processes (no DDS): `exchange()`, as Echo's. `bare`: a
    renderer: the server answers with the bare image step and its frame (the module says)."""

    def __init__(self, bare: str | None = None):
        self.channel, theirs = step_channel.pair()
        self.process = subprocess.Popen([sys.executable, "-m", "bench.echo", "--socket", str(theirs),
                                         *(["--bare", bare] if bare else [])],
                                        cwd=Path(__file__).resolve().parent.parent, pass_fds=(theirs,))
        os.close(theirs)
        self.request, self.bare, self.frame = 0, bool(bare), None
        self.exchange()

    def exchange(self, timeout: float = TIMEOUT, work: float = 0.0) -> None:
        """One exchange; `work`: seconds the server keeps busy before it replies."""
        self.request += 1
        self.channel.send([self.request, 0, work])
        if self._next(timeout).get("request") != self.request:
            raise RuntimeError("the socket echo answered another request")
        if self.bare:  # (SocketEcho(bare=)) the frame, as arrays
            self.frame = self._next(timeout)
            if self.frame.get("frame") != self.request:
                raise RuntimeError("the socket echo sent the frame of another request")

    def _next(self, timeout: float) -> dict:
        if not self.channel.ready(timeout):
            raise TimeoutError(f"waited {timeout:.0f} s for the socket echo")
        return self.channel.receive()

    def close(self) -> None:
        self.channel.close()  # the server sees the end and returns
        try:
            self.process.wait(5.0)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Echo:
    """The client side, in this process (its own rclpy context); `exchange()` one empty step."""

    _count = itertools.count()

    def __init__(self, bare: str | None = None):
        """`bare`: a renderer: the server answers with the bare image step and its frame (the module says)."""
        import rclpy
        from rclpy.context import Context
        from rclpy.experimental import EventsExecutor

        from binpick_sim.nodes.clients.client import TOPICS, SimClient

        self.namespace = f"/binpick_echo_{os.getpid()}_{next(self._count)}"
        self.process = subprocess.Popen([sys.executable, "-m", "bench.echo", self.namespace,
                                         *(["--bare", bare] if bare else [])],
                                        cwd=Path(__file__).resolve().parent.parent,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.images = IMAGE_TOPICS if bare else ()
        self.context = Context()
        rclpy.init(context=self.context)
        self.client = SimClient("echo_client", namespace=self.namespace, context=self.context,
                                topics={OBSERVATION_TOPIC: String, **{topic: TOPICS[topic] for topic in self.images}},
                                executor=EventsExecutor)
        self.requester = self.client.node.create_publisher(Float64MultiArray, STEP_TOPIC, 10)
        self.request, self.request_msg = 0, Float64MultiArray()
        self._parsed: tuple = (None, 0.0)
        self.client.spin_until(lambda: self.requester.get_subscription_count() > 0 and
                               all(s.get_publisher_count() > 0 for s in self.client.subscriptions.values()),
                               TIMEOUT, "the echo process")
        deadline = time.monotonic() + TIMEOUT
        while True:  # the first exchange may race discovery: ask again until one comes back
            try:
                self.exchange(timeout=2.0)
                break
            except TimeoutError:
                if time.monotonic() > deadline:
                    raise

    def exchange(self, timeout: float = TIMEOUT, work: float = 0.0) -> None:
        """One exchange; `work`: seconds the server keeps busy before it replies."""
        self.request += 1
        request = self.request
        self.request_msg.data = array.array("d", [request, 0, work])  # refilled, as RosBackend does
        self.requester.publish(self.request_msg)
        self.client.spin_until(lambda: self._reply() >= request, timeout, "the echo")
        if self.images:  # (Echo(bare=)) both frames, as arrays
            for topic in self.images:
                self.client.wait_for_stamp(topic, request, timeout=timeout)
            self.client.rgb(), self.client.depth()

    def _reply(self) -> float:
        msg = self.client.latest.get(OBSERVATION_TOPIC)
        if msg is None:
            return 0.0
        if self._parsed[0] is not msg:  # parsed once per message, as RosBackend._reply does
            self._parsed = (msg, json.loads(msg.data)["request"])
        return self._parsed[1]

    def close(self) -> None:
        import rclpy

        self.client.close()
        rclpy.try_shutdown(context=self.context)
        self.process.send_signal(2)  # SIGINT, as a user would
        try:
            self.process.wait(5.0)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="The echo's server end (Echo, SocketEcho start it).")
    parser.add_argument("namespace", nargs="?", help="serve over rclpy under this namespace (Echo)")
    parser.add_argument("--socket", type=int, metavar="FD", help="serve over this socket instead (SocketEcho)")
    parser.add_argument("--bare", metavar="RENDERER", help="answer with the bare image step and its frame")
    args = parser.parse_args(argv)
    if (args.namespace is None) == (args.socket is None):
        parser.error("give a namespace or --socket FD")
    if args.socket is not None:
        serve_socket(args.socket, args.bare)
    else:
        serve(args.namespace, args.bare)


if __name__ == "__main__":
    main()
