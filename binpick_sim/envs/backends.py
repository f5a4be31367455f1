"""Two ways to run an env step, with one behaviour: in-process (`direct`) or over ROS (`ros`).

A step is: hand the arm one command (position, velocity or delta targets, as the arm node's topics
take them), advance a fixed number of physics steps, evaluate the task, observe. The ROS backend does
exactly that through a `sim` process in lock-step mode, so both give the same episode for the same
seed and actions.
"""
from __future__ import annotations

import array
import dataclasses
import itertools
import json
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, TypeVar

import numpy as np

from ..config import Config, save_config, with_changes
from ..cell.objects.shapes import ObjectView, Geometry, cached_vertices
from ..cell.bin_picking_sim import BinPickingSim
from ..picking.privileged_state import privileged_state
from ..picking.task import PickTask

COMMANDS = ("position", "velocity", "delta")
# The process that started ROS (rclpy) for a ROS backend, and, in a child forked from such a process, that
# parent's id: DDS keeps threads and locks that a fork copies mid-use, so a ROS backend made in such a child
# hangs (doc/gym.md: vector envs).
_ros_started_in: int | None = None
_forked_from_ros: int | None = None


def _after_fork_in_child() -> None:
    global _forked_from_ros
    if _ros_started_in is not None:
        _forked_from_ros = _ros_started_in


os.register_at_fork(after_in_child=_after_fork_in_child)


class ForkedAfterRos(RuntimeError):
    """A ROS backend asked for in a process forked from one that had started ROS."""


SEGMENTATION_TOPIC = "camera/segmentation/image_raw"
T = TypeVar("T")
UNTIL_REACHED = "_until_reached"  # a command's suffix in task/step's codes (task_node.STEP_COMMANDS)
TIMEOUT = 120.0  # s to wait for the ROS backend's process to come up or for one step
RETRY = 2.0  # s after which the ROS backend asks again for a reset's first observation
POLL = 0.5  # s between two looks at the sim process while a step channel's reply is awaited


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
    segmentation: np.ndarray | None = None  # H×W int32 labels (cell/vision/labels.py), when asked for
    objects: list[ObjectView] | Callable[[], list[ObjectView]] = field(default_factory=list)
    # the privileged state (picking/privileged_state.py; read from the world when first asked, as `objects`)
    privileged: dict | Callable[[], dict] = field(default_factory=dict)

    def object_views(self) -> list[ObjectView]:
        """The objects as this observation saw them. The direct backend reads them from the world only
        when first asked (a scripted policy asks; a learning agent never does), so an env step that nobody
        asks them of costs nothing for them."""
        if callable(self.objects):
            self.objects = self.objects()
        return self.objects

    def privileged_state(self) -> dict:
        """The objects' and bins' state as this observation saw them (picking.privileged_state)."""
        if callable(self.privileged):
            self.privileged = self.privileged()
        return self.privileged


