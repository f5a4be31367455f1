"""The `task` node: the gym envs' episode rules served to ROS clients as `task/status` (JSON).

In lock-step mode it evaluates the task once after every request, before anything is published, so
the observation a client receives already reflects a grab (the grabbed object is gone). Running
freely, it evaluates at `rate` Hz of sim time.
"""
from __future__ import annotations

import json

from rclpy.node import Node
from std_msgs.msg import String

from ..loop import PhysicsLoop
from ..sim import BinPickingSim
from ..task import PickTask
from .diagnostics import NodeDiagnostics
from .params import MAX_RATE, MIN_RATE, declare


class TaskNode(Node):
    def __init__(self, sim: BinPickingSim, loop: PhysicsLoop, **kwargs):
        super().__init__("task", **kwargs)
        self.sim = sim
        rate = declare(self, "rate", 10.0, "Hz of sim time at which the task is evaluated when not in lock-step.",
                       read_only=True, low=MIN_RATE, high=MAX_RATE)
        self.task = PickTask(sim, sim.config.task)
        self.episode = sim.scene.episode
        self.sequence = 0
        self.publisher = self.create_publisher(String, "task/status", 10)
        self.diagnostics = NodeDiagnostics(self, lambda: self.sim.world.time,
                                           values=lambda: {"grabs": self.task.grabs, "episode": self.episode})
        loop.every(1.0 / rate, self.update)
        loop.when_settled(self.update, first=True)

    def update(self) -> None:
        """Evaluate the task on the physics thread and publish the result."""
        if self.sim.scene.episode != self.episode:  # the world was reset since the last update
            self.episode = self.sim.scene.episode
            self.task.reset()
        status = self.task.update()
        self.sequence += 1
        report = {"stamp": self.sim.world.time, "sequence": self.sequence, "episode": self.episode,
                  **status.as_dict()}
        self.publisher.publish(String(data=json.dumps(report)))
