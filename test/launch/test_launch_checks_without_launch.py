"""The launch_testing checks without launch: the same `sim` executable with the parameters
sim.launch.py gives it, in the same namespace, and the description executable robot_state_publisher
would be fed from."""
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from urdf_parser_py.urdf import URDF

from binpick_sim.nodes.process.spawn import SimProcess

from launch_checks import CHECKS, LAUNCH_PARAMETERS, NAMESPACE, make_client


@pytest.fixture(scope="module")
def launched(tmp_path_factory):
    import rclpy
    from rclpy.context import Context

    context = Context()
    rclpy.init(context=context)
    sim = SimProcess(LAUNCH_PARAMETERS, log=tmp_path_factory.mktemp("twin") / "sim.log", namespace=NAMESPACE)
    client = make_client(context)
    yield client
    client.close()
    sim.stop()
    rclpy.try_shutdown(context=context)


@pytest.mark.parametrize("check", CHECKS, ids=[c.__name__ for c in CHECKS])
def test_launched_simulation(launched, check):
    check(launched)


def test_the_description_robot_state_publisher_gets():
    """Only the URDF, on stdout: launch's Command substitution fails on any stderr output."""
    result = subprocess.run([sys.executable, "-m", "binpick_sim.description"], capture_output=True, text=True,
                            check=True, timeout=60)
    assert result.stderr == ""
    robot = URDF.from_xml_string(result.stdout.encode())
    assert {"world", "panda_link0", "scene", "camera_optical_frame"} <= set(robot.link_map)


@pytest.mark.parametrize("config", ["/nonexistent.yaml", "bad"])
def test_a_bad_scene_file_gives_the_description_one_line_and_exit_2(tmp_path, config):
    if config == "bad":
        config = tmp_path / "bad.yaml"
        config.write_text("simulation: {timestep: fast}\n")
    result = subprocess.run([sys.executable, "-m", "binpick_sim.description", "--config", str(config)],
                            capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout) == (2, "")
    assert len(result.stderr.splitlines()) == 1 and str(config) in result.stderr, result.stderr


def test_the_ros2_control_block_follows_the_namespace():
    def topics(*args):
        urdf = subprocess.run([sys.executable, "-m", "binpick_sim.description", "--ros2-control", *args],
                              capture_output=True, text=True, check=True, timeout=60).stdout
        return {p.get("name"): p.text for p in ET.fromstring(urdf).iter("param") if p.get("name").endswith("_topic")}

    assert topics() == {"joint_commands_topic": "/arm/joint_commands", "joint_states_topic": "/binpick/joint_states"}
    assert topics("--ros-args", "-r", "__ns:=/cell1") == topics("--namespace", "cell1") == {
        "joint_commands_topic": "/cell1/arm/joint_commands", "joint_states_topic": "/cell1/binpick/joint_states"}


def test_the_readme_lists_every_launch_argument():
    from binpick_sim.paths import share_dir

    declared = re.findall(r'^\s+\("(\w+)", ', (share_dir() / "launch" / "sim.launch.py").read_text(), re.M)
    import manual

    text = manual.section("Launch, RViz and the robot description")
    table = text[text.index("| argument | default | meaning |"):]
    table = table[:table.index("\n\n")]
    assert re.findall(r"^\| `(\w+)` \|", table, re.M) == declared
