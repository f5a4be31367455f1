"""Two ways to run an env step, with one behaviour: in-process (`direct`) or over ROS (`ros`).

A step is: hand the arm one command (position, velocity or delta targets, as the arm node's topics
take them), advance a fixed number of physics steps, evaluate the task, observe. The ROS backend does
exactly that through a `sim` process in lock-step mode, so both give the same episode for the same
seed and actions.
"""
from __future__ import annotations

import itertools
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..config import Config, save_config
from ..policy import ObjectView
from ..sim import BinPickingSim
from ..task import PickTask

COMMANDS = ("position", "velocity", "delta")


@dataclass
class Observation:
    joint_positions: np.ndarray
    joint_velocities: np.ndarray
    ee_position: np.ndarray
    ee_orientation: np.ndarray  # xyzw
    status: dict  # the task's report (see task.TaskStatus.as_dict)
    stamp: float  # sim time
    rgb: np.ndarray | None = None
    depth: np.ndarray | None = None
    objects: list[ObjectView] = field(default_factory=list)


class DirectBackend:
    """The core simulation in this process."""

    def __init__(self, config: Config, images: bool, gui: bool = False):
        self.sim = BinPickingSim(config, gui=gui)
        self.sim.reset(seed=config.simulation.seed)  # as the world node does when it starts
        self.task = PickTask(self.sim, config.task)
        self.images = images

    def reset(self, seed: int | None, keep_object_type: bool) -> Observation:
        self.sim.reset(seed=seed, keep_object_type=keep_object_type)
        self.task.reset()
        return self.observe(self.task.update().as_dict())

    def step(self, command: str, values: np.ndarray, steps: int) -> Observation:
        arm = self.sim.arm
        if command == "position":
            arm.set_position_targets(values)
        elif command == "velocity":
            arm.set_velocity_targets(values)
        else:
            arm.set_position_targets(arm.delta_targets(values))
        self.sim.world.step(steps)
        return self.observe(self.task.update().as_dict())

    def observe(self, status: dict) -> Observation:
        position, velocity, _ = self.sim.arm.joint_states()
        ee_position, ee_orientation = self.sim.arm.ee_pose()
        frame = self.sim.camera.render(segmentation=False) if self.images else None
        return Observation(position, velocity, ee_position, ee_orientation, status, self.sim.world.time,
                           rgb=frame.rgb if frame else None, depth=frame.depth if frame else None,
                           objects=self.sim.object_views())

    def close(self) -> None:
        self.sim.close()


