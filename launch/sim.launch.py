"""The simulation with its robot description and, optionally, RViz.

    ros2 launch binpick_sim sim.launch.py [config:=scene.yaml] [rviz:=true] [gui:=false] [camera:=true]
        [namespace:=cell1] [use_sim_time:=true] [log_level:=info] [reasoning:=false] [robot_interface:=false]
        [simulation_interfaces:=true] [realtime_factor:=1.0]
        [publish_description:=true]

`ros2 launch binpick_sim sim.launch.py -s` lists the arguments with their descriptions.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, GroupAction
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
    state_publisher = Node(package="robot_state_publisher", executable="robot_state_publisher", output="screen",
                           ros_arguments=log, condition=IfCondition(arg("publish_description")),
                           parameters=[{"robot_description": description, "use_sim_time": arg("use_sim_time")}])
    rviz = Node(package="rviz2", executable="rviz2", ros_arguments=log, condition=IfCondition(arg("rviz")),
                arguments=["-d", PathJoinSubstitution([FindPackageShare("binpick_sim"), "config", "binpick.rviz"])],
                parameters=[{"use_sim_time": arg("use_sim_time")}])
    return LaunchDescription(
        [DeclareLaunchArgument(name, default_value=default, description=text) for name, default, text in ARGUMENTS]
        + [GroupAction([PushRosNamespace(arg("namespace")), sim, state_publisher, rviz])])
