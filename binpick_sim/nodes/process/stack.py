"""The `sim` executable: the world, arm, camera (and task) nodes in one process around one physics
client, the way a component container would hold them.

Threads: the physics thread (loop.py) steps and publishes; one executor thread serves every short
callback (commands, resets, parameters) on rclpy's EventsExecutor by default, except in lock-step,
where the physics thread, idle between requests anyway, serves them itself (no hand-off per request);
callbacks that block for long (the control_msgs action servers, which follow a goal to its end, and
the reasoning services) run on a separate thread pool, so they never hold the short ones up. A
4-thread MultiThreadedExecutor for everything, as before, cost about 4x the CPU per lock-step step
(rclpy 7.1.6 rebuilds its wait set for every no-op task wake-up); doc/how-it-is-built.md "Executor and threads" section
has the comparison (the world's `executor` parameter selects another for measuring).
"""
from __future__ import annotations

import os
import select
import signal
import sys
import threading
import time
from typing import Callable

import rclpy
from rclpy.context import Context
from rclpy.exceptions import ParameterException
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.executors import (ExternalShutdownException, MultiThreadedExecutor, ShutdownException,
                             SingleThreadedExecutor)
from rclpy.node import Node
from rclpy.utilities import get_default_context

from ...config import CONTROLLER_TYPES, ConfigError
from . import start_watchdog
from .interrupt import stop_interrupted
from ..common import shm, step_channel
from ..common.dds import use_package_profile
from ..common.sim_clock import SimClocks, steady_timer
from ..common.teardown import destroy_fully
from ..servers.arm_node import ArmNode
from ..servers.camera_node import CameraNode
from ..servers.reasoning_node import ReasoningNode
from ..servers.robot_node import RobotNode
from ..servers import simulation_node
from ..servers.task_node import TaskNode
from ..servers.world_node import WorldNode


SPIN_PERIOD = 0.1  # s: longest an executor thread waits before it looks at the stop flag again
# s: the same for a thread with nothing to do while the physics thread works (the main thread where the physics
# thread serves, the slow callbacks' executor), which the stop wakes at once. Each wake of an idle thread took
# the GIL from the physics thread; during a frame or a step, which hold it, it waited, and every wait polled at
# SWITCH_INTERVAL: at 10 wakes a second, 0.3-0.7 ms of CPU per 30 ms image env step for each of the two, and
# the physics thread's share of handing the GIL over (doc/how-it-is-built.md, "Executor and threads").
IDLE_WAIT = 2.0
# s: how long a thread waiting for the GIL lets the running one go on (CPython's default: 5 ms). The
# physics thread, running as fast as it can, holds the GIL but for moments (stepSimulation does not let
# go of it, so a message still waits for the step in progress); with the default, every message the
# executor thread takes waited up to 5 ms for it. Measured, command -> joint_states at realtime_factor
# 0, p50: 5 ms 8.9 ms, 0.5 ms 1.3-1.4 ms, 0.1 ms 0.9-1.1 ms, 0.05 and 0.02 ms no better than 0.1 (doc/how-it-is-built.md,
# "Executor and threads"); shorter only hands the GIL back and forth more when two threads are busy.
SWITCH_INTERVAL = 0.0001
EXECUTORS = ("events", "single", "multi")


def make_executor(kind: str, context: Context):
    """The executor of the short callbacks: `events` (rclpy's EventsExecutor), `single` or `multi`
    (a 4-thread MultiThreadedExecutor: every callback of the process on one pool, kept for measuring against)."""
    if kind == "events":
        from rclpy.experimental import EventsExecutor

        return EventsExecutor(context=context)
    if kind == "single":
        return SingleThreadedExecutor(context=context)
    if kind == "multi":
        return MultiThreadedExecutor(num_threads=4, context=context)
    raise ValueError(f"executor must be one of {', '.join(EXECUTORS)}, got {kind!r}")


