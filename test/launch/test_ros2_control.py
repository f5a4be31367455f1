"""ros2_control through released packages: urdf/ros2_control.xml and config/ros2_controllers.yaml name only
plugins a Jazzy install has, with parameter names their sources read, and the simulation takes the
commands the hardware interface sends, on the topics it sends them on.

ros2_control is C++ and not on any registry here, so the facts come from the sources (each named): the
plugin names and parameters of joint_state_topic_hardware_interface 1.1.0 (ros-controls/
topic_based_hardware_interfaces, tag 1.1.0, the version ros/rosdistro's jazzy/distribution.yaml releases),
and ros-controls/ros2_controllers' jazzy branch (4.42.1). What that interface does on the wire
(JointStateTopicSystem::write and on_init) is done here by `TopicSystem`, against a real `sim` process run
as sim.launch.py's ros2_control:=true runs it."""
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import yaml
from rclpy.qos import QoSProfile, qos_profile_sensor_data
from sensor_msgs.msg import JointState

import ros_env
from binpick_sim.cell.arm.panda import JOINT_NAMES
from binpick_sim.config import load_config
from binpick_sim.description import cell_description
from binpick_sim.paths import default_config, share_dir

# plugin class -> (the package exporting it, its version released in jazzy/distribution.yaml of ros/rosdistro
# at 8468e88, 2026-08-22), from each package's plugin description file:
RELEASED_PLUGINS = {
    # joint_state_topic_hardware_interface/joint_state_topic_hardware_interface_plugin_description.xml (1.1.0);
    # its second class, topic_based_ros2_control/TopicBasedSystem, is only a deprecated alias of this one
    "joint_state_topic_hardware_interface/JointStateTopicSystem": ("joint_state_topic_hardware_interface", "1.1.0"),
    # ros2_controllers (jazzy): joint_state_broadcaster/joint_state_plugin.xml,
    # joint_trajectory_controller/joint_trajectory_plugin.xml, gripper_controllers/ros_control_plugins.xml
    "joint_state_broadcaster/JointStateBroadcaster": ("joint_state_broadcaster", "4.42.1"),
    "joint_trajectory_controller/JointTrajectoryController": ("joint_trajectory_controller", "4.42.1"),
    "position_controllers/GripperActionController": ("gripper_controllers", "4.42.1"),
}
# JointStateTopicSystem::on_init (src/joint_state_topic_hardware_interface.cpp, 1.1.0): the hardware parameters read
HARDWARE_PARAMETERS = {"joint_commands_topic", "joint_states_topic", "trigger_joint_command_threshold",
                       "sum_wrapped_joint_states"}
# the controllers' parameters (src/*_parameters.yaml of ros2_controllers, jazzy), as far as the file uses them
JTC_PARAMETERS = {"joints", "command_joints", "command_interfaces", "state_interfaces", "allow_partial_joints_goal",
                  "allow_nonzero_velocity_at_trajectory_end", "interpolation_method", "action_monitor_rate",
                  "open_loop_control", "interpolate_from_desired_state", "allow_integration_in_goal_trajectories",
                  "set_last_command_interface_value_as_state_on_activation", "cmd_timeout", "gains", "constraints",
                  "speed_scaling"}
JTC_CONSTRAINTS = {"stopped_velocity_tolerance", "goal_time", "decelerate_on_cancel"}  # + per joint: trajectory, goal
GRIPPER_PARAMETERS = {"action_monitor_rate", "joint", "goal_tolerance", "max_effort", "allow_stalling",
                      "stall_velocity_threshold", "stall_timeout"}


def block(namespace: str = ""):
    return ET.fromstring(cell_description(load_config(default_config()), ros2_control=True,
                                          namespace=namespace)).find("ros2_control")


def test_the_ros2_control_files_name_released_plugins():
    hardware = block().find("hardware")
    assert hardware.findtext("plugin") in RELEASED_PLUGINS
    assert {p.get("name") for p in hardware.findall("param")} <= HARDWARE_PARAMETERS
    controllers = yaml.safe_load((share_dir() / "config" / "ros2_controllers.yaml").read_text())
    manager = controllers["controller_manager"]["ros__parameters"]
    types = {name: entry["type"] for name, entry in manager.items() if isinstance(entry, dict)}
    assert set(types) == {"joint_state_broadcaster", "panda_arm_controller", "panda_hand_controller"}
    assert set(types.values()) <= set(RELEASED_PLUGINS), types
    arm = controllers["panda_arm_controller"]["ros__parameters"]
    assert set(arm) <= JTC_PARAMETERS and set(arm["constraints"]) - set(JOINT_NAMES) <= JTC_CONSTRAINTS
    assert arm["joints"] == list(JOINT_NAMES[:7])
    hand = controllers["panda_hand_controller"]["ros__parameters"]
    assert set(hand) <= GRIPPER_PARAMETERS and hand["joint"] == JOINT_NAMES[7]


