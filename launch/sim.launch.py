"""The simulation with its robot description and, optionally, RViz.

    ros2 launch binpick_sim sim.launch.py [config:=scene.yaml] [rviz:=true] [gui:=false] [camera:=true]
        [namespace:=cell1] [use_sim_time:=true] [log_level:=info] [reasoning:=false] [robot_interface:=false]
        [simulation_interfaces:=true] [realtime_factor:=1.0]
        [publish_description:=true]

`ros2 launch binpick_sim sim.launch.py -s` lists the arguments with their descriptions.

A scene of several arms (`arms:`, e.g. config/scene_two_arms.yaml) runs one robot_state_publisher per
arm, in the arm's namespace, reading that arm's `<name>/joint_states`; each has the whole cell's
description (every arm's links carry the arm's name, so their TF frames never clash).
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, GroupAction, OpaqueFunction
from launch.conditions import IfCondition
from launch.substitutions import Command, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node, PushRosNamespace
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackagePrefix, FindPackageShare

ARGUMENTS = [
    ("config", PathJoinSubstitution([FindPackageShare("binpick_sim"), "config", "scene.yaml"]),
     "Scene file (YAML) for the simulation and the robot description."),
    ("gui", "false", "Open PyBullet's own GUI window (needs a display)."),
    ("rviz", "false", "Start RViz with the package's config (robot, TF, images, object markers, point cloud)."),
    ("camera", "true", "Run the camera node (images render only while someone subscribes)."),
    ("reasoning", "false", "Run the reasoning node (scene queries under reasoning/)."),
    ("robot_interface", "false", "Serve the time-indexed robot interface (robot/...) at 1 kHz physics, the arm "
     "under torque control."),
    ("simulation_interfaces", "true", "Serve the ROS 2 simulation_interfaces standard (spawn, entities, "
     "pause/step, reset scopes) where the package is installed."),
    ("realtime_factor", "1.0", "Sim seconds per wall second; 0 runs as fast as possible."),
    ("namespace", "", "Namespace for every node and topic (but /clock, /diagnostics and /tf)."),
    ("use_sim_time", "true", "use_sim_time for the other nodes (robot_state_publisher, RViz); the simulation "
     "itself publishes /clock."),
    ("log_level", "info", "Log level of every node: debug, info, warn, error or fatal."),
    ("publish_description", "true", "Run robot_state_publisher with the cell's URDF (robot, bins, camera)."),
]


def _arm_namespaces(config_file: str) -> list[str | None]:
    """[None] for one arm (robot_state_publisher where it always was), the arms' names for several. A
    scene file that cannot be read gives [None]: the simulation then stops naming the key."""
    from binpick_sim.config import ConfigError, load_config

    try:
        config = load_config(config_file)
    except ConfigError:
        return [None]
    return [arm.name for arm in config.arms] if config.several_arms else [None]


def generate_launch_description():
    arg = LaunchConfiguration
    description = ParameterValue(
        Command([PathJoinSubstitution([FindPackagePrefix("binpick_sim"), "lib", "binpick_sim", "description"]),
                 " --config ", arg("config")]), value_type=str)
    log = ["--log-level", arg("log_level")]
    sim = Node(package="binpick_sim", executable="sim", output="screen", ros_arguments=log,
               parameters=[{"config": arg("config"), "gui": arg("gui"), "camera": arg("camera"),
                            "reasoning": arg("reasoning"),
                            "robot_interface": arg("robot_interface"), "realtime_factor": arg("realtime_factor"),
                            "simulation_interfaces": arg("simulation_interfaces")}])

    def state_publishers(context):
        """One robot_state_publisher, or one per arm (in its namespace) for a scene of several arms."""
        return [Node(package="robot_state_publisher", executable="robot_state_publisher", output="screen",
                     namespace=name, ros_arguments=log, condition=IfCondition(arg("publish_description")),
                     parameters=[{"robot_description": description, "use_sim_time": arg("use_sim_time")}])
                for name in _arm_namespaces(arg("config").perform(context))]

    state_publisher = OpaqueFunction(function=state_publishers)
    rviz = Node(package="rviz2", executable="rviz2", ros_arguments=log, condition=IfCondition(arg("rviz")),
                arguments=["-d", PathJoinSubstitution([FindPackageShare("binpick_sim"), "config", "binpick.rviz"])],
                parameters=[{"use_sim_time": arg("use_sim_time")}])
    return LaunchDescription(
        [DeclareLaunchArgument(name, default_value=default, description=text) for name, default, text in ARGUMENTS]
        + [GroupAction([PushRosNamespace(arg("namespace")), sim, state_publisher, rviz])])
