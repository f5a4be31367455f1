"""The ROS user's path works as written: every `ros2 ...` line of the README's five commands and of the
pages it moved to (doc/ros.md: launch and description; doc/planners.md; doc/testing.md's "Testing on a
ROS install") runs verbatim, each once, in a shell of a freshly
`colcon build`-ed workspace (`ros_env.shell_env()`, what `source install/setup.bash` gives), against
the stack the README starts, and does what the README says. The only change to a line is the README's
placeholder `/path/to/scene.yaml` (or `/path/scene.yaml`), replaced by the package's own scene file.

A README line no check knows fails `test_every_ros2_line_of_the_readme_is_checked`: a new line gets a
check here. Needs the ros2 command and launch (a ROS 2 install; CI installs ../shared/ros-tools).
"""
from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pytest
import yaml

import manual
import ros_env
from binpick_sim.cell.arm.panda import JOINT_NAMES
from binpick_sim.nodes.clients.client import TOPICS, SimClient

# Where the lines are: (section title, page), read through test/manual.py wherever the section sits.
SECTIONS = (("The ROS user's path in five commands", "README.md"), ("The ROS user's path", "ros.md"),
            ("Planners: trajectories, ros2_control and MoveIt", "planners.md"),
            ("Testing on a ROS install", "testing.md"))
PLACEHOLDERS = ("/path/to/scene.yaml", "/path/scene.yaml")
NEEDS = ros_env.missing("ros2cli", "ros2launch", "launch_ros", "ros2param", "ros2service", "ros2topic")
pytestmark = pytest.mark.skipif(NEEDS is not None, reason=str(NEEDS))


def readme_lines() -> list[str]:
    """Every shell line of the sections' bash blocks that runs a ROS tool, continuation lines joined; a
    line the README and a page both give is run once."""
    lines = []
    for title, page in SECTIONS:
        for block in manual.blocks(manual.section(title, page), "bash"):
            for line in block.replace("\\\n", "").splitlines():
                if re.match(r"\s*(ros2|launch_test) ", line) or "&& ros2 " in line or "&& launch_test " in line:
                    if words(line) not in map(words, lines):
                        lines.append(line.strip())
    return lines


def words(line: str) -> str:
    """The line as bash reads it (comments dropped, spaces folded), to match it against the checks."""
    return " ".join(shlex.split(line, comments=True))


def verbatim(line: str) -> str:
    """The line as run: verbatim but for the placeholder scene file."""
    for placeholder in PLACEHOLDERS:
        line = line.replace(placeholder, str(scene_file()))
    return line


def scene_file() -> Path:
    from ament_index_python.packages import get_package_share_directory

    ros_env.prefixes()
    return Path(get_package_share_directory("binpick_sim")) / "config" / "scene.yaml"


# --- running lines as a terminal would ------------------------------------------------------------
def run(line: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    result = subprocess.run(["bash", "-c", verbatim(line)], cwd=cwd, env=ros_env.shell_env(), capture_output=True,
                            text=True, timeout=timeout)
    assert result.returncode == 0, f"{line}\nexit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


class Terminal:
    """A long-running line (a server) in a terminal of its own; `stop()` is Ctrl-C there."""

    def __init__(self, line: str, cwd: Path):
        self.line = line
        self.log = cwd / f"terminal_{abs(hash(line))}.log"
        self.file = open(self.log, "w")
        self.process = subprocess.Popen(["bash", "-c", verbatim(line)], cwd=cwd, env=ros_env.shell_env(),
                                        stdout=self.file, stderr=subprocess.STDOUT, start_new_session=True)

    def stop(self) -> int:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)  # Ctrl-C goes to the terminal's foreground group
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.file.close()
        return self.process.returncode

    def output(self) -> str:
        return self.log.read_text()


def client_of(ros_context, namespace: str = "", topics=("joint_states", "arm/ee_pose")) -> SimClient:
    client = SimClient("readme_check", namespace=namespace, context=ros_context,
                       topics={t: TOPICS[t] for t in topics})
    client.wait_for_topics(list(topics), timeout=120)
    return client


def parameter(client: SimClient, node: str, name: str):
    from rcl_interfaces.srv import GetParameters
    from rclpy.parameter import parameter_value_to_python

    service = client.node.create_client(GetParameters, f"{node}/get_parameters")
    client.spin_until(service.service_is_ready, 30, f"{node}/get_parameters")
    future = service.call_async(GetParameters.Request(names=[name]))
    client.spin_until(future.done, 30, f"parameter {name} of {node}")
    return parameter_value_to_python(future.result().values[0])