class SimStack:
    """Builds the nodes; `spin` serves them until shutdown, `start`/`stop` run them in a thread (tests)."""

    def __init__(self, context: Context | None = None, parameters: dict[str, list] | None = None):
        parameters = parameters or {}

        def options(name: str) -> dict:
            return {"context": context, "parameter_overrides": parameters.get(name, [])}

        channel = step_channel.inherited()  # a gym env's step channel (its ValueError before anything is built)
        frames = step_channel.frames_wanted()  # and the camera's frame parts it takes there
        probe = check_start_parameters(options("arm"))  # before seconds of world building
        try:
            self.world = WorldNode(**options("world"))
        finally:  # the world node holds the DDS participant now: the probe goes without taking it along
            destroy_fully(probe)
        self.sim, self.loop = self.world.sim, self.world.loop
        owner = "the robot interface (robot_interface:=true)" if self.world.robot_interface else None
        self.arm_nodes = [ArmNode(self.sim, self.loop, owner if arm is self.sim.arm else None, arm, **options("arm"),
                                  **arm_namespace(self.world, arm))  # the robot interface drives the first arm
                          for arm in self.sim.arms]
        self.nodes = [self.world, *self.arm_nodes, *self._optional_nodes(options)]
        self.context = context or rclpy.get_default_context()
        actions = [arm.actions.server_node for arm in self.arm_nodes if arm.actions is not None]
        self.nodes.extend(actions)  # the action servers live on nodes of their own, for the thread pool
        self.clocks = SimClocks(lambda: self.sim.world.time)  # every node on sim time, set where /clock goes out
        for node in self.nodes:
            self.clocks.adopt(node)
        self.loop.every(self.sim.world.timestep, self.clocks.tick)
        self.loop.when_settled(self.clocks.tick)
        slow = [n for n in self.nodes if isinstance(n, (ReasoningNode, simulation_node.SimulationNode))
                or n in actions]  # actions and queries that take a while
        self.executor = make_executor(self.world.executor_kind, self.context)
        self.slow_executor = MultiThreadedExecutor(num_threads=4, context=self.context) if slow else None
        for node in self.nodes:
            (self.slow_executor if node in slow else self.executor).add_node(node)
        # Lock-step (the gym envs): the physics thread waits for requests anyway, so it serves the short
        # callbacks itself between two requests; a thread of their own would hand each one over. With a
        # gym env's step channel (common/step_channel.py), it serves that channel instead, and the
        # callbacks go back to the executor thread.
        self.channel = None
        if channel is not None and self.task is not None and self.loop.lockstep:
            self.channel = step_channel.Server(channel, self.task.on_channel_step, self.task.get_logger().warning,
                                               idle=self.loop.idle)
            self.loop.serve_while_holding(self.channel.serve, self.channel.wake)
            camera = next((n for n in self.nodes if isinstance(n, CameraNode) and not n.name), None)
            if frames and camera is not None:
                camera.frames_to(self.channel.frame, frames)
        elif channel is not None:
            channel.close()  # no lock-step task node to serve it: the env's first step sees the end
        self.physics_serves = self.loop.lockstep and not self.world.robot_interface and \
            self.world.executor_kind != "multi" and self.channel is None
        if self.physics_serves:
            self.loop.serve_while_holding(self._serve_once, waker(self.world))
        self._serving = False
        self._stopping = threading.Event()  # set by whatever ends serving: wakes the idle main thread
        self.context.on_shutdown(self._stopping.set)
        # ends the slow executor's wait of up to IDLE_WAIT at close (an executor's wake() does not: `waker`)
        self._wake_slow = waker(next(n for n in self.nodes if n in slow)) if self.slow_executor else None
        self._threads: list[threading.Thread] = []

    def _optional_nodes(self, options: Callable[[str], dict]) -> list[Node]:
        """The nodes the world's parameters turn on: cameras, task (self.task), robot, reasoning, simulation."""
        nodes = []
        if self.world.camera_enabled:
            nodes += [CameraNode(self.sim, self.loop, name, **options(f"camera_{name}" if name else "camera"))
                      for name in self.sim.cameras]
        self.task = None
        if self.world.task_enabled:
            self.task = TaskNode(self.sim, self.loop, self.arm_nodes[0], **options("task"))
            nodes.append(self.task)
        if self.world.robot_interface:
            nodes.append(RobotNode(self.sim, self.loop, **options("robot")))
        if self.world.reasoning_enabled:
            nodes.append(ReasoningNode(self.sim, self.loop, **options("reasoning")))
        if self.world.simulation_enabled and (node := simulation_node.create(self.world, **options("simulation"))):
            nodes.append(node)
        return nodes

    def spin(self) -> None:
        """Serve on this thread until Ctrl-C or shutdown. A Ctrl-C while the threads start (the physics
        thread may be publishing already) stops the stack as cleanly as one later.

        While serving, Ctrl-C asks the loops below to end at their next turn (`_stop_at_ctrl_c`) instead of
        raising KeyboardInterrupt wherever this thread happens to be. That may be inside rclpy's
        EventsExecutor, in the Python it calls while it registers the nodes' entities with rcl: interrupted
        there, it keeps callbacks it no longer tracks, and its destructor aborts the process ("Destroying
        callback manager with callbacks remaining", exit -6 instead of 0; once in 60 Ctrl-Cs sent just
        after the start). SIGTERM takes that executor's own path and never
        raised here."""
        installed, previous = False, None
        try:
            self._start_threads(main=False)
            if threading.current_thread() is threading.main_thread():
                previous, installed = signal.signal(signal.SIGINT, self._stop_at_ctrl_c), True
            if self.physics_serves:  # the physics thread serves; this one only waits for the end
                while self._serving and self.context.ok() and self.loop.running:
                    self._stopping.wait(IDLE_WAIT)
            else:
                self._serve(self.executor)
        except KeyboardInterrupt:
            pass
        finally:
            self.close()
            if installed:  # (None: the one before was not Python's; the default one stands in for it)
                signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)

    def _stop_at_ctrl_c(self, signum, frame) -> None:
        """The first Ctrl-C ends serving at the loops' next turn (SPIN_PERIOD at most); a second one, while
        the stack stops, interrupts that as Ctrl-C always did."""
        if not self._serving:
            raise KeyboardInterrupt
        self._stop_serving()

    def start(self) -> "SimStack":
        """Serve on threads of our own (tests, benchmarks); `close` stops them."""
        self._start_threads(main=True)
        return self

    def _start_threads(self, main: bool) -> None:
        sys.setswitchinterval(SWITCH_INTERVAL)
        self._serving = True
        self.loop.start()
        executors = ([self.executor] if main and not self.physics_serves else []) + \
            ([self.slow_executor] if self.slow_executor else [])
        for executor in executors:
            name = "executor" if executor is self.executor else "slow callbacks"
            thread = threading.Thread(target=self._serve, args=(executor,), name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def _serve(self, executor) -> None:
        """spin_once in a loop rather than spin(): rclpy 7.1.6's EventsExecutor.spin() was seen not to
        deliver, and the loop looks at the stop flag at least every SPIN_PERIOD (the slow callbacks':
        IDLE_WAIT, and `close` ends their wait)."""
        timeout = IDLE_WAIT if executor is self.slow_executor else SPIN_PERIOD
        while self._serving and self.context.ok():
            try:
                executor.spin_once(timeout_sec=timeout)
            except (ExternalShutdownException, ShutdownException):
                return
            except _rclpy.RCLError:
                # Ctrl-C shuts the context down from the signal handler, between the ok() above and
                # the wait set that spin_once builds; only an error while still serving is one.
                if self._serving and self.context.ok():
                    raise
                return

    def _serve_once(self, timeout: float) -> None:
        """The physics thread's turn at the short callbacks (lock-step): at most one, within `timeout`."""
        if not (self._serving and self.context.ok()):
            self._stopping.set()  # (rclpy's SIGTERM handler shuts the context down in C, calling no on_shutdown)
            time.sleep(min(timeout, SPIN_PERIOD))  # shutting down: close() stops the loop
            return
        try:
            self.executor.spin_once(timeout_sec=timeout)
        except (ExternalShutdownException, ShutdownException):
            self._stopping.set()
        except Exception as exc:  # a broken callback must not stop the physics; Ctrl-C's race is no error
            if self._serving and self.context.ok():
                self.world.get_logger().error(f"a callback failed on the physics thread: {exc!r}")

    def _stop_serving(self) -> None:
        """The loops end at their next look; the idle main thread looks at once."""
        self._serving = False
        self._stopping.set()

    def close(self) -> None:
        self._stop_serving()
        if self._wake_slow is not None and self.context.ok():
            self._wake_slow()
        self.loop.stop()
        for thread in self._threads:
            thread.join(2.0)
        for executor in (self.executor, self.slow_executor):
            if executor is not None:
                executor.shutdown(timeout_sec=2.0)
        for node in self.nodes:
            destroy_fully(node)
        if self.channel is not None:
            self.channel.close()
        self.sim.close()

    def __enter__(self) -> "SimStack":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()


def waker(node: Node) -> Callable[[], None]:
    """A call, safe from any thread, that ends a spin_once of the executor serving `node`: a cancelled
    timer of (almost) no period, which the call resets, fires at once (about 0.1 ms here) and cancels
    itself again. rclpy 7.1.6's EventsExecutor takes no guard conditions, and neither its wake() nor
    SingleThreadedExecutor's ends a spin_once in progress."""
    timer = steady_timer(node, 1e-6, lambda: timer.cancel())
    timer.cancel()
    return timer.reset


def arm_namespace(world: WorldNode, arm) -> dict:
    """Node options that put an arm's node in a namespace named after the arm, within the stack's own,
    when the scene has several arms (`left` -> /left/arm/position_commands, /left/joint_states; its joint
    states go to the stack's `joint_states` too: ArmNode's `cell_namespace`); one arm stays where it
    always was. Node-local arguments win over a process-wide `-r __ns:=`."""
    if not world.sim.config.several_arms:
        return {}
    namespace = world.get_namespace().rstrip("/") + "/" + arm.config.name
    return {"cli_args": ["--ros-args", "-r", f"__ns:={namespace}"], "cell_namespace": world.get_namespace()}


def check_start_parameters(arm_options: dict) -> Node:
    """Refuse a bad read-only parameter of a node built after the world (the arm's `controller`) before
    the world is built and settled, rather than seconds later. The probe takes the arm node's name so
    that node-specific overrides (`-p arm:controller:=osc`) reach it too; rclpy offers no way to read a
    node's overrides (`-p`, `--params-file`, wildcards) without a node.

    Returns the probe, alive: the caller destroys it once the world node exists. Destroying the
    context's last node tears its whole DDS participant down (rmw_fastrtps counts a participant's
    nodes), in C and holding the GIL; a probe destroyed at once made a participant only to tear it down
    milliseconds later, at every start, and could hang it (doc/robustness.md, "Robustness suite": the start-up hang)."""
    probe = Node("arm", start_parameter_services=False, enable_rosout=False, **arm_options)
    try:
        kind = probe.declare_parameter("controller", "none").value
        if kind not in CONTROLLER_TYPES:
            raise ValueError(f"parameter controller: unknown controller {kind!r} (known: {', '.join(CONTROLLER_TYPES)})")
    except BaseException:
        destroy_fully(probe)
        raise
    return probe


PARENT_POLL = 0.2  # s between two looks at the parent process, where it cannot be waited for (wait_for_parent)


def exit_with_parent(enabled: threading.Event) -> None:
    """SIGTERM this process (the same clean path as `kill`) once the process that started it is gone, so
    a killed launch, gym env or test never leaves a simulation stepping on the user's ROS domain.
    getppid() changes when the parent dies whoever it was; PR_SET_PDEATHSIG would instead fire when the
    parent's starting *thread* ends. `enabled` is cleared by the world's exit_with_parent:=false."""
    parent = os.getppid()

    def watch() -> None:
        wait_for_parent(parent)
        if enabled.is_set():
            os.kill(os.getpid(), signal.SIGTERM)
            try:  # the parent may have held the other end of stderr (launch does): then nobody reads it
                print(f"binpick_sim: the parent process ({parent}) is gone; stopping", file=sys.stderr, flush=True)
            except OSError:
                pass

    if parent != 1:
        threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def wait_for_parent(parent: int) -> None:
    """Return once process `parent`, this one's parent when called, is gone. Where the kernel gives a
    process's file descriptor (pidfd_open, Linux 5.3), the thread sleeps in poll until it becomes readable,
    at the parent's exit, and never wakes before: a look every PARENT_POLL took the GIL from the physics
    thread five times a second (IDLE_WAIT says what that cost). Elsewhere (a kernel or sandbox without it) it looks
    every PARENT_POLL."""
    try:
        descriptor = os.pidfd_open(parent)
    except (AttributeError, OSError):  # no pidfd here; or the parent is gone already (the loop returns)
        descriptor = None
    if descriptor is not None:
        try:
            if os.getppid() == parent:  # still ours once opened: the descriptor is the parent's, not a reused pid's
                waiting = select.poll()
                waiting.register(descriptor, select.POLLIN)
                waiting.poll()  # no timeout: returns at the parent's exit (a signal's EINTR is retried, PEP 475)
            return
        finally:
            os.close(descriptor)
    while os.getppid() == parent:
        time.sleep(PARENT_POLL)


def main(argv: list[str] | None = None) -> int:
    """Serve until Ctrl-C or SIGTERM (exit 0). A bad scene file or parameter, or shared-memory files Fast
    DDS would abort on: one line, exit 2. Ctrl-C
    (or the parent's death) while starting: one line, exit 130."""
    watching = threading.Event()
    watching.set()
    exit_with_parent(watching)
    context = get_default_context()  # the default context gets rclpy's SIGINT/SIGTERM handlers
    use_package_profile()  # before the participant is made (dds.py: why)
    if blocked := shm.problem():  # Fast DDS would abort, crash or hang on them (shm.py)
        print(f"binpick_sim: cannot start: {blocked}", file=sys.stderr)
        return 2
    watchdog = start_watchdog.arm()
    try:
        rclpy.init(args=argv if argv is not None else sys.argv, context=context)
        stack = SimStack(context)
        if not stack.world.exit_with_parent:
            watching.clear()
    except KeyboardInterrupt:
        return stop_interrupted()
    except (ConfigError, ParameterException, ValueError) as exc:
        if not context.ok():
            return stop_interrupted()
        print(f"binpick_sim: cannot start: {exc}", file=sys.stderr)
        rclpy.try_shutdown(context=context)
        return 2
    except Exception:
        if not context.ok():  # Ctrl-C shut the context down under a node being built
            return stop_interrupted()
        raise
    finally:
        if watchdog is not None:
            watchdog.cancel()
    stack.spin()
    rclpy.try_shutdown(context=context)
    return 0


if __name__ == "__main__":
    sys.exit(main())
