"""Record named ROS topics as a rosbag2 MCAP folder (`metadata.yaml` + `.mcap`) from Python alone.

Why `rosbags` (pure Python, Jazzy typestore) rather than `rosbag2_py`: the ROS wheels this package runs
on ship no rosbag2 storage plugins, and the bag must open in `ros2 bag info/play` and Foxglove all the
same: rosbags writes rosbag2's own layout (version 9 metadata, MCAP storage with the message
definitions as schemas, the offered QoS of each topic).

How: one node subscribes to each topic as raw CDR bytes (no deserialising, the bytes as published),
with the publishers' durability (transient_local, "latched", where every publisher offers it, so the
latched value recorded even when it was published before the recorder started). Each message is
stamped with the simulation time: the latest `/clock` the recorder has heard (messages before the
first `/clock` get that first value), so a bag of a sim that runs faster or slower than real time
plays back on the sim's own time line.

Tools layer: nothing in binpick_sim's core, nodes or envs imports this module.
"""
from __future__ import annotations

import importlib
import threading
import time
from pathlib import Path

from .extras import MissingExtra, require

SPIN_POLL = 0.1  # s: how soon the recording thread sees that the recording ends
DEFAULT_TOPICS = ("joint_states", "/clock", "camera/image_raw", "camera/camera_info", "world/objects",
                  "/diagnostics")


def message_class(type_name: str):
    """The Python class of a ROS interface type named as the graph names it (`sensor_msgs/msg/Image`).
    rosidl_runtime_py's get_message does the same, but it comes with ros2cli, not with rclpy and the message
    wheels that requirements.txt installs (issue 58: `record` failed on every plain machine). ValueError
    naming the topic's type when its package is not installed here."""
    package, kind, name = (type_name.split("/") + ["", "", ""])[:3]
    try:
        return getattr(importlib.import_module(f"{package}.{kind}"), name)
    except (ImportError, AttributeError, ValueError):
        raise ValueError(f"no Python class for the type {type_name!r} here: install its package (a ROS 2 "
                         "install has it) to record its topic") from None


def _qos(transient: bool, depth: int):
    from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime

    zero = QosTime(0, 0)
    return Qos(QosHistory.KEEP_LAST, depth, QosReliability.RELIABLE,
               QosDurability.TRANSIENT_LOCAL if transient else QosDurability.VOLATILE,
               zero, zero, QosLiveliness.AUTOMATIC, zero, False)