def message_data(line: str) -> dict:
    """The message a `ros2 topic pub` line sends, as the YAML it is written in."""
    return yaml.safe_load(shlex.split(line)[-1])


# --- what each line must do -----------------------------------------------------------------------
@dataclass
class Check:
    pattern: str
    kind: str  # "client": against `ros2 run binpick_sim sim`; "server": runs until Ctrl-C; "once": runs and ends
    check: Callable


def check_echo(result, client, line):
    assert "panda_joint1" in result.stdout and "panda_finger_joint2" in result.stdout, result.stdout


def check_position(result, client, line):
    target = np.array(message_data(line)["data"])
    limits = np.array([0.04, 0.04])  # finger targets above the finger travel are clipped to it
    target[7:] = np.minimum(target[7:], limits)
    client.spin_until(lambda: np.abs(client.joint_positions() - target).max() < 0.01, 60,
                      f"the joints at {target.round(3).tolist()}")


def check_delta(result, client, line):
    before = client.latest["arm/ee_pose"].pose.position
    dz = message_data(line)["data"][2]
    try:
        client.spin_until(lambda: client.joint_positions()[7:].max() < 0.003, 60, "the fingers closed")
    except TimeoutError as exc:  # (seen once in CI: say what the arm did and what `ros2 topic pub` printed)
        raise AssertionError(f"{exc}: joints {client.joint_positions().round(4).tolist()}; the line printed "
                             f"{result.stdout[-600:]!r} {result.stderr[-600:]!r}") from None
    client.spin_until(lambda: client.latest["arm/ee_pose"].pose.position.z < before.z + dz / 2, 60,
                      "the grasp point lower")


def episode(result) -> int:
    match = re.search(r"success=True, message='episode (\d+)", result.stdout)
    assert match, result.stdout
    return int(match.group(1))


def check_reset(result, client, line):
    client.episodes.append(episode(result))
    assert len(client.episodes) < 2 or client.episodes[-1] == client.episodes[-2] + 1


def check_seeded_reset(result, client, line):
    assert "Set parameter successful" in result.stdout, result.stdout
    seed = re.search(r"/world seed (\d+)", line).group(1)
    assert re.search(rf"message='episode \d+: .*, seed {seed}\)'", result.stdout), result.stdout
    check_reset(result, client, line)


def check_describe(result, client, line):
    name = shlex.split(line)[-1]
    assert f"Parameter name: {name}" in result.stdout and "Description: Sim seconds per wall second" in result.stdout, \
        result.stdout


def check_trajectory(result, client, line):
    message = message_data(line)
    indices = [JOINT_NAMES.index(n) for n in message["joint_names"]]
    goal = np.array(message["points"][-1]["positions"])
    client.spin_until(lambda: np.abs(client.joint_positions()[indices] - goal).max() < 0.01, 60,
                      "the trajectory's last point")


def check_joint_commands(result, client, line):
    message = message_data(line)
    assert message["name"] == ["panda_finger_joint1"]
    client.spin_until(lambda: np.abs(client.joint_positions()[7:] - message["position"][0]).max() < 0.001, 60,
                      "both fingers at the commanded position (mimic)")


def check_launch_arguments(result, client, line):
    launch_file = Path(scene_file()).parent.parent / "launch" / "sim.launch.py"
    declared = re.findall(r'^\s+\("(\w+)", ', launch_file.read_text(), re.M)
    assert len(declared) >= 11
    for name in declared:
        assert f"'{name}':" in result.stdout, f"{name} not listed:\n{result.stdout}"


def check_description(result, client, line):
    robot = ET.fromstring(result.stdout)
    assert {"world", "panda_link0", "scene", "camera_optical_frame"} <= {link.get("name") for link in
                                                                          robot.iter("link")}
    if "--ros2-control" in line:
        namespace = re.search(r"__ns:=(\S+)", line).group(1)
        topics = {p.get("name"): p.text for p in robot.iter("param")}
        assert topics["joint_commands_topic"] == f"{namespace}/arm/joint_commands"
        assert topics["joint_states_topic"] == f"{namespace}/binpick/joint_states"
    assert result.stderr == ""


