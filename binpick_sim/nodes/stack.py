"""The `sim` executable: the world, arm, camera (and task) nodes in one process around one physics
client, the way a component container would hold them."""
from __future__ import annotations

import os
import signal
import sys
import threading
import time

import rclpy
from rclpy.context import Context
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.node import Node
from rclpy.utilities import get_default_context

from ..config import ConfigError
from ..controllers import CONTROLLER_KINDS
from .entry import INTERRUPTED
from .arm_node import ArmNode
from .camera_node import CameraNode
from .reasoning_node import ReasoningNode
from .robot_node import RobotNode
from .task_node import TaskNode
from .world_node import WorldNode


class SimStack:
    """Builds the nodes; `spin` serves them until shutdown, `start`/`stop` run them in a thread (tests)."""

    def __init__(self, context: Context | None = None, parameters: dict[str, list] | None = None):
        parameters = parameters or {}

        def options(name: str) -> dict:
            return {"context": context, "parameter_overrides": parameters.get(name, [])}

        check_start_parameters(options("arm"))  # before seconds of world building
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


def check_start_parameters(arm_options: dict) -> None:
    """Refuse a bad read-only parameter of a node built after the world (the arm's `controller`) before
    the world is built and settled, rather than seconds later. The probe takes the arm node's name so
    that node-specific overrides (`-p arm:controller:=osc`) reach it too."""
    probe = Node("arm", start_parameter_services=False, enable_rosout=False, **arm_options)
    try:
        kind = probe.declare_parameter("controller", "none").value
    finally:
        probe.destroy_node()
    if kind not in CONTROLLER_KINDS:
        raise ValueError(f"parameter controller: unknown controller {kind!r} (known: {', '.join(CONTROLLER_KINDS)})")


PARENT_POLL = 0.2  # s between two looks at the parent process


def exit_with_parent(enabled: threading.Event) -> None:
    """SIGTERM this process (the same clean path as `kill`) once the process that started it is gone, so
    a killed launch, gym env or test never leaves a simulation stepping on the user's ROS domain.
    getppid() changes when the parent dies whoever it was; PR_SET_PDEATHSIG would instead fire when the
    parent's starting *thread* ends. `enabled` is cleared by the world's exit_with_parent:=false."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL)
        if enabled.is_set():
            os.kill(os.getpid(), signal.SIGTERM)
            try:  # the parent may have held the other end of stderr (launch does): then nobody reads it
                print(f"binpick_sim: the parent process ({parent}) is gone; stopping", file=sys.stderr, flush=True)
            except OSError:
                pass

    if parent != 1:
        threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    """Serve until Ctrl-C or SIGTERM (exit 0). A bad scene file or parameter: one line, exit 2. Ctrl-C
    (or the parent's death) while starting: one line, exit 130."""
    watching = threading.Event()
    watching.set()
    exit_with_parent(watching)
    context = get_default_context()  # the default context gets rclpy's SIGINT/SIGTERM handlers
    try:
        rclpy.init(args=argv if argv is not None else sys.argv, context=context)
        stack = SimStack(context)
        if not stack.world.exit_with_parent:
            watching.clear()
    except KeyboardInterrupt:
        return _interrupted(context)
    except (ConfigError, ParameterException, ValueError) as exc:
        if not context.ok():
            return _interrupted(context)
        print(f"binpick_sim: cannot start: {exc}", file=sys.stderr)
        rclpy.try_shutdown(context=context)
        return 2
    except Exception:
        if not context.ok():  # Ctrl-C shut the context down under a node being built
            return _interrupted(context)
        raise
    stack.spin()
    rclpy.try_shutdown(context=context)
    return 0


def _interrupted(context: Context) -> int:
    print(INTERRUPTED, file=sys.stderr)
    rclpy.try_shutdown(context=context)
    return 130


if __name__ == "__main__":
    sys.exit(main())