class Recorder:
    """`with Recorder(out, topics, context=...) as recorder: ...` records until the block ends."""

    def __init__(self, out: str | Path, topics=DEFAULT_TOPICS, context=None, namespace: str = "",
                 discovery_timeout: float = 15.0, depth: int = 100, on_failure=lambda: None):
        """`on_failure()`: called (from the recording thread) when writing the bag fails; `failed` holds why."""
        out = Path(out)
        if out.exists():
            raise FileExistsError(f"{out} exists: a bag is never overwritten (nothing was recorded)")
        if not topics:
            raise ValueError("name at least one topic")
        self.out, self.topics, self.context = out, list(topics), context
        self.namespace, self.discovery_timeout, self.depth = namespace, discovery_timeout, depth
        self.counts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._clock_ns: int | None = None
        self._pending: list = []
        self.failed: OSError | None = None
        self.on_failure = on_failure

    def __enter__(self):
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from rosbags.rosbag2 import StoragePlugin, Writer
        from rosbags.typesys import Stores, get_typestore
        from rosgraph_msgs.msg import Clock

        self.node = rclpy.create_node("binpick_recorder", namespace=self.namespace or None, context=self.context)
        try:
            names = [self._resolved(t) for t in self.topics]
        except ValueError:
            self.node.destroy_node()
            raise
        types = self._discover(names)
        try:  # before the bag is created: a type that cannot be recorded leaves nothing behind
            classes = {name: message_class(types[name]) for name in names}
        except ValueError:
            self.node.destroy_node()
            raise
        typestore = get_typestore(Stores.ROS2_JAZZY)
        self.writer = Writer(self.out, version=9, storage_plugin=StoragePlugin.MCAP)
        self.writer.open()
        self.node.create_subscription(Clock, "/clock", self._on_clock, QoSProfile(depth=self.depth))
        self._clock_connection = None
        for name in names:
            publishers = self.node.get_publishers_info_by_topic(name)
            transient = bool(publishers) and all(
                p.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL for p in publishers)
            connection = self.writer.add_connection(name, types[name], typestore=typestore,
                                                    offered_qos_profiles=[_qos(transient, self.depth)])
            qos = QoSProfile(depth=self.depth, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL if transient else DurabilityPolicy.VOLATILE)
            self.counts[name] = 0
            if name == "/clock":  # recorded by _on_clock, stamped with its own value
                self._clock_connection = connection
                continue
            self.node.create_subscription(classes[name], name,
                                          lambda data, c=connection: self._on_message(c, data), qos, raw=True)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, name="recorder", daemon=True)
        self._thread.start()
        return self

    def _resolved(self, topic: str) -> str:
        """The topic's full name in the recorder's namespace; ValueError with rcl's reason for one that is no
        topic name (`a b`, `//x`, 300 characters: rcl's RCLError, a traceback in `record`, before)."""
        from rclpy.exceptions import InvalidTopicNameException
        from rclpy.validate_full_topic_name import validate_full_topic_name

        try:
            name = self.node.resolve_topic_name(topic)
            validate_full_topic_name(name)
            return name
        except (InvalidTopicNameException, RuntimeError) as exc:  # (rclpy's RCLError is a RuntimeError)
            reason = str(exc).split(", at /")[0].removeprefix("failed to resolve name: ")
            raise ValueError(f"{topic[:80]!r} is not a topic name: {reason}") from None

    def _spin(self) -> None:
        """The executor's loop, ended by `_stop` rather than by `executor.shutdown` from another thread:
        rclpy's shutdown destroys the executor's guard condition while `spin` may still be about to trigger
        it (InvalidHandle: a traceback in this thread at a stop, when the two meet)."""
        from rclpy.executors import ExternalShutdownException

        try:
            while not self._stop.is_set() and self.node.context.ok():
                self.executor.spin_once(timeout_sec=SPIN_POLL)
        except ExternalShutdownException:  # rclpy shut down meanwhile (Ctrl-C in `record`): nothing more comes
            pass

    def _discover(self, names: list[str]) -> dict[str, str]:
        """Each topic's type from the graph; a clear error naming the ones that never appear."""
        deadline = time.monotonic() + self.discovery_timeout
        while True:
            known = dict(self.node.get_topic_names_and_types())
            missing = [n for n in names if n not in known]
            if not missing:
                return {n: known[n][0] for n in names}
            if time.monotonic() > deadline:
                self.node.destroy_node()
                raise TimeoutError(f"no publisher of {', '.join(missing)} within {self.discovery_timeout:g} s "
                                   "(nothing was recorded)")
            time.sleep(0.1)

    def _on_clock(self, message) -> None:
        with self._lock:
            self._clock_ns = message.clock.sec * 1_000_000_000 + message.clock.nanosec
            if self._clock_connection is not None:
                from rclpy.serialization import serialize_message

                self._write(self._clock_connection, serialize_message(message))
            for connection, data in self._pending:  # heard before the first /clock: stamped with it
                self._write(connection, data)
            self._pending.clear()

    def _on_message(self, connection, data: bytes) -> None:
        with self._lock:
            if self._clock_ns is None:
                self._pending.append((connection, data))
            else:
                self._write(connection, data)

    def _write(self, connection, data: bytes) -> None:
        """One message into the bag; the first write that fails (a full disk) ends the recording: what came
        before stays, nothing after it is tried, and `on_failure` is told."""
        if self.failed is not None:
            return
        try:
            self.writer.write(connection, self._clock_ns, data)
        except OSError as exc:
            self.failed = exc
            self.on_failure()
            return
        self.counts[connection.topic] += 1

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5.0)
        self.executor.shutdown(timeout_sec=5.0)
        self.node.destroy_node()
        with self._lock:
            try:
                self.writer.close()  # writes metadata.yaml with the counts, start time and duration
            except OSError as error:  # no room for the bag's index or metadata.yaml either
                self.failed = self.failed or error


def main(argv: list[str] | None = None) -> int:
    """`record` (or `python -m binpick_sim.recording`) `--out BAG [--topics T ...] [--duration S]`: until Ctrl-C or S seconds."""
    import argparse
    import signal
    import sys

    import rclpy
    from rclpy.signals import SignalHandlerOptions

    parser = argparse.ArgumentParser(prog="record", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="bag folder to create (must not exist)")
    parser.add_argument("--topics", nargs="+", default=list(DEFAULT_TOPICS),
                        help=f"topics, relative names resolved in --namespace (default {' '.join(DEFAULT_TOPICS)})")
    parser.add_argument("--namespace", default="", help="the sim's namespace (default none)")
    parser.add_argument("--duration", type=float, default=None, help="seconds (wall) to record; default until Ctrl-C")
    args = parser.parse_args(argv)
    try:
        require("record", "rosbags")
    except MissingExtra as exc:
        print(f"record: error: {exc}", file=sys.stderr)
        return 2
    # Ctrl-C and SIGTERM only set a flag: a KeyboardInterrupt raised wherever the main thread happens to be
    # (inside Recorder.__enter__, after its executor thread started but before `with` owns it) left that
    # thread spinning in a shut-down context and the process hung on its way out, holding a bag without
    # metadata.yaml. Now the bag is always closed the one way, after the block.
    stop = threading.Event()
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: stop.set())
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    try:
        with Recorder(args.out, args.topics, namespace=args.namespace, on_failure=stop.set) as recorder:
            stop.wait(args.duration)  # None: until a signal (or a write that failed)
        counts = ", ".join(f"{t} {n}" for t, n in recorder.counts.items())
        if recorder.failed is not None:
            whole = (args.out / "metadata.yaml").is_file()
            print(f"record: error: writing {args.out} failed ({recorder.failed.strerror or recorder.failed}); it keeps "
                  f"what came before ({counts}){'' if whole else ', without its index and metadata.yaml'}",
                  file=sys.stderr)
            return 1
        print(f"{args.out}: {counts}")
        return 0
    except (FileExistsError, ValueError, TimeoutError) as exc:
        print(f"record: error: {exc}", file=sys.stderr)
        return 2
    finally:
        rclpy.try_shutdown()


if __name__ == "__main__":
    raise SystemExit(main())