def check_sim_with_parameters(terminal, ros_context, line):
    client = client_of(ros_context)
    try:
        assert parameter(client, "world", "config") == str(scene_file())
        assert parameter(client, "world", "realtime_factor") == 0.0
    finally:
        client.close()


def check_rviz_launch(terminal, ros_context, line):
    from rclpy.qos import DurabilityPolicy, QoSProfile
    from std_msgs.msg import String

    client = client_of(ros_context)
    try:
        descriptions = []
        client.node.create_subscription(String, "robot_description", lambda m: descriptions.append(m.data),
                                        QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        client.spin_until(lambda: descriptions and "rviz2" in client.node.get_node_names(), 60,
                          "rviz2 in the graph and robot_description published")
        assert "<robot name=\"binpick_cell\"" in descriptions[0]
    finally:
        client.close()


def check_namespaced_launch(terminal, ros_context, line):
    namespace = re.search(r"namespace:=(\S+)", line).group(1)
    client = client_of(ros_context, namespace=f"/{namespace}")
    try:
        assert parameter(client, "world", "realtime_factor") == 0.0
        assert client.node.count_publishers("/joint_states") == 0
    finally:
        client.close()


def check_launch_test(result, client, line):
    assert re.search(r"Ran \d+ tests? in", result.stderr + result.stdout)
    assert "FAILED" not in result.stderr + result.stdout


CHECKS = [
    Check(r"ros2 topic echo /joint_states --once", "client", check_echo),
    Check(r"ros2 topic pub --once --keep-alive 2 /arm/position_commands std_msgs/msg/Float64MultiArray .*", "client", check_position),
    Check(r"ros2 topic pub --once --keep-alive 2 /arm/delta_commands std_msgs/msg/Float64MultiArray .*", "client", check_delta),
    Check(r"ros2 service call /world/reset std_srvs/srv/Trigger", "client", check_reset),
    Check(r"ros2 param set /world seed \d+ && ros2 service call /world/reset std_srvs/srv/Trigger", "client",
          check_seeded_reset),
    Check(r"ros2 param describe /world realtime_factor", "client", check_describe),
    Check(r"ros2 topic pub --once --keep-alive 2 /arm/joint_trajectory trajectory_msgs/msg/JointTrajectory .*", "client",
          check_trajectory),
    Check(r"ros2 topic pub --once --keep-alive 2 /arm/joint_commands sensor_msgs/msg/JointState .*", "client", check_joint_commands),
    Check(r"ros2 run binpick_sim sim", "server", None),  # the server of the "client" lines
    Check(r"ros2 run binpick_sim sim --ros-args -p config:=\S+ -p realtime_factor:=0.0", "server",
          check_sim_with_parameters),
    Check(r"ros2 launch binpick_sim sim.launch.py rviz:=true", "server", check_rviz_launch),
    Check(r"ros2 launch binpick_sim sim.launch.py config:=\S+ namespace:=\w+ realtime_factor:=0.0", "server",
          check_namespaced_launch),
    Check(r"ros2 launch binpick_sim sim.launch.py -s", "once", check_launch_arguments),
    Check(r"ros2 run binpick_sim description --config \S+", "once", check_description),
    Check(r"ros2 run binpick_sim description --ros2-control --ros-args -r __ns:=\S+", "once", check_description),
    # the path as the README names it; a stale one still fails test_the_launch_test_line, which runs it
    Check(r"cd ~/ws/src/binpick_sim && launch_test test/(launch/)?test_launch_sim.py", "launch_test", check_launch_test),
    Check(r"ros2 launch binpick_sim sim.launch.py ros2_control:=true", "ros2_control", None),
    Check(r"ros2 launch binpick_sim moveit.launch.py", "moveit", None),
]


def check_for(line: str) -> Check:
    found = [c for c in CHECKS if re.fullmatch(c.pattern, words(line))]
    assert len(found) == 1, f"README line with {len(found)} checks (add one to test_readme_ros_path.py): {line}"
    return found[0]


def lines_of(kind: str) -> list[str]:
    return [line for line in readme_lines() if check_for(line).kind == kind]


def test_every_ros2_line_of_the_readme_is_checked():
    lines = readme_lines()
    assert len(lines) >= 17, lines
    kinds = {check_for(line).kind for line in lines}
    assert {"client", "server", "once", "launch_test"} <= kinds


def wait_for_the_cli_to_see(topic: str, cwd: Path, timeout: float = 60) -> None:
    """The second terminal comes after the stack is up and the `ros2` daemon is warm: its first call
    starts the daemon, which then needs a moment to discover the stack (the README says so). Start the
    daemon, then wait until `ros2 topic echo` can take a message of `topic` through it, as a user would
    see it work. (An echo that starts the daemon itself answers through a node of its own, so its
    success says nothing of the daemon's discovery, and the next line, served by the daemon, can fail.)"""
    subprocess.run(["bash", "-c", "ros2 daemon start"], cwd=cwd, env=ros_env.shell_env(), capture_output=True,
                   text=True, timeout=60, check=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        echoed = subprocess.run(["bash", "-c", f"ros2 topic echo {topic} --once"], cwd=cwd,
                                env=ros_env.shell_env(), capture_output=True, text=True, timeout=60)
        if echoed.returncode == 0 and "header:" in echoed.stdout:
            return
        time.sleep(0.5)
    raise TimeoutError(f"ros2 topic echo {topic} never took a message")


def test_the_second_terminals_lines_against_ros2_run_sim(ros_context, tmp_path):
    server = Terminal(next(line for line in lines_of("server") if words(line) == "ros2 run binpick_sim sim"), tmp_path)
    client = None
    try:
        client = client_of(ros_context)
        client.episodes = []
        wait_for_the_cli_to_see("/joint_states", tmp_path)
        for line in lines_of("client"):
            result = run(line, tmp_path)
            check_for(line).check(result, client, line)
    finally:
        if client is not None:
            client.close()
        run("ros2 daemon stop", tmp_path)  # `ros2 param` starts the daemon
        code = server.stop()
    assert code == 0, server.output()


@pytest.mark.parametrize("line", [line for line in readme_lines() if check_for(line).kind == "server"
                                  and words(line) != "ros2 run binpick_sim sim"], ids=words)
def test_a_server_line(ros_context, tmp_path, line):
    terminal = Terminal(line, tmp_path)
    try:
        check_for(line).check(terminal, ros_context, line)
    finally:
        code = terminal.stop()
    assert code == 0, terminal.output()


@pytest.mark.parametrize("line", [line for line in readme_lines() if check_for(line).kind == "once"], ids=words)
def test_a_one_shot_line(tmp_path, line):
    check_for(line).check(run(line, tmp_path), None, line)


def test_the_launch_test_line(tmp_path):
    """`launch_test test/launch/test_launch_sim.py` from the package's source folder, as the README says."""
    line = lines_of("launch_test")[0]
    command = re.sub(r"^cd \S+ && ", "", line)
    result = subprocess.run(["bash", "-c", command], cwd=ros_env.REPO, env=ros_env.shell_env(), capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    check_launch_test(result, None, line)


def test_the_moveit_line_is_the_one_test_moveit_interfaces_runs():
    """nodes/test_moveit_interfaces.py::test_move_group_starts_against_the_simulation runs this very line where
    MoveIt is installed (and skips, naming it, where not)."""
    assert [words(line) for line in lines_of("moveit")] == ["ros2 launch binpick_sim moveit.launch.py"]
    source = (ros_env.REPO / "test" / "nodes" / "test_moveit_interfaces.py").read_text()
    assert '["ros2", "launch", "binpick_sim", "moveit.launch.py"' in source


def test_the_ros2_control_line_says_what_to_install(tmp_path):
    """`ros2 launch binpick_sim sim.launch.py ros2_control:=true` needs ros2_control (C++, not on the registry):
    where controller_manager is missing the launch stops at once, naming the apt packages the page gives
    (test/launch/test_ros2_control.py checks what it starts where it is installed)."""
    lines = lines_of("ros2_control")
    assert len(lines) == 1
    ros_env.prefixes()
    from ament_index_python.packages import PackageNotFoundError, get_package_prefix

    try:
        get_package_prefix("controller_manager")
        pytest.skip("controller_manager is installed: running ros2_control_node is beyond this suite")
    except PackageNotFoundError:
        pass
    result = subprocess.run(["bash", "-c", verbatim(lines[0])], cwd=tmp_path, env=ros_env.shell_env(),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "sudo apt install ros-jazzy-ros2-control ros-jazzy-ros2-controllers " \
        "ros-jazzy-joint-state-topic-hardware-interface" in result.stdout + result.stderr, result.stdout + result.stderr