class RosBackend:
    """A private `sim` process in lock-step mode, in a namespace of its own, driven over its topics."""

    _count = itertools.count()
    TIMEOUT = 120.0  # s to wait for the process to come up or for one step

    def __init__(self, config: Config, images: bool, gui: bool = False, namespace: str | None = None):
        import rclpy
        from rclpy.context import Context
        from rclpy.qos import DurabilityPolicy, QoSProfile
        from std_msgs.msg import String, UInt32, UInt64

        from ..nodes.client import TOPICS, SimClient
        from ..nodes.spawn import SimProcess

        self.images = images
        self.namespace = namespace or f"/binpick_env_{os.getpid()}_{next(self._count)}"
        self.folder = tempfile.TemporaryDirectory(prefix="binpick_env_")
        scene = save_config(config, Path(self.folder.name) / "scene.yaml")
        self.process = SimProcess({"config": scene, "lockstep": True, "task": True, "camera": images, "gui": gui,
                                   "arm:velocity_timeout": 0.0},
                                  log=Path(self.folder.name) / "sim.log", namespace=self.namespace)
        self.context = Context()
        rclpy.init(context=self.context)
        topics = {t: TOPICS[t] for t in ("joint_states", "arm/ee_pose", "world/objects")}
        topics["task/status"] = String
        if images:
            topics.update({t: TOPICS[t] for t in ("camera/image_raw", "camera/depth/image_raw")})
        self.client = SimClient("gym_env", namespace=self.namespace, context=self.context, topics=topics)
        self.received = 0
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.client.node.create_subscription(UInt64, "arm/commands_received", self._on_count, latched)
        self.stepper = self.client.node.create_publisher(UInt32, "world/step", 10)
        self.sent = 0
        self.sequence = 0
        self.UInt32 = UInt32
        self.client.spin_until(lambda: self.stepper.get_subscription_count() > 0 or not self.process.running(),
                               self.TIMEOUT, f"the sim process in {self.namespace}")
        self._check_alive()

    def _on_count(self, msg) -> None:
        self.received = msg.data

    def _check_alive(self) -> None:
        if not self.process.running():
            log = (Path(self.folder.name) / "sim.log").read_text()
            raise RuntimeError(f"the sim process for {self.namespace} exited:\n{log[-2000:]}")

    def reset(self, seed: int | None, keep_object_type: bool) -> Observation:
        from rclpy.parameter import Parameter

        parameters = [Parameter("keep_object_type", value=bool(keep_object_type))]
        if seed is not None:
            parameters.append(Parameter("seed", value=int(seed)))
        self._set_world_parameters(parameters)
        answer = self.client.call("world/reset", timeout=self.TIMEOUT)
        if not answer.success:
            raise RuntimeError(f"world/reset failed: {answer.message}")
        return self._advance(0)

    def step(self, command: str, values: np.ndarray, steps: int) -> Observation:
        self.client.send(command, values)
        self.sent += 1
        self.client.spin_until(lambda: self.received >= self.sent, self.TIMEOUT, "the arm node to take the command")
        return self._advance(steps)

    def _advance(self, steps: int) -> Observation:
        """Ask for `steps` physics steps and wait for the one observation published after them."""
        self.stepper.publish(self.UInt32(data=steps))
        self.sequence += 1
        self.client.spin_until(lambda: self._status().get("sequence", 0) >= self.sequence, self.TIMEOUT,
                               f"the observation after {steps} steps")
        status = self._status()
        stamp = status["stamp"]
        stamped = ["joint_states", "arm/ee_pose"] + (["camera/image_raw", "camera/depth/image_raw"] if self.images else [])
        for topic in stamped:
            self.client.wait_for_stamp(topic, stamp, timeout=self.TIMEOUT)
        self.client.spin_until(lambda: self._markers_stamp() >= stamp - 1e-9, self.TIMEOUT, "world/objects")
        js = self.client.latest["joint_states"]
        position, orientation = self.client.ee_pose()
        return Observation(np.array(js.position), np.array(js.velocity), position, orientation, status, stamp,
                           rgb=self.client.rgb() if self.images else None,
                           depth=self.client.depth() if self.images else None, objects=self.client.objects())

    def _status(self) -> dict:
        msg = self.client.latest.get("task/status")
        return json.loads(msg.data) if msg is not None else {}

    def _markers_stamp(self) -> float:
        msg = self.client.latest.get("world/objects")
        stamp = msg.markers[0].header.stamp if msg is not None and msg.markers else None
        return stamp.sec + stamp.nanosec * 1e-9 if stamp else -1.0

    def _set_world_parameters(self, parameters) -> None:
        from rclpy.parameter_client import AsyncParameterClient

        client = AsyncParameterClient(self.client.node, "world")
        self.client.spin_until(client.services_are_ready, self.TIMEOUT, "the world's parameter services")
        future = client.set_parameters(parameters)
        self.client.spin_until(future.done, self.TIMEOUT, "the world's parameters")
        failed = [r.reason for r in future.result().results if not r.successful]
        if failed:
            raise ValueError(f"world refused the parameters: {'; '.join(failed)}")

    def close(self) -> None:
        import rclpy

        self.client.close()
        rclpy.try_shutdown(context=self.context)
        self.process.stop()
        self.folder.cleanup()


def make_backend(name: str, config: Config, images: bool, gui: bool = False, **options):
    if name == "direct":
        return DirectBackend(config, images, gui)
    if name == "ros":
        return RosBackend(config, images, gui, **options)
    raise ValueError(f"backend must be 'direct' or 'ros', got {name!r}")