def test_the_docs_say_which_packages_to_install():
    """The plugins' packages, as apt names them (ros-jazzy-<name with dashes>), in the launch file's hint and
    in doc/planners.md."""
    import re

    launch_text = (share_dir() / "launch" / "sim.launch.py").read_text()
    docs = (ros_env.REPO / "doc" / "planners.md").read_text()
    for package in ("joint-state-topic-hardware-interface", "ros2-control", "ros2-controllers"):
        assert f"ros-jazzy-{package}" in launch_text and f"ros-jazzy-{package}" in docs, package
    assert "topic_based_ros2_control/" not in docs + launch_text + re.sub(r"<!--.*?-->", "", (
        share_dir() / "urdf" / "ros2_control.xml").read_text(), flags=re.S)


class TopicSystem:
    """What joint_state_topic_hardware_interface 1.1.0's JointStateTopicSystem does on the wire with the
    description's <ros2_control> block (src/joint_state_topic_hardware_interface.cpp): on_init publishes
    sensor_msgs/JointState on `joint_commands_topic` with rclcpp::QoS(1) and subscribes `joint_states_topic`
    with rclcpp::SensorDataQoS(); write() names every joint of the block, in its order, with a position
    for each joint that has a position command interface (a state-only joint is named without one)."""

    def __init__(self, node, ros2_control):
        parameters = {p.get("name"): p.text for p in ros2_control.find("hardware").findall("param")}
        self.joints = [(j.get("name"), [c.get("name") for c in j.findall("command_interface")])
                       for j in ros2_control.findall("joint")]
        self.states: list[JointState] = []
        self.publisher = node.create_publisher(JointState, parameters["joint_commands_topic"], QoSProfile(depth=1))
        node.create_subscription(JointState, parameters["joint_states_topic"], self.states.append,
                                 qos_profile_sensor_data)

    def write(self, positions: dict[str, float]) -> JointState:
        command = JointState(name=[name for name, _ in self.joints],
                             position=[positions[name] for name, interfaces in self.joints if "position" in interfaces])
        self.publisher.publish(command)
        return command


@pytest.fixture
def sim_for_ros2_control(tmp_path):
    """`sim` as sim.launch.py's ros2_control:=true starts it: joint states moved to binpick/joint_states, the arm
    node's own actions off."""
    log = open(tmp_path / "sim.log", "w")
    process = subprocess.Popen([sys.executable, "-m", "binpick_sim.nodes.process.entry", "--ros-args",
                                "-r", "joint_states:=binpick/joint_states", "-p", "trajectory_actions:=false",
                                "-p", "camera:=false", "-p", "realtime_factor:=0.0"],
                               stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ))
    yield process
    process.terminate()
    process.wait(timeout=30)
    log.close()


def test_the_sim_follows_the_hardware_interfaces_commands(ros_context, sim_for_ros2_control):
    """The interface reads the sim's joint states where the block says, and the arm goes where its commands
    (nine names, eight positions: the mimic finger is state only) put it; nobody but ros2_control's
    joint_state_broadcaster would publish joint_states."""
    from binpick_sim.nodes.clients.client import SimClient

    client = SimClient("ros2_control_check", context=ros_context, topics={})
    try:
        system = TopicSystem(client.node, block())
        client.spin_until(lambda: system.states, 90, "the sim's joint states on the block's joint_states_topic")
        state = system.states[-1]
        assert list(state.name) == list(JOINT_NAMES) and client.node.count_publishers("/joint_states") == 0
        start = dict(zip(state.name, state.position))
        target = {**start, "panda_joint1": start["panda_joint1"] + 0.3, "panda_joint4": start["panda_joint4"] + 0.2,
                  "panda_finger_joint1": 0.01}
        client.spin_until(lambda: system.publisher.get_subscription_count() > 0, 30, "the sim on joint_commands_topic")
        command = system.write(target)
        assert len(command.name) == 9 and len(command.position) == 8

        def reached() -> bool:
            now = dict(zip(system.states[-1].name, system.states[-1].position))
            return all(abs(now[n] - target[n]) < 0.01 for n in JOINT_NAMES[:8]) and abs(now[JOINT_NAMES[8]] - 0.01) < 0.002
        client.spin_until(reached, 60, "the joints at the interface's command (both fingers at 0.01)")
        client.spin_until(lambda: "/world/reset" in dict(client.node.get_service_names_and_types()), 30,
                          "the sim's services discovered")
        services = dict(client.node.get_service_names_and_types())  # the controllers', not the arm node's, serve these
        assert not [s for s in services if "follow_joint_trajectory" in s or "gripper_cmd" in s], sorted(services)
    finally:
        client.close()


