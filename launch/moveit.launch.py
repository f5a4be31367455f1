"""MoveIt's move_group against the simulation, configured from the MoveIt files of config/.

MoveIt is not a dependency of binpick_sim (package.xml: it is large, and the simulation serves planners
without it): install it with `sudo apt install ros-jazzy-moveit` (move_group is `moveit_ros_move_group`;
the config also uses moveit_kinematics' KDL, moveit_planners_ompl and moveit_simple_controller_manager,
all in that metapackage). Without it this launch file stops at once, saying so.

    ros2 launch binpick_sim moveit.launch.py [sim:=true] [config:=scene.yaml] [octomap:=false]
        [namespace:=cell1] [use_sim_time:=true] [log_level:=info]

With `sim:=true` (the default) it also starts sim.launch.py (simulation + robot_state_publisher). move_group
takes the cell's URDF (description.py, as the simulation publishes it), the SRDF, kinematics, joint limits,
the OMPL pipeline and the controllers (the arm node's FollowJointTrajectory and GripperCommand), and
reads the planning scene the world node publishes (planning_scene_world, collision_object,
attached_collision_object); `octomap:=true` adds the camera's point cloud (sensors_3d.yaml).

The files carry the names MoveIt's own `MoveItConfigsBuilder` (moveit_configs_utils) looks for in a package's
config/, so `MoveItConfigsBuilder("binpick_cell", package_name="binpick_sim").to_moveit_configs()` reads
them too (the URDF then comes from the robot_description topic, as the builder falls back to).
"""
from pathlib import Path

import yaml
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, GroupAction, IncludeLaunchDescription, OpaqueFunction
from launch.conditions import IfCondition
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node, PushRosNamespace
from launch_ros.substitutions import FindPackageShare

ARGUMENTS = [
    ("config", PathJoinSubstitution([FindPackageShare("binpick_sim"), "config", "scene.yaml"]),
     "Scene file (YAML) for the simulation and the robot description."),
    ("sim", "true", "Also start the simulation (sim.launch.py with the same config and namespace)."),
    ("octomap", "false", "Feed the camera's point cloud into move_group's occupancy map (sensors_3d.yaml)."),
    ("namespace", "", "Namespace of the simulation; move_group runs in it too."),
    ("use_sim_time", "true", "move_group on the simulation's /clock."),
    ("log_level", "info", "Log level of move_group (and of the simulation, if started)."),
]
FILES = ("binpick_cell.srdf", "kinematics.yaml", "joint_limits.yaml", "ompl_planning.yaml",
         "moveit_controllers.yaml", "sensors_3d.yaml", "pilz_cartesian_limits.yaml")  # in config/
MOVEIT_HINT = ("moveit.launch.py needs MoveIt's move_group (package moveit_ros_move_group), which is not "
               "installed: sudo apt install ros-jazzy-moveit")


def moveit_parameters(config_file: str, moveit_dir: Path, octomap: bool, use_sim_time: bool) -> list[dict]:
    """move_group's parameters, as MoveIt 2 (Jazzy) reads them. Of planning_scene_monitor_options Jazzy reads
    only name, robot_description and wait_for_initial_state_timeout (MoveItCpp's PlanningSceneMonitorOptions):
    joint states come from `joint_states` in move_group's namespace, the simulation's own topic."""
    from binpick_sim.config import load_config
    from binpick_sim.description import cell_description

    def load(name):
        return yaml.safe_load((moveit_dir / name).read_text())
    parameters = [
        {"robot_description": cell_description(load_config(config_file)),
         "robot_description_semantic": (moveit_dir / "binpick_cell.srdf").read_text()},
        {"robot_description_kinematics": load("kinematics.yaml")},
        {"robot_description_planning": load("joint_limits.yaml")},
        {"planning_pipelines": ["ompl"], "default_planning_pipeline": "ompl", "ompl": load("ompl_planning.yaml")},
        load("moveit_controllers.yaml"),
        {"publish_planning_scene": True, "publish_geometry_updates": True, "publish_state_updates": True,
         "publish_transforms_updates": True, "publish_robot_description": False,
         "publish_robot_description_semantic": False, "planning_scene_monitor_options": {
             "wait_for_initial_state_timeout": 10.0}},
        {"use_sim_time": use_sim_time},
    ]
    if octomap:
        parameters.append({**load("sensors_3d.yaml"), "octomap_frame": "world", "octomap_resolution": 0.01,
                           "max_range": 2.0})
    return parameters


def _move_group(context):
    arg = LaunchConfiguration
    from ament_index_python.packages import PackageNotFoundError, get_package_prefix

    try:
        get_package_prefix("moveit_ros_move_group")
    except PackageNotFoundError:
        raise RuntimeError(MOVEIT_HINT) from None
    moveit_dir = Path(FindPackageShare("binpick_sim").perform(context)) / "config"
    truth = {"true": True, "false": False}
    parameters = moveit_parameters(arg("config").perform(context), moveit_dir,
                                   truth[arg("octomap").perform(context).lower()],
                                   truth[arg("use_sim_time").perform(context).lower()])
    return [Node(package="moveit_ros_move_group", executable="move_group", output="screen", parameters=parameters,
                 ros_arguments=["--log-level", arg("log_level")])]


def generate_launch_description():
    arg = LaunchConfiguration
    sim = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(PathJoinSubstitution([FindPackageShare("binpick_sim"), "launch", "sim.launch.py"])),
        launch_arguments={"config": arg("config"), "namespace": arg("namespace"), "use_sim_time": arg("use_sim_time"),
                          "log_level": arg("log_level")}.items(),
        condition=IfCondition(arg("sim")))
    return LaunchDescription(
        [DeclareLaunchArgument(name, default_value=default, description=text) for name, default, text in ARGUMENTS]
        + [sim, GroupAction([PushRosNamespace(arg("namespace")), OpaqueFunction(function=_move_group)])])
