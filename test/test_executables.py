"""The executables as a user starts them: `sim` serves until Ctrl-C or SIGTERM, a bad scene file is
refused at start-up with the key named, and the demo picks an object."""
import signal
import subprocess
import sys
import time

import pytest
import yaml

from binpick_sim.nodes.client import TOPICS, SimClient
from binpick_sim.nodes.spawn import SimProcess
from binpick_sim.paths import default_config


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_sim_serves_and_stops_cleanly(ros_context, tmp_path, sig):
    sim = SimProcess({"realtime_factor": 0.0, "camera": False}, log=tmp_path / "sim.log")
    client = SimClient("probe", context=ros_context, topics={"joint_states": TOPICS["joint_states"]})
    try:
        client.wait_for_topics(["joint_states"], timeout=60)
        assert client.call("world/reset").success
    finally:
        client.close()
        sim.process.send_signal(sig)
        start = time.monotonic()
        code = sim.process.wait(10)
        stopped_in = time.monotonic() - start
        sim.stop()
    assert code == 0, (tmp_path / "sim.log").read_text()
    assert stopped_in < 2.0


def test_bad_scene_file_is_refused_naming_the_key(tmp_path):
    data = yaml.safe_load(default_config().read_text())
    data["scene"]["pick_bin"]["size"] = "large"
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(data))
    result = subprocess.run([sys.executable, "-m", "binpick_sim.nodes.stack", "--ros-args", "-p", f"config:={bad}"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert f"{bad}: scene.pick_bin.size: expected a list" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_demo_picks_an_object_and_saves_images(tmp_path):
    result = subprocess.run([sys.executable, "-m", "binpick_sim.demo", "--seed", "0", "--out", str(tmp_path)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "demo succeeded" in result.stdout
    for name in ("rgb.png", "depth.png"):
        assert (tmp_path / name).stat().st_size > 10_000