class DirectBackend:
    """The core simulation in this process."""

    def __init__(self, config: Config, images: bool, gui: bool = False):
        self.sim = BinPickingSim(config, gui=gui, drawn=images or gui)
        self.sim.reset(seed=config.simulation.seed)  # as the world node does when it starts
        self.task = PickTask(self.sim, config.task)
        self.images = images
        self.segmentation = False  # make_backend's: render the mask too (the `segmentation` observation)

    def reset(self, seed: int | None, keep_object_type: bool) -> Observation:
        self.sim.reset(seed=seed, keep_object_type=keep_object_type)
        if self.sim.camera.config != self.sim.config.camera:  # changed at run time: the scene file's again
            self.set_camera(dataclasses.asdict(self.sim.config.camera))
        self.task.reset()
        return self.observe(self.task.update().as_dict())

    def set_camera(self, changes: dict) -> None:
        """Change the camera (CameraConfig fields) until the next reset, or nothing if a value is wrong."""
        self.sim.camera.reconfigure(**changes)

    def step(self, command: str, values: np.ndarray, steps: int, until_reached: bool = False) -> Observation:
        """`until_reached`: `steps` is a bound; stop after the first step that leaves the arm at its
        targets (FrankaArm.target_reached), as the ROS backend's lock-step request does."""
        arm = self.sim.arm
        if command == "position":
            arm.set_position_targets(values)
        elif command == "velocity":
            arm.set_velocity_targets(values)
        else:
            arm.set_position_targets(arm.delta_targets(values))
        if until_reached:
            for _ in range(steps):
                self.sim.world.step()
                if arm.target_reached():
                    break
        else:
            self.sim.world.step(steps)
        return self.observe(self.task.update().as_dict())

    def observe(self, status: dict) -> Observation:
        position, velocity, _ = self.sim.arm.joint_states()
        ee_position, ee_orientation = self.sim.arm.ee_pose()
        frame = self.sim.camera.render(segmentation=self.segmentation) if self.images else None
        return Observation(position, velocity, ee_position, ee_orientation, status, self.sim.world.time,
                           rgb=frame.rgb if frame else None, depth=frame.depth if frame else None,
                           segmentation=self._labels(frame),
                           objects=self._read_later(self.sim.object_views, "object_views"),
                           privileged=self._read_later(lambda: privileged_state(self.sim), "privileged_state"))

    def _labels(self, frame) -> np.ndarray | None:
        """The frame's body ids as the camera node publishes them on camera/segmentation/image_raw."""
        if frame is None or frame.segmentation is None:
            return None
        from ..cell.vision.labels import label_image

        return label_image(self.sim, frame.segmentation)

    def _read_later(self, reader: Callable, name: str) -> Callable:
        """What reads the objects later, as they are now: refused once the world has moved on (only the
        latest observation's objects can be read from the world as it was)."""
        world, scene = self.sim.world, self.sim.scene
        seen = (world.step_count, scene.episode)

        def read():
            if (world.step_count, scene.episode) != seen:
                raise read_too_late(name)
            return reader()
        return read

    def close(self) -> None:
        self.sim.close()


