"""The camera changed at run time over ROS (what `ros2 param set /camera ...` does): CameraInfo, images
and the robot description's camera_link follow; a bad value is refused with its reason."""
import time
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import rclpy
from rcl_interfaces.msg import SetParametersResult
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient

from binpick_sim.description import cell_description
from binpick_sim.nodes.clients.client import TOPICS, SimClient


class Graph:
    """A parameter client of /camera and robot_state_publishers (one, or one per namespace) that record the
    descriptions they are given."""

    def __init__(self, context, description: str, namespaces=("",)):
        self.executor = SingleThreadedExecutor(context=context)
        self.node = rclpy.create_node("camera_parameter_test", context=context)
        self.publishers = [rclpy.create_node("robot_state_publisher", namespace=f"/{ns}", context=context)
                           for ns in namespaces]
        self.received = {}  # namespace -> every robot_description its publisher held, the first at start
        for namespace, publisher in zip(namespaces, self.publishers):
            self.received[namespace] = [publisher.declare_parameter("robot_description", description).value]
            publisher.add_on_set_parameters_callback(lambda parameters, ns=namespace: self.on_set(ns, parameters))
        self.descriptions = self.received[namespaces[0]]
        for node in (self.node, *self.publishers):
            self.executor.add_node(node)
        self.camera = AsyncParameterClient(self.node, "/camera")

    def on_set(self, namespace, parameters):
        self.received[namespace] += [p.value for p in parameters if p.name == "robot_description"]
        return SetParametersResult(successful=True)

    def spin_until(self, done, timeout=30.0):
        deadline = time.monotonic() + timeout
        while not done():
            assert time.monotonic() < deadline, "timed out"
            self.executor.spin_once(timeout_sec=0.05)

    def set(self, **values):
        self.spin_until(lambda: self.camera.services_are_ready(), 60)
        future = self.camera.set_parameters([Parameter(k, value=v) for k, v in values.items()])
        self.spin_until(future.done)
        return future.result().results

    def close(self):
        self.executor.shutdown()
        for node in (self.node, *self.publishers):
            node.destroy_node()


def camera_joint(urdf: str) -> tuple[str, list[float]]:
    joint = next(j for j in ET.fromstring(urdf).iter("joint") if j.get("name") == "camera_joint")
    return joint.find("parent").get("link"), [float(v) for v in joint.find("origin").get("xyz").split()]


def test_camera_follows_parameters_set_at_run_time(ros_context, stack):
    graph = Graph(ros_context, cell_description(stack.sim.config))
    watcher = SimClient("parameter_watcher", context=ros_context,
                        topics={"camera/camera_info": TOPICS["camera/camera_info"],
                                "camera/image_raw": TOPICS["camera/image_raw"]})
    try:
        watcher.wait_for_topics(["camera/camera_info"], timeout=60)
        assert watcher.latest["camera/camera_info"].k[4] == pytest.approx(240 / np.tan(np.radians(30)))

        assert all(r.successful for r in graph.set(fov_deg=40.0))
        watcher.spin_until(lambda: watcher.latest["camera/camera_info"].k[4] == pytest.approx(
            240 / np.tan(np.radians(20))), 30, "CameraInfo with the new field of view")

        assert all(r.successful for r in graph.set(width=320, height=240))
        watcher.spin_until(lambda: (watcher.latest["camera/image_raw"].width, watcher.latest["camera/image_raw"].height,
                                    watcher.latest["camera/camera_info"].width) == (320, 240, 320),
                           30, "320x240 images and CameraInfo")
        assert watcher.latest["camera/camera_info"].k[2] == pytest.approx(stack.sim.camera.intrinsics()[0, 2])

        assert all(r.successful for r in graph.set(parent="panda_hand", position=[0.05, 0.0, 0.04],
                                                   orientation_deg=[0.0, -90.0, 0.0]))
        graph.spin_until(lambda: camera_joint(graph.descriptions[-1]) == ("panda_hand", [0.05, 0.0, 0.04]))
        assert stack.sim.camera.config.parent == "panda_hand"

        before = stack.sim.camera.config
        for values, reason in (({"far": 0.05}, "far: must be > near"), ({"parent": "panda_nose"}, "unknown frame"),
                               ({"width": 2 ** 40}, "width"), ({"near": float("nan")}, "near")):
            result = graph.set(**values)[0]
            assert not result.successful and reason in result.reason, result.reason
        assert stack.sim.camera.config == before
    finally:
        watcher.close()
        graph.close()


def test_with_two_arms_the_cells_one_robot_state_publisher_gets_the_moved_camera(ros_context):
    """sim.launch.py runs one robot_state_publisher for the cell, also for a scene of several arms: a camera
    moved at run time reaches it, so RViz shows it; a node of that name in an arm's namespace (as the launch
    once ran them, one per arm, each publishing the cell's fixed frames again) is not asked."""
    from binpick_sim.nodes.process.stack import SimStack
    from binpick_sim.paths import share_dir

    scene = share_dir() / "config" / "scene_two_arms.yaml"
    world = [Parameter("realtime_factor", value=0.0), Parameter("config", value=str(scene))]
    with SimStack(ros_context, {"world": world}) as stack:
        arms = [arm.name for arm in stack.sim.config.arms]
        assert len(arms) == 2
        graph = Graph(ros_context, cell_description(stack.sim.config), namespaces=["", arms[0]])
        try:
            assert all(r.successful for r in graph.set(position=[0.5, 0.7, 0.8]))
            graph.spin_until(lambda: camera_joint(graph.received[""][-1])[1] == [0.5, 0.7, 0.8])
            assert len(graph.received[""]) == 2  # the start one, the moved one
            graph.executor.spin_once(timeout_sec=0.5)
            assert len(graph.received[arms[0]]) == 1
        finally:
            graph.close()
