"""The simulation with its robot description and, optionally, RViz.

    ros2 launch binpick_sim sim.launch.py [config:=scene.yaml] [rviz:=true] [gui:=false] [camera:=true]
        [namespace:=cell1] [use_sim_time:=true] [log_level:=info] [reasoning:=false] [robot_interface:=false]
        [simulation_interfaces:=true] [realtime_factor:=1.0]
        [publish_description:=true] [ros2_control:=false]

`ros2 launch binpick_sim sim.launch.py -s` lists the arguments with their descriptions.

One robot_state_publisher holds the whole cell's description, also for a scene of several arms (`arms:`,
e.g. config/scene_two_arms.yaml): every arm's links then carry the arm's name, so their TF frames never
clash, and each arm's node, in the arm's namespace, sends its joint states to `<name>/joint_states` and to
the cell's `joint_states`, which robot_state_publisher reads.

robot_state_publisher is the one publisher of `robot_description` and of the description's fixed
frames on /tf_static: the simulation is told so (its `robot_state_publisher` parameter) and publishes
neither, only the objects' frames on /tf.

`ros2_control:=true` (one arm) drives the arm through ros2_control instead of the arm node's own actions:
`controller_manager`'s ros2_control_node with the description's <ros2_control> block (urdf/ros2_control.xml:
joint_state_topic_hardware_interface/JointStateTopicSystem), the controllers of config/ros2_controllers.yaml
spawned (joint_state_broadcaster, panda_arm_controller: JointTrajectoryController, panda_hand_controller:
GripperActionController), and the simulation's joint states moved to `binpick/joint_states`, which the
hardware interface reads, so that the broadcaster owns `joint_states`. It needs ros2_control, ros2_controllers
and joint_state_topic_hardware_interface (not dependencies of the package: ROS2_CONTROL_HINT).
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, GroupAction, OpaqueFunction
from launch.conditions import IfCondition, UnlessCondition
from launch.substitutions import Command, LaunchConfiguration, PathJoinSubstitution, PythonExpression
from launch_ros.actions import Node, PushRosNamespace
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackagePrefix, FindPackageShare

from binpick_sim.config import SimulationConfig  # the default of realtime_factor, as the scene file's

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
    ("realtime_factor", str(SimulationConfig.realtime_factor), "Sim seconds per wall second; 0 runs as fast as possible."),
    ("namespace", "", "Namespace for every node and topic (but /clock, /diagnostics and /tf)."),
    ("use_sim_time", "true", "use_sim_time for the other nodes (robot_state_publisher, RViz); the simulation "
     "itself publishes /clock, and its own nodes always keep sim time (their use_sim_time reads true)."),
    ("log_level", "info", "Log level of every node: debug, info, warn, error or fatal."),
    ("publish_description", "true", "Run robot_state_publisher with the cell's URDF (robot, bins, camera)."),
    ("ros2_control", "false", "Drive the arm through ros2_control (ros2_control_node, joint_state_topic_hardware_interface, "
     "JointTrajectoryController and GripperActionController of config/ros2_controllers.yaml) instead of the arm "
     "node's own actions; one arm; needs ros2_control installed."),
]
ROS2_CONTROL_HINT = ("ros2_control:=true needs ros2_control, ros2_controllers and joint_state_topic_hardware_interface: "
                     "sudo apt install ros-jazzy-ros2-control ros-jazzy-ros2-controllers "
                     "ros-jazzy-joint-state-topic-hardware-interface")
CONTROLLERS = ("joint_state_broadcaster", "panda_arm_controller", "panda_hand_controller")  # ros2_controllers.yaml


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
    control = IfCondition(arg("ros2_control"))
    description = ParameterValue(
        Command([PathJoinSubstitution([FindPackagePrefix("binpick_sim"), "lib", "binpick_sim", "description"]),
                 " --config ", arg("config"),
                 PythonExpression(["' --ros2-control --namespace=/' if '", arg("ros2_control"), "'.lower() == 'true' "
                                   "else ''"]), PythonExpression(["'", arg("namespace"), "'.strip('/') if '",
                                                                  arg("ros2_control"), "'.lower() == 'true' else ''"])]),
        value_type=str)
    log = ["--log-level", arg("log_level")]
    sim_parameters = {"config": arg("config"), "gui": arg("gui"), "camera": arg("camera"), "reasoning": arg("reasoning"),
                      "robot_interface": arg("robot_interface"), "realtime_factor": arg("realtime_factor"),
                      "simulation_interfaces": arg("simulation_interfaces"),
                      "robot_state_publisher": arg("publish_description")}
    sim = Node(package="binpick_sim", executable="sim", output="screen", ros_arguments=log, parameters=[sim_parameters],
               condition=UnlessCondition(arg("ros2_control")))
    # ros2_control:=true: the joint states moved aside for the hardware interface, the actions left to the controllers
    sim_for_control = Node(package="binpick_sim", executable="sim", output="screen", ros_arguments=log,
                           parameters=[{**sim_parameters, "trajectory_actions": False}],
                           remappings=[("joint_states", "binpick/joint_states")], condition=control)

    def check_ros2_control(context):
        """Before anything starts: ros2_control:=true needs it installed, and a scene of one arm."""
        if arg("ros2_control").perform(context).lower() == "true":
            if _arm_namespaces(arg("config").perform(context)) != [None]:
                raise RuntimeError("ros2_control:=true drives one arm: the scene has several")
            from ament_index_python.packages import PackageNotFoundError, get_package_prefix

            try:
                get_package_prefix("controller_manager")
            except PackageNotFoundError:
                raise RuntimeError(ROS2_CONTROL_HINT) from None
        return []

    state_publisher = Node(package="robot_state_publisher", executable="robot_state_publisher", output="screen",
                           ros_arguments=log, condition=IfCondition(arg("publish_description")),
                           parameters=[{"robot_description": description, "use_sim_time": arg("use_sim_time")}])
    controllers = PathJoinSubstitution([FindPackageShare("binpick_sim"), "config", "ros2_controllers.yaml"])
    # controller_manager (Jazzy) takes the description from the robot_description topic (robot_state_publisher's)
    control_node = Node(package="controller_manager", executable="ros2_control_node", output="screen",
                        ros_arguments=log, parameters=[controllers, {"use_sim_time": arg("use_sim_time")}],
                        condition=control)
    spawner = Node(package="controller_manager", executable="spawner", output="screen", ros_arguments=log,
                   arguments=[*CONTROLLERS, "--controller-manager", "controller_manager"], condition=control)
    rviz = Node(package="rviz2", executable="rviz2", ros_arguments=log, condition=IfCondition(arg("rviz")),
                arguments=["-d", PathJoinSubstitution([FindPackageShare("binpick_sim"), "config", "binpick.rviz"])],
                parameters=[{"use_sim_time": arg("use_sim_time")}])
    return LaunchDescription(
        [DeclareLaunchArgument(name, default_value=default, description=text) for name, default, text in ARGUMENTS]
        + [GroupAction([PushRosNamespace(arg("namespace")), OpaqueFunction(function=check_ros2_control), sim,
                        sim_for_control, state_publisher, control_node, spawner, rviz])])