class RosBackend:
    """A private `sim` process in lock-step mode, in a namespace of its own, driven over its topics.

    One env step is one request on `task/step` (the command and the number of physics steps) and one
    reply on `task/observation` (JSON: the task's report and the state observed after the steps); in
    image mode the camera's images stamped at that time come with it. If the process dies, every call
    raises SimProcessDied at once (within one pass of the wait loop), naming its exit status and the
    last lines of its log.
    """

    _count = itertools.count()
    TIMEOUT = TIMEOUT
    RESEND = 5.0  # s: a parameter or reset request without a reply goes out again

    def __init__(self, config: Config, images: bool, gui: bool = False, namespace: str | None = None,
                 sim_parameters: dict | None = None, privileged: bool = False, segmentation: bool = False,
                 step_channel: bool = False):
        """`sim_parameters`: more `-p name:=value` for the sim process (`node:name` for one node), e.g.
        {"executor": "single"} to compare executors. `privileged`: the task node sends the objects' and
        bins' state with every reply (its parameter `privileged`); without it `privileged_state()` is
        refused, and a plain state or image env pays nothing for it. `segmentation`: also wait for the
        camera's segmentation image of each step (the camera node renders it only while it is watched).
        `step_channel`: exchange each step with the sim process over a socket pair of their own instead of
        task/step and task/observation, and take its frames there too (nodes/common/step_channel.py: faster;
        the step exchange and the env's frames are then not on a topic, though the camera still publishes
        to anybody else who watches). ForkedAfterRos in a process forked
        after its parent started ROS (it would hang)."""
        if _forked_from_ros is not None:
            raise ForkedAfterRos(
                f"this process was forked from process {_forked_from_ros} after that one had started ROS, and "
                "ROS (DDS) cannot run in such a child: it would hang. Start env processes with 'forkserver' or "
                "'spawn', e.g. gym.make_vec(..., vectorization_mode='async', vector_kwargs={'context': "
                "'forkserver'}), from a script whose top level is under `if __name__ == '__main__':`")
        # ROS imported before anything starts: where it is missing, this fails with no sim process left behind
        import rclpy.experimental  # noqa: F401
        import std_msgs.msg  # noqa: F401

        self.images = images
        self.segmentation = bool(segmentation and images)
        self.configured_camera = dataclasses.asdict(config.camera)  # what a reset restores (set_camera)
        self.namespace = namespace or f"/binpick_env_{os.getpid()}_{next(self._count)}"
        self.folder = tempfile.TemporaryDirectory(prefix="binpick_env_")
        self.privileged = bool(privileged)
        self._start_sim(config, images, gui, sim_parameters, step_channel)
        self._start_client(images, step_channel)
        # Set at run time: rcl's `-p node:name` overrides miss a node in a namespace. The objects' list is
        # left out of the replies until object_views() asks for it (`_objects_later`): a quarter of the
        # task node's reply stage (0.325 -> 0.245 ms, bench.profile_ros; issue 33), which a learner never reads.
        from rclpy.parameter import Parameter

        self.objects_sent = False
        self.reset_ids = itertools.count(1)  # world/reset's reset_id: this backend's sim process is its own
        self._set_node_parameters("task", [Parameter("objects", value=False)] +
                                  [Parameter("privileged", value=True)] * self.privileged)

    def _start_sim(self, config: Config, images: bool, gui: bool, sim_parameters: dict | None,
                   step_channel: bool) -> None:
        """The private `sim` process in lock-step, on the scene file written from `config`, with its
        environment: the step channel's end, and a Fast DDS profile for large frames."""
        from ..nodes.common import step_channel as channels
        from ..nodes.common.dds import PROFILE_VARIABLE, frame_profile
        from ..nodes.process.spawn import SimProcess

        scene = save_config(config, Path(self.folder.name) / "scene.yaml")
        environ = dict(os.environ)  # the sim's: with the step channel's end, a profile for large frames
        # (rgb + depth, and the labels: nodes/common/dds.py frame_profile says why)
        frame = config.camera.width * config.camera.height * (3 + 4 + 4 * self.segmentation)
        if images and (profile := frame_profile(Path(self.folder.name), frame, environ)) is not None:
            environ[PROFILE_VARIABLE] = str(profile)
        self.channel, theirs = channels.pair() if step_channel else (None, None)
        if theirs is not None:
            environ[channels.VARIABLE] = str(theirs)
            if images:
                environ[channels.FRAMES_VARIABLE] = "rgbd+segmentation" if self.segmentation else "rgbd"
        try:
            self.process = SimProcess({"config": scene, "lockstep": True, "task": True, "camera": images, "gui": gui,
                                       "arm:velocity_timeout": 0.0, **(sim_parameters or {})},
                                      log=Path(self.folder.name) / "sim.log", namespace=self.namespace,
                                      env=environ,
                                      pass_fds=() if theirs is None else (theirs,))
        finally:
            if theirs is not None:
                os.close(theirs)  # the child's now

    def _start_client(self, images: bool, step_channel: bool) -> None:
        """This process's ROS client of the sim (its own context), waited for until the sim's step
        subscription and the topics it reads are matched."""
        global _ros_started_in
        import rclpy
        from rclpy.context import Context
        from rclpy.experimental import EventsExecutor
        from std_msgs.msg import Float64MultiArray, String

        from ..nodes.clients.client import TOPICS, SimClient
        from ..nodes.common.dds import client_profile
        from ..nodes.common.wire import OBSERVATION_TOPIC, STEP_COMMANDS, STEP_TOPIC

        topics = {} if step_channel else {OBSERVATION_TOPIC: String}
        if images and not step_channel:
            topics.update({t: TOPICS[t] for t in ("camera/image_raw", "camera/depth/image_raw")})
        if self.segmentation and not step_channel:
            from sensor_msgs.msg import Image

            topics[SEGMENTATION_TOPIC] = Image
        self.context = Context()
        _ros_started_in = os.getpid()
        with client_profile():  # if this is the process's first participant: it announces itself often (dds.py)
            rclpy.init(context=self.context)
            self.client = SimClient("gym_env", namespace=self.namespace, context=self.context, topics=topics,
                                    executor=EventsExecutor)
        self.client.watchdog = self._watch
        self.observation_topic = OBSERVATION_TOPIC
        self._parameter_clients: dict = {}  # by node name (_parameter_client)
        self.requester = self.client.node.create_publisher(Float64MultiArray, STEP_TOPIC, 10)
        # One request message, refilled for every step (publish serializes it at once): a new one per step
        # cost its layout and its checks again, ~4 us of the client's own work (issue 33).
        self.request_msg, self.codes = Float64MultiArray(), {name: i for i, name in enumerate(STEP_COMMANDS)}
        self.request = 0
        self.client.spin_until(lambda: (step_channel or self.requester.get_subscription_count() > 0) and all(
            s.get_publisher_count() > 0 for s in self.client.subscriptions.values()),
            self.TIMEOUT, f"the sim process in {self.namespace}")

    def reset(self, seed: int | None, keep_object_type: bool) -> Observation:
        from rclpy.parameter import Parameter

        # a new reset_id each reset: the world answers a copy of this request without resetting again, so it
        # can go out again (RESEND) if the first is lost, as a parameter request can
        parameters = [Parameter("keep_object_type", value=bool(keep_object_type)),
                      Parameter("reset_id", value=next(self.reset_ids))]
        if seed is not None:
            parameters.append(Parameter("seed", value=int(seed)))
        self._set_node_parameters("world", parameters)
        if getattr(self, "camera_changed", False):  # changed at run time: the scene file's camera again
            try:
                self.set_camera(self.configured_camera)
            except ValueError:  # the node checks each value against the others as they are (near < far):
                self.set_camera(self.configured_camera)  # a second pass finds the first one's values set
        answer = self.client.call("world/reset", timeout=self.TIMEOUT, resend=self.RESEND)
        if not answer.success:
            raise RuntimeError(f"world/reset failed: {answer.message}")
        # The first exchange may race discovery (the sim's writers matching this client's readers, the
        # camera rendering only for readers it knows): asking again for nothing is harmless.
        deadline = time.monotonic() + self.TIMEOUT
        while True:
            try:
                return self._exchange("none", [], 0, timeout=RETRY)
            except TimeoutError:
                if time.monotonic() > deadline:
                    raise

    def step(self, command: str, values: np.ndarray, steps: int, until_reached: bool = False) -> Observation:
        return self._exchange(command + UNTIL_REACHED * until_reached, values, steps)

    def _exchange(self, command: str, values, steps: int, timeout: float = TIMEOUT) -> Observation:
        """Send one task/step request and wait for its reply (and, in image mode, its images)."""
        self.request += 1
        request = self.request
        data = array.array("d", [request, self.codes[command], steps, *map(float, values)])
        waited_for = f"the observation after {steps} steps"
        if self.channel is not None:
            self._on_channel(lambda: self.channel.send(data))
            reply = self._channel_receive(lambda m: m.get("request", -1) >= request, timeout, waited_for)
        else:
            self.request_msg.data = data
            self.requester.publish(self.request_msg)
            self.client.spin_until(lambda: self._reply().get("request", 0) >= request, timeout, waited_for)
            reply = self._reply()
        if not reply["taken"]:
            raise ValueError(f"the arm node rejected the {command} command {list(values)} (see its log)")
        stamp = reply["stamp"]
        frame = self._frame(stamp, timeout) if self.images else {}
        status = {k: v for k, v in reply.items() if k not in OBSERVED}
        return Observation(np.array(reply["joint_positions"]), np.array(reply["joint_velocities"]),
                           np.array(reply["ee_position"]), np.array(reply["ee_orientation"]), status, stamp,
                           rgb=frame.get("rgb"), depth=frame.get("depth"), segmentation=frame.get("segmentation"),
                           objects=([self._object(*o) for o in reply["objects"]] if "objects" in reply
                                    else self._objects_later(request)),
                           privileged=reply["privileged"] if "privileged" in reply else _not_asked)

    def _frame(self, stamp: float, timeout: float) -> dict[str, np.ndarray]:
        """The camera's frame of the state at `stamp` (rgb, depth and, if asked, segmentation): from the step
        channel, or the camera's topics."""
        if self.channel is not None:
            return self._channel_receive(lambda m: m.get("frame", -1.0) >= stamp - 1e-9, timeout,
                                         f"the camera's frame stamped {stamp:.3f} s")["arrays"]
        for topic in ("camera/image_raw", "camera/depth/image_raw") + (SEGMENTATION_TOPIC,) * self.segmentation:
            self.client.wait_for_stamp(topic, stamp, timeout=timeout)
        return {"rgb": self.client.rgb(), "depth": self.client.depth(),
                **({"segmentation": self._segmentation()} if self.segmentation else {})}

    def _channel_receive(self, wanted: Callable[[dict], bool], timeout: float, waited_for: str) -> dict:
        """The step channel's next message that is `wanted` (replies and frames of earlier requests, whose wait
        timed out, are passed over); SimProcessDied within a POLL if the sim process dies meanwhile."""
        def receive() -> dict:
            deadline = time.monotonic() + timeout
            while True:
                while not self.channel.ready(min(POLL, max(deadline - time.monotonic(), 0.0))):
                    self.process.check_alive()
                    if time.monotonic() >= deadline:
                        raise TimeoutError(f"waited {timeout:.0f} s for {waited_for}")
                if wanted(message := self.channel.receive()):
                    return message
        return self._on_channel(receive)

    def _on_channel(self, exchange: Callable[[], T]) -> T:
        """`exchange` with the step channel; its end (EOFError, OSError) is the sim's: SimProcessDied if the
        process has died, else a RuntimeError."""
        try:
            return exchange()
        except (EOFError, OSError):  # the sim closed its end: it is ending (or has ended)
            try:
                self.process.process.wait(POLL)
            except subprocess.TimeoutExpired:
                pass
            self.process.check_alive()
            raise RuntimeError(f"the sim process in {self.namespace} closed the step channel") from None

    def _watch(self) -> None:
        """Each pass of a wait on ROS (a service, parameters, a topic): SimProcessDied if the sim has died, and the
        step channel drained, as nothing on it is awaited then: what it holds is the reply and frame of a step
        whose wait ended (a timeout). The sim takes no request while its output waits unread, and drops a
        channel left unread for step_channel.STALL seconds."""
        self.process.check_alive()
        if self.channel is not None:
            self._on_channel(self._drop_unread)

    def _drop_unread(self) -> None:
        while self.channel.ready(0):
            self.channel.receive()

    def _objects_later(self, request: int) -> Callable[[], list[ObjectView]]:
        """The objects of the observation that answered `request`, which came without them: the task node
        is told to send them with every reply from now on, and a request of no physics steps brings them
        for the world as it still is (the task's rules run again on an unchanged world: what they removed is
        gone already). Refused once the world has moved on, as the direct backend's."""
        def read() -> list[ObjectView]:
            if self.request != request:
                raise read_too_late("object_views")
            if not self.objects_sent:
                from rclpy.parameter import Parameter

                self._set_node_parameters("task", [Parameter("objects", value=True)])
                self.objects_sent = True
            return self._exchange("none", [], 0).object_views()
        return read

    def _segmentation(self) -> np.ndarray:
        return self.client.bridge.imgmsg_to_cv2(self.client.latest[SEGMENTATION_TOPIC], desired_encoding="32SC1")

    def _reply(self) -> dict:
        msg = self.client.latest.get(self.observation_topic)
        if msg is None:
            return {}
        if getattr(self, "_parsed", (None,))[0] is not msg:
            self._parsed = (msg, json.loads(msg.data))
        return self._parsed[1]

    def _object(self, name: str, position, orientation, kind: str, size, mesh: str) -> ObjectView:
        vertices = cached_vertices(Geometry(kind, tuple(size), mesh))  # as BinPickingSim.object_views has them
        return ObjectView(name, np.array(position), np.array(orientation), vertices)

    def set_camera(self, changes: dict) -> None:
        """Change the camera node's parameters (CameraConfig fields) until the next reset; ValueError if the
        node refuses one (it checks each as it comes: the ones before it may have changed, and the next
        reset restores them all)."""
        from rclpy.parameter import Parameter

        values = {k: (list(map(float, v)) if isinstance(v, (tuple, list)) else v) for k, v in changes.items()}
        self.camera_changed = True  # even if refused halfway: the next reset restores every value
        self._set_node_parameters("camera", [Parameter(k, value=v) for k, v in values.items()])
        self.camera_changed = changes != self.configured_camera

    def _set_node_parameters(self, node: str, parameters) -> None:
        """Set `parameters` on `node` of the sim (ValueError naming what it refused). The request goes out again
        every RESEND seconds until a reply comes (or TIMEOUT): one sent as the service has just been discovered
        can be lost for good, when the server has not yet matched the reader of our reply (Fast DDS then drops
        the reply; seen once in CI as a reset that waited 120 s). Setting the same values twice is harmless."""
        from ..nodes.clients.client import answered

        client = self._parameter_client(node)
        self.client.spin_until(client.services_are_ready, self.TIMEOUT, f"the {node}'s parameter services")
        result = answered(lambda: client.set_parameters(parameters), self.client.spin_until, self.TIMEOUT,
                          self.RESEND, f"the {node}'s parameters")
        failed = [r.reason for r in result.results if not r.successful]
        if failed:
            raise ValueError(f"{node} refused the parameters: {'; '.join(failed)}")

    def _parameter_client(self, node: str):
        """The parameter client of the sim's `node`, made once: each makes six service clients, which rclpy
        keeps until the node goes, and which the sim must discover again (a new client per reset grew this
        process by six clients a reset and cost each reset that discovery)."""
        from rclpy.parameter_client import AsyncParameterClient

        if node not in self._parameter_clients:
            self._parameter_clients[node] = AsyncParameterClient(self.client.node, node)
        return self._parameter_clients[node]

    def close(self) -> None:
        import rclpy

        if self.channel is not None:
            self.channel.close()
        self.client.close()
        rclpy.try_shutdown(context=self.context)
        self.process.stop()
        self.folder.cleanup()


