"""`record` given what a user gets wrong (issue 53, item 7): names that are no topic names, and a disk that
fills up mid-bag, each end in one line (Ctrl-C and SIGTERM mid-bag: nodes/test_mcap_recording.py).
"""
from __future__ import annotations

import os
import resource
import subprocess
import sys
import time

import pytest

RECORD = [sys.executable, "-m", "binpick_sim.recording"]


@pytest.fixture(autouse=True)
def rosbags():
    """(A skip in each test, not at the module's top: launch_testing's pytest plugin imports every file of the
    folder when it collects, and a module-level skip there skips the whole folder.)"""
    pytest.importorskip("rosbags", reason="needs rosbags (requirements-datasets.txt, installed by make test)")


@pytest.mark.parametrize("topic, says", [
    ("a b", "must not contain characters other than alphanumerics"),
    ("//x", "must not contain repeated '/'"),
    ("1abc", "must not start with a number"),
    ("x" * 5000, "topic length should not exceed"),
    ("{y}", "unknown substitution"),
], ids=["space", "double slash", "digit first", "5000 characters", "substitution"])
def test_a_name_that_is_no_topic_name_is_refused_in_one_line_and_nothing_is_written(tmp_path, topic, says):
    result = subprocess.run(RECORD + ["--out", str(tmp_path / "bag"), "--topics", topic, "--duration", "1"],
                            capture_output=True, text=True, timeout=60)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and lines[0].startswith("record: error: ") and "is not a topic name" in lines[0] \
        and says in lines[0], result.stderr
    assert not (tmp_path / "bag").exists()


def test_a_disk_that_fills_up_mid_bag_ends_the_recording_in_one_line_keeping_what_was_written(ros_context,
                                                                                             tmp_path):
    """The file size limit (RLIMIT_FSIZE; Python ignores SIGXFSZ, so a write past it fails with EFBIG) stands in
    for a full disk: the first write that fails ends the recording at once, exit 1, naming the bag and what it
    holds. Before: a traceback from the recording thread, then another from closing the bag."""
    import rclpy
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import Image

    node = rclpy.create_node("filler", context=ros_context)
    images, clock = node.create_publisher(Image, "filler/image", 10), node.create_publisher(Clock, "/clock", 10)
    frame = Image(height=512, width=512, encoding="rgb8", step=1536, data=bytes(512 * 512 * 3))
    limit = 3_000_000

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    out = tmp_path / "bag"
    record = subprocess.Popen(RECORD + ["--out", str(out), "--topics", "filler/image", "/clock", "--duration", "60"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=small_files,
                              env=os.environ)
    try:
        tick = Clock()
        deadline = time.monotonic() + 60
        while record.poll() is None and time.monotonic() < deadline:
            tick.clock.sec += 1
            clock.publish(tick)
            images.publish(frame)
            time.sleep(0.02)
        assert record.poll() is not None, "record went on past a full disk"
        stdout, stderr = record.communicate(timeout=10)
        lines = [line for line in stderr.splitlines() if line.strip()]
        assert record.returncode == 1, stderr
        assert len(lines) == 1 and lines[0].startswith(f"record: error: writing {out} failed (File too large)"), stderr
        assert "/filler/image" in lines[0]
        assert (out / "bag.mcap").stat().st_size <= limit
    finally:
        if record.poll() is None:
            record.kill()
            record.wait()
        node.destroy_node()
