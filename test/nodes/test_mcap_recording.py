"""rosbag2 MCAP recording (binpick_sim.recording), read back with the independent `rosbags` Reader."""
from __future__ import annotations

import importlib.util
import time

import numpy as np
import pytest

# A marker, not a module-level skip: launch_testing's pytest plugin imports every test file at collection,
# and a skip raised there skips the whole folder (all of `colcon test` where rosbags is not installed).
pytestmark = [pytest.mark.skipif(importlib.util.find_spec("rosbags") is None,
                                 reason="needs rosbags (requirements-datasets.txt, installed by make test)"),
              # an exception in the recorder's thread fails the test, not a warning at the end of the run: one
              # was rclpy's Executor.shutdown destroying its guard condition under the spinning thread
              pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")]


def recorded_topics():
    from binpick_sim.recording import DEFAULT_TOPICS

    return [*DEFAULT_TOPICS, "test/latched"]  # the defaults, and a latched topic of the test's own


@pytest.mark.serial
def test_a_recording_reads_back_with_sim_time_stamps_and_latched_qos(stack, ros_context, tmp_path):
    from rosbags.interfaces import QosDurability
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import Stores, get_typestore

    from binpick_sim.recording import Recorder

    import rclpy
    from rclpy.qos import DurabilityPolicy, QoSProfile
    from std_msgs.msg import String

    # a latched topic (as the arm's commands_received is), published once before the recorder starts
    publisher_node = rclpy.create_node("latched_publisher", context=ros_context)
    publisher_node.create_publisher(String, "test/latched", QoSProfile(
        depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)).publish(String(data="before"))
    bag = tmp_path / "bag"
    try:
        with Recorder(bag, recorded_topics(), context=ros_context) as recorder:
            time.sleep(2.0)
    finally:
        publisher_node.destroy_node()
    assert (bag / "metadata.yaml").is_file() and list(bag.glob("*.mcap"))
    typestore = get_typestore(Stores.ROS2_JAZZY)
    with Reader(bag) as reader:
        topics = {c.topic: c for c in reader.connections}
        assert set(topics) == {"/joint_states", "/clock", "/world/objects", "/camera/image_raw",
                               "/camera/camera_info", "/diagnostics", "/test/latched"}
        assert topics["/joint_states"].msgtype == "sensor_msgs/msg/JointState"
        assert topics["/diagnostics"].msgtype == "diagnostic_msgs/msg/DiagnosticArray"
        durability = {t: c.ext.offered_qos_profiles[0].durability for t, c in topics.items()}
        assert durability["/test/latched"] == QosDurability.TRANSIENT_LOCAL
        assert durability["/joint_states"] == QosDurability.VOLATILE
        counts = {t: c.msgcount for t, c in topics.items()}
        assert counts["/clock"] > 10 and counts["/joint_states"] > 10 and counts["/world/objects"] > 0
        assert counts["/test/latched"] == 1  # published before the recorder started: heard all the same
        assert counts == {t: recorder.counts[t] for t in counts}
        assert counts["/camera/image_raw"] > 0 and counts["/camera/camera_info"] > 0
        clocks, joints, images = [], [], []
        for connection, stamp, data in reader.messages():
            message = typestore.deserialize_cdr(data, connection.msgtype)
            if connection.topic == "/clock":
                clocks.append((stamp, message.clock.sec * 10**9 + message.clock.nanosec))
            elif connection.topic == "/camera/image_raw":
                images.append(message)
            elif connection.topic == "/joint_states":
                joints.append((stamp, message.header.stamp.sec * 10**9 + message.header.stamp.nanosec))
    # the bag's stamps are the sim's clock, not the wall clock: each /clock message at its own value
    assert all(stamp == value for stamp, value in clocks)
    assert clocks[-1][1] < 10**12 < time.time_ns()  # sim time starts at 0, far from the epoch
    assert np.all(np.diff([s for s, _ in clocks]) > 0)
    # every other message is stamped with the latest /clock heard (as `ros2 bag record --use-sim-time`
    # stamps by receive time on the sim's clock): one of the recorded clock values, near its own header
    # stamp (DDS keeps no order between topics, so either may come first)
    for image in images:  # the image bytes as published: a whole rgb8 frame each
        assert image.encoding == "rgb8" and len(image.data) == image.height * image.step == image.height * image.width * 3
        assert np.asarray(image.data).std() > 0  # a rendered scene, not a blank buffer
    values = {value for _, value in clocks}
    assert all(stamp in values for stamp, _ in joints)
    assert np.corrcoef([s for s, _ in joints], [h for _, h in joints])[0, 1] > 0.99


def test_a_topic_that_never_appears_is_named_and_nothing_is_written(ros_context, tmp_path):
    from binpick_sim.recording import Recorder

    with pytest.raises(TimeoutError, match="/no_such_topic"):
        with Recorder(tmp_path / "bag", ["no_such_topic"], context=ros_context, discovery_timeout=1.0):
            pass
    assert not (tmp_path / "bag").exists()


@pytest.mark.parametrize("signal_name, pause", [("SIGINT", 2.0), ("SIGINT", 0.0), ("SIGTERM", 0.0)])
def test_record_executable_stops_on_ctrl_c_and_leaves_a_whole_bag(stack, tmp_path, signal_name, pause):
    """The user's path: `record` in a process of its own, on the sim's domain, until SIGINT (or SIGTERM). With no
    pause the signal lands while it still subscribes (the bag file exists from the writer's open on): it used to
    raise there, leave the executor thread spinning in a shut-down context and hang on its way out."""
    import os
    import shutil
    import signal
    import subprocess
    import sys
    from pathlib import Path

    from rosbags.rosbag2 import Reader

    bag = tmp_path / "bag"
    record = shutil.which("record", path=str(Path(sys.executable).parent)) or "record"
    process = subprocess.Popen([record, "--out", str(bag), "--topics", "/clock", "joint_states"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy())
    try:
        deadline = time.monotonic() + 60
        while not list(bag.glob("*.mcap")) and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.2)
        time.sleep(pause)
        process.send_signal(getattr(signal, signal_name))
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err
    assert "/clock" in out and (bag / "metadata.yaml").is_file()
    with Reader(bag) as reader:  # a whole bag; with messages when it had the time to hear some
        assert {c.topic: c.msgcount > 0 or not pause for c in reader.connections} == {"/clock": True,
                                                                                       "/joint_states": True}


@pytest.mark.slow  # ~8 s on the shared 2 cores: a stack of its own (its camera 40 x 30), as the other tests here
def test_recorded_images_are_the_live_topics_frames_byte_for_byte(ros_context, tmp_path):
    """Each image in the bag is a frame a live subscriber received: same header stamp, same bytes (a small
    40 x 30 camera keeps the rendering cheap)."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import Stores, get_typestore
    from sensor_msgs.msg import Image

    from binpick_sim.nodes.process.stack import SimStack
    from binpick_sim.recording import Recorder

    from helpers import parameters

    live = {}
    with SimStack(ros_context, {"world": parameters(realtime_factor=0.0),
                                "camera": parameters(width=40, height=30)}):
        watcher = rclpy.create_node("live_images", context=ros_context)
        watcher.create_subscription(Image, "camera/image_raw", lambda m: live.setdefault(
            (m.header.stamp.sec, m.header.stamp.nanosec), bytes(m.data)), 50)
        executor = SingleThreadedExecutor(context=ros_context)
        executor.add_node(watcher)
        try:
            with Recorder(tmp_path / "bag", ["camera/image_raw", "/clock"], context=ros_context):
                deadline = time.monotonic() + 30
                while len(live) < 8 and time.monotonic() < deadline:
                    executor.spin_once(timeout_sec=0.1)
                time.sleep(0.5)
            for _ in range(20):  # frames still in flight to the watcher
                executor.spin_once(timeout_sec=0.05)
        finally:
            executor.shutdown()
            watcher.destroy_node()
    typestore = get_typestore(Stores.ROS2_JAZZY)
    recorded = {}
    with Reader(tmp_path / "bag") as reader:
        for connection, _, data in reader.messages(connections=[c for c in reader.connections
                                                                if c.topic == "/camera/image_raw"]):
            message = typestore.deserialize_cdr(data, connection.msgtype)
            assert (message.width, message.height, message.encoding) == (40, 30, "rgb8")
            recorded[(message.header.stamp.sec, message.header.stamp.nanosec)] = message.data.tobytes()
    common = set(recorded) & set(live)
    assert len(common) >= 5, (len(recorded), len(live))
    assert all(recorded[stamp] == live[stamp] for stamp in common)
    assert all(np.frombuffer(recorded[stamp], np.uint8).std() > 0 for stamp in common)  # rendered, not blank
