"""A ROS client of the simulation, as a user's script or agent would write it.

It keeps the newest message of each topic it listens to and spins only while waiting for something,
so it needs no thread of its own. The demo, the tests and the gym env's ROS backend all use it.
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np
import rclpy
from cv_bridge import CvBridge
from geometry_msgs.msg import PoseStamped
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from sensor_msgs.msg import CameraInfo, Image, JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger
from visualization_msgs.msg import MarkerArray

from ...cell.objects.shapes import ObjectView
from ..common import convert
from ..common.convert import to_seconds
from ..common.teardown import destroy_fully

TOPICS = {
    "joint_states": JointState,
    "arm/ee_pose": PoseStamped,
    "world/objects": MarkerArray,
    "camera/image_raw": Image,
    "camera/depth/image_raw": Image,
    "camera/camera_info": CameraInfo,
}


def answered(send: Callable[[], object], spin_until: Callable, timeout: float, resend: float | None, what: str):
    """The result of the future that `send()` returns, spinning with `spin_until` (SimClient.spin_until's
    contract) while waiting; `send()` again every `resend` s until one is done (None: send once). TimeoutError
    naming `what` after `timeout` s. A service request sent just as its service was discovered can be lost
    for good (SimClient.call, the ROS backend's parameters and resets), so the callers that may ask twice
    resend."""
    deadline = time.monotonic() + timeout
    while True:
        future = send()
        left = deadline - time.monotonic()
        wait = left if resend is None else min(resend, left)
        try:
            spin_until(future.done, max(wait, 0.0), what)
            return future.result()
        except TimeoutError:
            if wait >= left:
                raise TimeoutError(f"waited {timeout:.0f} s for {what}") from None


class SimClient:
    def __init__(self, name: str = "binpick_client", namespace: str = "", context: Context | None = None,
                 topics: dict | None = None, executor=SingleThreadedExecutor, depth: int = 1):
        """`executor`: the executor class (or factory taking `context=`) that serves this client's node.
        `topics`: topic -> message type to keep the latest of (None: TOPICS; {}: none). `depth`: each
        subscription's history. 1 keeps only the newest message (what a client that reads
        `latest` wants); a message that arrives before the one before it was taken replaces it, so
        `counts` then counts what this client took, not what was published. To count every frame the
        camera publishes, take the publishers' depth (camera_node.FRAME_DEPTH)."""
        self.context = context
        self.node = rclpy.create_node(name, namespace=namespace, context=context)
        self.executor = executor(context=context)
        self.watchdog: Callable[[], None] | None = None  # called on every pass of a wait; may raise
        self.executor.add_node(self.node)
        self.latest: dict[str, object] = {}
        self.counts: dict[str, int] = {}
        self.history = depth  # (not `depth`: that is the method reading the depth image)
        self.subscriptions = {topic: self.node.create_subscription(msg_type, topic, self._keeper(topic), depth)
                              for topic, msg_type in (TOPICS if topics is None else topics).items()}
        self.publishers = {name: self.node.create_publisher(Float64MultiArray, f"arm/{name}_commands", 10)
                           for name in ("position", "velocity", "delta")}
        self.bridge = CvBridge()
        self.service_clients: dict[str, object] = {}  # Trigger clients by service, made at their first call

    def watch(self, topic: str, msg_type) -> None:
        """Subscribe to one more topic (kept and counted as the constructor's), e.g. to start the camera's
        segmentation, which is rendered only while watched."""
        if topic not in self.subscriptions:
            self.subscriptions[topic] = self.node.create_subscription(msg_type, topic, self._keeper(topic),
                                                                      self.history)

    def _keeper(self, topic: str) -> Callable:
        def keep(msg) -> None:
            self.latest[topic] = msg
            self.counts[topic] = self.counts.get(topic, 0) + 1
        return keep

    def close(self) -> None:
        self.executor.shutdown()
        destroy_fully(self.node)  # with any action client a caller put on it (teardown.py: why)

    # --- waiting ------------------------------------------------------------------------------
    def spin_until(self, done: Callable[[], bool], timeout: float, what: str = "a condition") -> None:
        """Process incoming messages until `done()` holds; TimeoutError after `timeout` wall seconds."""
        deadline = time.monotonic() + timeout
        while not done():
            if self.watchdog is not None:
                self.watchdog()
            if time.monotonic() > deadline:
                raise TimeoutError(f"waited {timeout:.0f} s for {what}")
            self.executor.spin_once(timeout_sec=0.02)

    def wait_for_topics(self, topics, timeout: float = 30.0) -> None:
        missing = lambda: [t for t in topics if t not in self.latest]  # noqa: E731
        self.spin_until(lambda: not missing(), timeout, f"messages on {', '.join(missing())}")

    def wait_for_new(self, topic: str, count: int = 1, timeout: float = 10.0):
        """Wait until `count` more messages arrived on `topic`; returns the newest."""
        target = self.counts.get(topic, 0) + count
        self.spin_until(lambda: self.counts.get(topic, 0) >= target, timeout, f"{count} new message(s) on {topic}")
        return self.latest[topic]

    def stamp(self, topic: str) -> float:
        """Sim time of the newest message on a stamped topic."""
        return to_seconds(self.latest[topic].header.stamp)

    def wait_for_stamp(self, topic: str, seconds: float, timeout: float = 10.0):
        """Wait for a message on `topic` stamped at or after sim time `seconds`; returns it."""
        self.spin_until(lambda: topic in self.latest and self.stamp(topic) >= seconds - 1e-9, timeout,
                        f"{topic} stamped {seconds:.3f} s")
        return self.latest[topic]

    def spin_for(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.executor.spin_once(timeout_sec=0.02)

    # --- commands -----------------------------------------------------------------------------
    def send(self, kind: str, values) -> None:
        """Publish on arm/<kind>_commands (kind: position, velocity or delta)."""
        self.publishers[kind].publish(Float64MultiArray(data=[float(v) for v in values]))

    def call(self, service: str, timeout: float = 30.0, resend: float | None = None) -> Trigger.Response:
        """Call a Trigger service; TimeoutError after `timeout` s without an answer. One client per service,
        made at the first call and kept: a new one each call waited for the server to discover it again
        (~10 ms a gym env's reset over ROS, 90 ms one in five). A request sent as soon as a new client sees
        the service can go unseen by the server (seen once; most likely the server had not yet matched this
        client's request writer, and its volatile reader dropped the sample). `resend`: send the request again
        every `resend` s until one is answered; only for a service where a second call is harmless."""
        client = self.service_clients.get(service)
        if client is None:
            client = self.service_clients[service] = self.node.create_client(Trigger, service)
        self.spin_until(client.service_is_ready, timeout, f"service {service}")
        return answered(lambda: client.call_async(Trigger.Request()), self.spin_until, timeout, resend,
                        f"an answer from {service}")

    # --- what the client sees -----------------------------------------------------------------
    def joint_positions(self) -> np.ndarray:
        return np.array(self.latest["joint_states"].position)

    def ee_pose(self) -> tuple[np.ndarray, np.ndarray]:
        p = self.latest["arm/ee_pose"].pose
        return (np.array([p.position.x, p.position.y, p.position.z]),
                np.array([p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w]))

    def objects(self) -> list[ObjectView]:
        """Object poses and meshes from the newest world/objects markers."""
        views = []
        for m in self.latest["world/objects"].markers:
            if m.action != m.ADD:
                continue
            vertices = convert.marker_geometry(m).vertices()
            q = m.pose.orientation
            views.append(ObjectView(m.text, np.array([m.pose.position.x, m.pose.position.y, m.pose.position.z]),
                                    np.array([q.x, q.y, q.z, q.w]), vertices))
        return views

    def rgb(self) -> np.ndarray:
        return self.bridge.imgmsg_to_cv2(self.latest["camera/image_raw"], desired_encoding="rgb8")

    def depth(self) -> np.ndarray:
        return self.bridge.imgmsg_to_cv2(self.latest["camera/depth/image_raw"], desired_encoding="32FC1")
