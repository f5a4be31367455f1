"""The `sim` executable: the world, arm, camera (and task) nodes in one process around one physics
client, the way a component container would hold them."""
from __future__ import annotations

import sys
import threading

import rclpy
from rclpy.context import Context
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor

from ..config import ConfigError
from .arm_node import ArmNode
from .camera_node import CameraNode
from .reasoning_node import ReasoningNode
from .robot_node import RobotNode
from . import simulation_node
from .task_node import TaskNode
from .world_node import WorldNode


class SimStack:
    """Builds the nodes; `spin` serves them until shutdown, `start`/`stop` run them in a thread (tests)."""

    def __init__(self, context: Context | None = None, parameters: dict[str, list] | None = None):
        parameters = parameters or {}

        def options(name: str) -> dict:
            return {"context": context, "parameter_overrides": parameters.get(name, [])}

        self.world = WorldNode(**options("world"))
        self.sim, self.loop = self.world.sim, self.world.loop
        owner = "the robot interface (robot_interface:=true)" if self.world.robot_interface else None
        self.nodes = [self.world, ArmNode(self.sim, self.loop, owner, **options("arm"))]
        if self.world.camera_enabled:
            self.nodes.append(CameraNode(self.sim, self.loop, **options("camera")))
        if self.world.task_enabled:
            self.nodes.append(TaskNode(self.sim, self.loop, **options("task")))
        if self.world.robot_interface:
            self.nodes.append(RobotNode(self.sim, self.loop, **options("robot")))
        if self.world.reasoning_enabled:
            self.nodes.append(ReasoningNode(self.sim, self.loop, **options("reasoning")))
        if self.world.simulation_enabled and (node := simulation_node.create(self.world, **options("simulation"))):
            self.nodes.append(node)
        self.executor = MultiThreadedExecutor(num_threads=4, context=context)  # actions block one while they run
        for node in self.nodes:
            self.executor.add_node(node)
        self._thread: threading.Thread | None = None

    def spin(self) -> None:
        self.loop.start()
        try:
            self.executor.spin()
        except (KeyboardInterrupt, ExternalShutdownException):
            pass
        finally:
            self.close()

    def start(self) -> "SimStack":
        self.loop.start()
        self._thread = threading.Thread(target=self.executor.spin, name="executor", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self.loop.stop()
        self.executor.shutdown(timeout_sec=2.0)
        if self._thread is not None:
            self._thread.join(2.0)
        for node in self.nodes:
            node.destroy_node()
        self.sim.close()

    def __enter__(self) -> "SimStack":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()


def main(argv: list[str] | None = None) -> int:
    rclpy.init(args=argv if argv is not None else sys.argv)
    try:
        stack = SimStack()
    except (ConfigError, ParameterException, ValueError) as exc:
        print(f"binpick_sim: cannot start: {exc}", file=sys.stderr)
        rclpy.try_shutdown()
        return 2
    stack.spin()
    rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