def test_a_short_command_is_still_refused():
    """Values for fewer joints than named are taken only as the interface sends them: the mimic finger last
    and without a value. An arm joint without a value is the sender's mistake, refused whole as before."""
    from binpick_sim.nodes.common.diagnostics import BadCommand
    from binpick_sim.nodes.servers.arm_node import joint_command

    q, _ = joint_command(list(JOINT_NAMES), [0.1] * 8, [])
    assert q[8] == q[7] == 0.1
    with pytest.raises(BadCommand, match="9 names but 7 position values"):
        joint_command(list(JOINT_NAMES), [0.1] * 7, [])
    with pytest.raises(BadCommand, match="2 names but 1 position values"):
        joint_command([JOINT_NAMES[8], JOINT_NAMES[0]], [0.1], [])


@pytest.mark.skipif(ros_env.missing("launch", "launch_ros") is not None, reason=str(ros_env.missing("launch", "launch_ros")))
def test_the_launch_argument_starts_ros2_control():
    """sim.launch.py ros2_control:=true: ros2_control_node with config/ros2_controllers.yaml, the spawner of
    the three controllers, the sim with its joint states moved aside and its actions off, and the description
    with the <ros2_control> block for robot_state_publisher (which controller_manager reads it from)."""
    import importlib.util

    from launch import LaunchContext
    from launch.actions import DeclareLaunchArgument, GroupAction
    from launch.utilities import normalize_to_list_of_substitutions, perform_substitutions as perform
    from launch_ros.actions import Node
    from launch_ros.utilities import evaluate_parameters

    ros_env.prefixes()  # binpick_sim in the ament index, as FindPackageShare needs it
    spec = importlib.util.spec_from_file_location("sim_launch", share_dir() / "launch" / "sim.launch.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    description = module.generate_launch_description()
    def perform_substitutions(context, value) -> str:
        return perform(context, normalize_to_list_of_substitutions(value))

    context = LaunchContext()
    for entity in description.entities:
        if isinstance(entity, DeclareLaunchArgument):
            context.launch_configurations[entity.name] = perform_substitutions(context, entity.default_value)
    context.launch_configurations["ros2_control"] = "true"
    group = next(e for e in description.entities if isinstance(e, GroupAction))
    nodes = [e for e in group.get_sub_entities() if isinstance(e, Node) and e.condition.evaluate(context)]
    started = {(perform_substitutions(context, n.node_package), perform_substitutions(context, n.node_executable)): n
               for n in nodes}
    assert set(started) == {("binpick_sim", "sim"), ("controller_manager", "ros2_control_node"),
                            ("controller_manager", "spawner"), ("robot_state_publisher", "robot_state_publisher")}
    sim = started["binpick_sim", "sim"]
    assert [(perform_substitutions(context, a), perform_substitutions(context, b)) for a, b in sim._Node__remappings] \
        == [("joint_states", "binpick/joint_states")]
    assert evaluate_parameters(context, sim._Node__parameters)[0]["trajectory_actions"] is False
    spawner = [perform_substitutions(context, a) for a in started["controller_manager", "spawner"]._Node__arguments]
    assert spawner[:3] == list(module.CONTROLLERS)
    control = started["controller_manager", "ros2_control_node"]
    assert str(evaluate_parameters(context, control._Node__parameters)[0]).endswith("config/ros2_controllers.yaml")
    context.launch_configurations["ros2_control"] = "false"
    assert {(perform_substitutions(context, n.node_package), perform_substitutions(context, n.node_executable))
            for n in group.get_sub_entities() if isinstance(n, Node) and n.condition.evaluate(context)} == \
        {("binpick_sim", "sim"), ("robot_state_publisher", "robot_state_publisher")}