def read_too_late(name: str) -> RuntimeError:
    """Both backends' refusal of an older observation's objects (only the latest can be read as it was)."""
    return RuntimeError(f"these objects were not read while the world was as observed: ask {name}() before the "
                        "next step or reset")


def _not_asked() -> dict:
    raise RuntimeError("this ROS backend was made without the privileged state (RosBackend(privileged=True): "
                       "an env with observation 'privileged' / 'state_dict' or reward_type 'dense' asks for it)")


OBSERVED = ("request", "taken", "joint_positions", "joint_velocities", "ee_position", "ee_orientation", "objects",
            "privileged")


def make_backend(name: str, config: Config, images: bool, gui: bool = False, privileged: bool = False,
                 segmentation: bool = False, first_seed: int | None = None, **options):
    """`privileged`: whether the env reads the privileged state (the direct backend reads it lazily anyway);
    `segmentation`: whether each observation holds the camera's segmentation labels too. `first_seed`: the
    seed of the reset the backend is made for (an env's first): the simulation starts on that seed's layout
    instead of the scene file's, and the reset finds it remembered (cell/layouts.py) instead of settling a
    second new layout (~40 ms of an env's first reset, on either backend). The episode is the same either way
    (test/envs/test_reproducibility.py: a fresh process's first episode against the same seed's later)."""
    if first_seed is not None:
        config = with_changes(config, simulation={"seed": first_seed})
    if name == "direct":
        backend = DirectBackend(config, images, gui)
        backend.segmentation = bool(segmentation and images)
        return backend
    if name == "ros":
        return RosBackend(config, images, gui, privileged=privileged, segmentation=segmentation, **options)
    raise ValueError(f"backend must be 'direct' or 'ros', got {name!r}")
