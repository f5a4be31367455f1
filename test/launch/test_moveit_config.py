"""config/'s MoveIt files as MoveIt 2 Jazzy reads them. MoveIt is C++ and not on any registry here, and
neither is its Python config code (moveit_configs_utils, with launch_param_builder), so what MoveIt would
refuse, ignore or not find is checked against what its own sources do, read from moveit2's `jazzy` branch
(2.12.x, Jazzy's release); each fact names the file it comes from. The files are the package's own:
setup.py installs every file of config/ into share/binpick_sim/config/ (test_packaging.py checks the
install), so these names are the share's."""
import re
import xml.etree.ElementTree as ET

import pytest
import yaml
from urdf_parser_py.urdf import URDF

from binpick_sim.config import load_config
from binpick_sim.description import cell_description
from binpick_sim.paths import default_config, share_dir

CONFIG = share_dir() / "config"
ROBOT = "binpick_cell"  # MoveItConfigsBuilder's robot_name: the SRDF's robot name

# moveit_configs_utils/default_configs/ (jazzy): the planning pipelines MoveItConfigsBuilder adds to the
# package's own `<name>_planning.yaml` files when planning_pipelines(load_all=True), its default.
BUILDER_DEFAULT_PIPELINES = ("chomp", "ompl", "pilz_industrial_motion_planner", "stomp")

# moveit_ros/planning/robot_model_loader/src/robot_model_loader.cpp (jazzy): the keys read under
# robot_description_planning.joint_limits.<joint>. (a key not among them is ignored).
JOINT_LIMIT_KEYS = {"max_position", "min_position", "has_velocity_limits", "max_velocity",
                    "has_acceleration_limits", "max_acceleration", "has_jerk_limits", "max_jerk"}
# move_group_interface.cpp and motion_planning_frame.cpp (jazzy) read these two beside them.
PLANNING_KEYS = {"joint_limits", "default_velocity_scaling_factor", "default_acceleration_scaling_factor"}

# What a planning pipeline's namespace (`ompl.`) is read for in jazzy: the pipeline's own parameters
# (moveit_ros/planning/planning_pipeline/res/planning_pipeline_parameters.yaml), the request and response
# adapters' (planning_request_adapter_plugins/res/default_request_adapter_params.yaml,
# planning_response_adapter_plugins/res/default_response_adapter_params.yaml) and OMPL's planner_configs and
# groups (moveit_planners/ompl/ompl_interface/src/ompl_interface.cpp). `start_state_max_bounds_error` (MoveIt 1,
# Humble's CheckStartStateBounds) is none of them.
PIPELINE_KEYS = {"planning_plugins", "request_adapters", "response_adapters", "progress_topic",
                 "fix_start_state", "default_workspace_bounds", "totg", "display_path_topic", "display_contacts_topic",
                 "planner_configs"}
# ompl_interface.cpp's KNOWN_GROUP_PARAMS, and the two keys it reads per group besides.
OMPL_GROUP_KEYS = {"projection_evaluator", "longest_valid_segment_fraction", "enforce_joint_model_state_space",
                   "enforce_constrained_state_space", "default_planner_config", "planner_configs"}


def load(name: str):
    return yaml.safe_load((CONFIG / name).read_text())


def srdf():
    return ET.fromstring((CONFIG / f"{ROBOT}.srdf").read_text())


def group_joints(robot: URDF, semantic) -> dict[str, set[str]]:
    """The joints of each SRDF group as MoveIt builds them: a chain's joints from base to tip, a link's
    parent joint, named joints, and the joints of its subgroups."""
    parent_joint = {j.child: j for j in robot.joints}
    groups = {g.get("name"): g for g in semantic.findall("group")}

    def joints_of(group) -> set[str]:
        found = {j.get("name") for j in group.findall("joint")}
        for link in group.findall("link"):
            found.add(parent_joint[link.get("name")].name)
        for chain in group.findall("chain"):
            link = chain.get("tip_link")
            while link != chain.get("base_link"):
                found.add(parent_joint[link].name)
                link = parent_joint[link].parent
        for sub in group.findall("group"):
            found |= joints_of(groups[sub.get("name")])
        return found
    return {name: joints_of(group) for name, group in groups.items()}


def test_every_group_can_be_time_parameterized():
    """moveit_core/trajectory_processing/src/time_optimal_trajectory_generation.cpp (jazzy),
    TimeOptimalTrajectoryGeneration::computeTimeStamps: for every active joint of the group, "No velocity
    limit was defined" or "No acceleration limit was defined for joint ...! You have to define acceleration
    limits in the URDF or joint_limits.yaml" and `return false`: AddTimeOptimalParameterization (the OMPL
    pipeline's first response adapter) then fails every plan of that group. The URDF has no acceleration
    limits, so joint_limits.yaml must give one, > 0, for every moving joint of every group (the mimic finger
    too, though MoveIt takes it as passive)."""
    robot = URDF.from_xml_string(cell_description(load_config(default_config())).encode())
    moving = {j.name for j in robot.joints if j.type != "fixed"}
    limits = load("joint_limits.yaml")["joint_limits"]
    groups = group_joints(robot, srdf())
    assert set(groups) == {"panda_arm", "hand", "panda_arm_hand"}
    assert "panda_finger_joint1" in groups["hand"] and len(groups["panda_arm_hand"] & moving) == 9
    for group, joints in groups.items():
        for joint in sorted(joints & moving):
            entry = limits.get(joint, {})
            assert entry.get("has_velocity_limits") and entry.get("max_velocity", 0) > 0, (group, joint, entry)
            assert entry.get("has_acceleration_limits") and entry.get("max_acceleration", 0) > 0, (group, joint, entry)


