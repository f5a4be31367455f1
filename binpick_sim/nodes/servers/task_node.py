"""The `task` node: the gym envs' episode rules served to ROS clients as `task/status` (JSON), and, in
lock-step mode, the gym envs' whole step as one request and one reply.

In lock-step mode it evaluates the task once after every request, before anything is published, so
the observation a client receives already reflects a grab (the grabbed object is gone). Running
freely, it evaluates at `rate` Hz of sim time.

One env step over ROS is one message each way (`task/step` in, `task/observation` out): the arm
command and the number of physics steps in, everything the env observes out. Two topics cannot keep
an order between them (a command on arm/..._commands and a step on world/step), so the old way needed
a handshake per step and a wait for six topics; one message needs neither, and the command passes
through the arm node's own checks (rejections counted on the arm's /diagnostics as usual).
"""
from __future__ import annotations

import json
from typing import Callable

from rclpy.node import Node
from std_msgs.msg import Float64MultiArray, String

from ...cell.loop import PhysicsLoop
from ...cell.bin_picking_sim import BinPickingSim
from ...picking.privileged_state import privileged_state
from ...picking.task import PickTask
from ..common.diagnostics import BadCommand, NodeDiagnostics
from ...config import MAX_STEP_REQUEST
from ..common.params import declare
from ..common.step_channel import request_values
from ..common.wire import OBSERVATION_TOPIC, STEP_COMMANDS, STEP_TOPIC, UNTIL_REACHED



class TaskNode(Node):
    parameter_table = "task"  # config/parameters.py

    def __init__(self, sim: BinPickingSim, loop: PhysicsLoop, arm=None, **kwargs):
        """`arm`: the arm node, whose command checks task/step's commands go through (None: no task/step)."""
        super().__init__("task", **kwargs)
        self.sim, self.loop, self.arm = sim, loop, arm
        rate = declare(self, "rate", "Hz of sim time at which the task is evaluated when not in lock-step.",
                       read_only=True)
        # Reading every object's pose, velocity and size costs each lock-step reply; only a client that
        # learns from them (privileged observations, dense rewards) asks for them.
        self.privileged = declare(self, "privileged", "task/observation carries `privileged` (the objects' and bins' state).",
                                  on_change=self._flag("privileged"))
        # The objects' list (name, pose, shape of each) is a quarter of a lock-step reply's work; the gym
        # envs' ROS backend turns it off until a caller asks for object_views().
        self.objects = declare(self, "objects", "task/observation carries `objects` (each object's name, pose and shape).",
                               on_change=self._flag("objects"))
        self.task = PickTask(sim, sim.config.task)
        self.episode = sim.scene.episode
        self.sequence = 0
        # (id, command taken, how to answer: None publishes task/observation) of the step being answered
        self.request: tuple[int, bool, Callable[[bytes], None] | None] | None = None
        self.publisher = self.create_publisher(String, "task/status", 10)
        self.observation_publisher = self.create_publisher(String, OBSERVATION_TOPIC, 10)
        self.diagnostics = NodeDiagnostics(self, lambda: self.sim.world.time,
                                           values=lambda: {"grabs": self.task.grabs, "episode": self.episode})
        if arm is not None and loop.lockstep:
            self.create_subscription(Float64MultiArray, STEP_TOPIC, self.on_step, 10)
        loop.every(1.0 / rate, self.update, wall_cap=False)  # grabs are judged at `rate` of sim time
        loop.when_settled(self.update, first=True)

    def _flag(self, name: str):
        """A boolean parameter's setter: one attribute, read by the physics thread at its next reply."""
        return lambda value: setattr(self, name, bool(value))

    # --- executor thread (or the physics thread, serving the step channel) -------------------------
    def on_step(self, msg: Float64MultiArray) -> None:
        self.take(msg.data)

    def on_channel_step(self, data: bytes, reply: Callable[[bytes], None]) -> None:
        """A request on the step channel (common/step_channel.py): checked and taken as task/step's, its
        observation sent back through `reply` instead of published."""
        try:
            values = request_values(data)
        except ValueError as exc:
            self.diagnostics.reject("step channel", str(exc))
            return
        self.take(values, reply)

    def take(self, data, reply: Callable[[bytes], None] | None = None) -> None:
        """Check the command with the arm node's checks (rejections counted on its /diagnostics), then hand
        it and its steps to the physics thread together."""
        try:
            if len(data) < 3 or not all(map(_is_integer, data[:3])):
                raise BadCommand("expected [request id, command, steps, values...] with integers first")
            request, code, steps = (int(v) for v in data[:3])
            if not 0 <= code < len(STEP_COMMANDS) or not 0 <= steps <= MAX_STEP_REQUEST:
                raise BadCommand(f"command must be 0..{len(STEP_COMMANDS) - 1} ({', '.join(STEP_COMMANDS)}) "
                                 f"and steps 0..{MAX_STEP_REQUEST}, got {code} and {steps}")
        except BadCommand as exc:
            self.diagnostics.reject(STEP_TOPIC if reply is None else "step channel", str(exc))
            return
        command = STEP_COMMANDS[code]
        apply = self.arm.prepared(command.removesuffix(UNTIL_REACHED), data[3:]) if code else None
        until = self.sim.arm.target_reached if command.endswith(UNTIL_REACHED) else None
        self.loop.call(self._start, (request, code == 0 or apply is not None, reply), apply, steps, until)

    # --- physics thread -----------------------------------------------------------------------
    def _start(self, request: tuple, apply, steps: int, until) -> None:
        """One hand-off per request: the command (if taken), then its steps, which therefore see it."""
        if apply is not None:
            apply()
        self.request = request
        self.loop.advance(steps, until=until)

    def update(self) -> None:
        """Evaluate the task on the physics thread and publish the result (and the observation a
        task/step request waits for)."""
        if self.sim.scene.episode != self.episode:  # the world was reset since the last update
            self.episode = self.sim.scene.episode
            self.task.reset()
        status = self.task.update()
        self.sequence += 1
        report = {"stamp": self.sim.world.time, "sequence": self.sequence, "episode": self.episode,
                  **status.as_dict()}
        if self.publisher.get_subscription_count():
            self.publisher.publish(String(data=json.dumps(report)))
        if self.request is not None:
            (request, taken, reply), self.request = self.request, None
            answer = json.dumps({"request": request, "taken": taken, **report, **self.observation()})
            if reply is None:
                self.observation_publisher.publish(String(data=answer))
            else:
                reply(answer.encode())

    def observation(self) -> dict:
        """What the gym env observes, as plain numbers (JSON keeps every float exactly)."""
        arm = self.sim.arm
        position, velocity, _ = arm.joint_states()
        ee_position, ee_orientation = arm.ee_pose()
        observed = {"joint_positions": position.tolist(), "joint_velocities": velocity.tolist(),
                    "ee_position": ee_position.tolist(), "ee_orientation": ee_orientation.tolist()}
        if self.objects:  # only while asked (parameter `objects`, true unless a client turned it off)
            objects = observed["objects"] = []
            for obj, place, turn in self.sim.object_poses():  # as BinPickingSim.object_views places and shapes them
                geometry = self.sim.object_geometry(obj)
                objects.append([obj.name, list(place), list(turn), geometry.kind, list(geometry.size), geometry.mesh])
        if self.privileged:  # only when asked (parameter `privileged`): plain state and image envs skip it
            observed["privileged"] = privileged_state(self.sim)
        return observed


def _is_integer(value: float) -> bool:
    return value == value and abs(value) < 2**53 and float(value).is_integer()