def test_no_key_jazzy_ignores():
    """Every key of joint_limits.yaml and ompl_planning.yaml is one MoveIt Jazzy reads (sources above)."""
    planning = load("joint_limits.yaml")
    assert set(planning) <= PLANNING_KEYS
    for joint, entry in planning["joint_limits"].items():
        assert set(entry) <= JOINT_LIMIT_KEYS, (joint, set(entry) - JOINT_LIMIT_KEYS)
    ompl = load("ompl_planning.yaml")
    groups = {g.get("name") for g in srdf().findall("group")}
    assert set(ompl) - groups <= PIPELINE_KEYS, set(ompl) - groups - PIPELINE_KEYS
    for group in groups & set(ompl):
        assert set(ompl[group]) <= OMPL_GROUP_KEYS, (group, set(ompl[group]) - OMPL_GROUP_KEYS)
        assert all(c in ompl["planner_configs"] for c in ompl[group]["planner_configs"])
    # default_planning_request_adapters / default_planning_response_adapters: the classes of
    # moveit_ros/planning/default_{request,response}_adapters_plugin_description.xml (jazzy)
    requests = {"ResolveConstraintFrames", "ValidateWorkspaceBounds", "CheckStartStateBounds", "CheckStartStateCollision",
                "CheckForStackedConstraints"}
    responses = {"AddTimeOptimalParameterization", "AddRuckigTrajectorySmoothing", "DisplayMotionPath", "ValidateSolution"}
    assert {a.removeprefix("default_planning_request_adapters/") for a in ompl["request_adapters"]} <= requests
    assert {a.removeprefix("default_planning_response_adapters/") for a in ompl["response_adapters"]} <= responses


def test_the_files_have_moveit_configs_builders_names():
    """`MoveItConfigsBuilder("binpick_cell", package_name="binpick_sim").to_moveit_configs()` finds every file
    where moveit_configs_utils/moveit_configs_utils/moveit_configs_builder.py (jazzy) looks, with no path given:
    the package's share + `config/` + `<robot_name>.srdf` (no .setup_assistant), `kinematics.yaml`,
    `joint_limits.yaml`, the one `*_controllers.yaml` (of several, `moveit_controllers.yaml` first),
    `<pipeline>_planning.yaml` per pipeline of the package (the others from its default_configs),
    `sensors_3d.yaml` (used when its `sensors` list is not empty) and `pilz_cartesian_limits.yaml`, which it
    loads whenever the Pilz pipeline is among them (it always is with load_all). Its URDF it would take from
    `config/<robot_name>.urdf`, else (the file missing) from the robot_description topic, which the
    simulation (or robot_state_publisher) publishes: there is no such file, on purpose (the URDF is
    generated per scene)."""
    names = {f.name for f in CONFIG.iterdir() if f.is_file()}
    assert srdf().get("name") == ROBOT and f"{ROBOT}.srdf" in names
    for name in ("kinematics.yaml", "joint_limits.yaml", "sensors_3d.yaml", "pilz_cartesian_limits.yaml"):
        assert isinstance(load(name), dict), name
    controllers = sorted(re.match(r"^(.*)_controllers.yaml$", n).group(1) for n in names
                         if re.match(r"^(.*)_controllers.yaml$", n))
    assert len(controllers) == 1 or "moveit" in controllers, controllers
    assert load("moveit_controllers.yaml")["moveit_simple_controller_manager"]["controller_names"]
    pipelines = sorted(re.match(r"^(.*)_planning.yaml$", n).group(1) for n in names if n.endswith("_planning.yaml"))
    assert pipelines == ["ompl"] and "planner_configs" in load("ompl_planning.yaml")
    assert "pilz_industrial_motion_planner" in BUILDER_DEFAULT_PIPELINES
    assert set(load("pilz_cartesian_limits.yaml")["cartesian_limits"]) == {"max_trans_vel", "max_trans_acc",
                                                                           "max_trans_dec", "max_rot_vel"}
    assert load("sensors_3d.yaml")["sensors"][0]
    assert f"{ROBOT}.urdf" not in names and f"{ROBOT}.urdf.xacro" not in names
    # the old layout, which MoveItConfigsBuilder does not look into
    assert not (CONFIG / "moveit").exists()


@pytest.mark.parametrize("scene", ["scene.yaml", "scene_two_arms.yaml"])
def test_meshes_are_package_uris_of_installed_files(scene):
    """Every mesh of the description is a package:// URI of this package (RViz and MoveIt on any machine
    resolve it through the ament index; a file:// path into this machine's site-packages opens nowhere
    else) whose file the package installs (setup.py; a checkout reads pybullet_data's copy)."""
    from binpick_sim.description import MESH_URI, panda_meshes

    robot = ET.fromstring(cell_description(load_config(CONFIG / scene)))
    meshes = [m.get("filename") for m in robot.iter("mesh")]
    assert len(meshes) >= 20
    for uri in meshes:
        assert uri.startswith(MESH_URI) and MESH_URI.startswith("package://binpick_sim/"), uri
        assert (panda_meshes() / uri.removeprefix(MESH_URI)).is_file(), uri
