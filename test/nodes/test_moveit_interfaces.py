"""What a MoveIt-style planner reads from the simulation alone: the URDF and SRDF as latched topics, the
semantic description's groups and collision matrix (config/, checked against the cell by
sampling), the limits it enforces, the frames it would put on TF, and the planning scene in moveit_msgs
(skipped, naming it, where moveit_msgs is not installed; CI installs ../shared/ros-tools)."""
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import yaml
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String
from urdf_parser_py.urdf import URDF

import ros_env
from binpick_sim import semantics
from binpick_sim.cell.arm.panda import JOINT_NAMES, ACCELERATION_LIMITS
from binpick_sim.description import cell_description
from binpick_sim.paths import share_dir

LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
MOVEIT = share_dir() / "config"
needs_moveit_msgs = pytest.mark.skipif(ros_env.missing("moveit_msgs", "shape_msgs") is not None,
                                       reason=str(ros_env.missing("moveit_msgs", "shape_msgs")))


def latched(client, kind, topic, count=1, timeout=30):
    """The first `count` messages on a latched topic, subscribed to after they were sent."""
    got = []
    client.node.create_subscription(kind, topic, got.append, LATCHED if count == 1 else
                                    QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE,
                                               durability=DurabilityPolicy.TRANSIENT_LOCAL))
    client.spin_until(lambda: len(got) >= count, timeout, topic)
    return got


# --- B: descriptions and frames ---------------------------------------------------------------------------------

def test_the_simulation_publishes_urdf_and_srdf_latched(client, stack, config):
    client.spin_for(0.5)  # subscribed only after they went out: transient local brings them
    urdf = latched(client, String, "robot_description")[0].data
    srdf = latched(client, String, "robot_description_semantic")[0].data
    assert urdf == cell_description(config)
    assert srdf == (MOVEIT / "binpick_cell.srdf").read_text()
    robot = URDF.from_xml_string(urdf.encode())
    links, joints = {link.name for link in robot.links}, {j.name for j in robot.joints}
    semantic = ET.fromstring(srdf)
    for element in semantic.iter():  # every link and joint the SRDF names is the URDF's
        for key in ("link", "link1", "link2", "base_link", "tip_link", "parent_link"):
            if element.get(key):
                assert element.get(key) in links, (element.tag, element.get(key))
        if element.tag == "joint":
            assert element.get("name") in joints


def test_the_srdf_groups_states_and_end_effector(config):
    srdf = ET.fromstring((MOVEIT / "binpick_cell.srdf").read_text())
    groups = {g.get("name"): g for g in srdf.findall("group")}
    assert set(groups) == {"panda_arm", "hand", "panda_arm_hand"}
    chain = groups["panda_arm"].find("chain")
    assert (chain.get("base_link"), chain.get("tip_link")) == ("panda_link0", "panda_link8")
    assert {l.get("name") for l in groups["hand"].findall("link")} == set(semantics.HAND_LINKS)
    assert [g.get("name") for g in groups["panda_arm_hand"].findall("group")] == ["panda_arm", "hand"]
    effector = srdf.find("end_effector")
    assert (effector.get("group"), effector.get("parent_group"), effector.get("parent_link")) == \
        ("hand", "panda_arm", "panda_link8")
    robot = URDF.from_xml_string(cell_description(config).encode())
    limits = {j.name: j.limit for j in robot.joints if j.limit is not None}
    states = {s.get("name"): {j.get("name"): float(j.get("value")) for j in s} for s in srdf.findall("group_state")}
    assert states["ready"] == pytest.approx(dict(zip(JOINT_NAMES[:7], config.arm.home[:7])), abs=1e-6)
    for values in states.values():  # named states within the joint limits
        for name, value in values.items():
            assert limits[name].lower - 1e-9 <= value <= limits[name].upper + 1e-9, (name, value)
    # the URDF's root is `world`: no virtual joint that would give panda_link0 a second parent
    assert robot.get_root() == "world" and srdf.find("virtual_joint") is None


def test_the_collision_matrix_is_the_cells():
    """Adjacent pairs disabled; every pair disabled as Never seen apart in fresh random poses (not the
    tool's own samples); the bins' link touches nothing by default but the arm's links that may reach it."""
    from binpick_sim.config import load_config
    from binpick_sim.paths import default_config
    from binpick_sim.tools.moveit_config import CellModel, random_poses

    config = load_config(default_config())
    text = (MOVEIT / "binpick_cell.srdf").read_text()
    srdf = ET.fromstring(text)
    model = CellModel(cell_description(config))
    index = {name: k for k, name in model.link_names.items()}
    disabled = semantics.disabled_pairs(text)
    for a, b in model.adjacent():
        assert frozenset((model.link_names[a], model.link_names[b])) in disabled
    never = [tuple(sorted(index[n] for n in (e.get("link1"), e.get("link2")))) for e in srdf.iter("disable_collisions")
             if e.get("reason") == "Never"]
    assert len(never) > 10
    for q in random_poses(model, 300, np.random.default_rng(12345)):
        model.set_joints(q)
        assert not model.touching(never), [(model.link_names[a], model.link_names[b]) for a, b in model.touching(never)]
    assert srdf.find("disable_default_collisions").get("link") == "scene"
    enabled = {e.get("link1") for e in srdf.iter("enable_collisions")}
    assert {"panda_hand", "panda_leftfinger", "panda_rightfinger", "panda_link7"} <= enabled


def test_joint_limits_yaml_is_what_the_simulation_enforces(sim):
    from binpick_sim.tools.moveit_config import joint_limits

    kept = yaml.safe_load((MOVEIT / "joint_limits.yaml").read_text())
    assert kept == joint_limits(sim.config)
    for k, name in enumerate(JOINT_NAMES):
        entry = kept["joint_limits"][name]
        assert entry["max_velocity"] == pytest.approx(sim.arm.limits.velocity[k])
        if np.isfinite(ACCELERATION_LIMITS[k]):
            assert entry["has_acceleration_limits"] and entry["max_acceleration"] == ACCELERATION_LIMITS[k]
            assert sim.arm.limits.acceleration[k] == ACCELERATION_LIMITS[k]


def test_the_frames_match_the_description_and_pybullet(sim):
    from binpick_sim.cell import tf_frames

    objects = tf_frames.object_frames(sim)
    assert [f[1] for f in objects] == [o.name for o in sim.scene.objects] and all(f[0] == "world" for f in objects)
    robot = URDF.from_xml_string(cell_description(sim.config).encode())
    fixed = {j.child: j for j in robot.joints}
    c = sim.world.client
    for parent, child, position, xyzw in tf_frames.camera_frames(sim):
        joint = fixed[child]
        assert joint.parent == parent and joint.origin.xyz == pytest.approx(list(position), abs=1e-9)
        assert c.getQuaternionFromEuler(joint.origin.rpy) == pytest.approx(xyzw, abs=1e-7)  # (9 digits in the URDF)
    links = {child: position for _, child, position, _ in tf_frames.robot_frames(sim)}
    state = c.getLinkState(sim.arm.body, sim.arm.link_index["panda_hand"], computeForwardKinematics=True)
    assert links["panda_hand"] == pytest.approx(state[4]) and links["panda_link0"] == pytest.approx(sim.arm.config.base_position)


@pytest.mark.skipif(ros_env.missing("tf2_ros", "tf2_msgs") is not None,
                    reason=f"{ros_env.missing('tf2_ros', 'tf2_msgs')}: no /tf here (test_the_frames_match... checks the "
                    "frames the simulation would send)")
def test_tf_as_a_users_node_reads_it(client, stack):
    """/tf and /tf_static over DDS, read with tf2_ros's own Buffer and TransformListener as a user's node reads
    them: the simulation alone (no robot_state_publisher) gives the cell's fixed frames on /tf_static (world ->
    the bins' `scene` link, the arm's base, the camera's link and optical frame) and the objects on /tf,
    stamped with sim time; one publisher each, no frame sent both ways (sim.launch.py's case, with
    robot_state_publisher beside it, is test_launch_sim.py's)."""
    import rclpy.time
    from tf2_msgs.msg import TFMessage
    from tf2_ros import Buffer, TransformListener

    buffer = Buffer()
    TransformListener(buffer, client.node, spin_thread=False)
    latest = rclpy.time.Time()
    obj = stack.sim.scene.objects[0].name
    frames = ["scene", "panda_link0", "camera_link", "camera_optical_frame", obj]
    client.spin_until(lambda: all(buffer.can_transform("world", f, latest) for f in frames), 30, "the cell's frames")
    optical = buffer.lookup_transform("world", "camera_optical_frame", latest)
    assert [optical.transform.translation.x, optical.transform.translation.y, optical.transform.translation.z] == \
        pytest.approx(list(stack.sim.config.camera.position), abs=1e-6)  # (the camera hangs off world)
    moving = buffer.lookup_transform("world", obj, latest)
    now = stack.loop.run(lambda: stack.sim.world.time)
    # sim time, not wall time (a stamp is whole nanoseconds: rounded, it may pass the float by less than one)
    assert 0 < moving.header.stamp.sec + moving.header.stamp.nanosec * 1e-9 <= now + 1e-9
    static, dynamic = [], []
    client.node.create_subscription(TFMessage, "/tf_static", static.append,
                                    QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE,
                                               durability=DurabilityPolicy.TRANSIENT_LOCAL))
    client.node.create_subscription(TFMessage, "/tf", dynamic.append, 10)
    client.spin_until(lambda: static and dynamic, 30, "/tf_static and /tf")
    children = [t.child_frame_id for m in static for t in m.transforms]
    assert len(children) == len(set(children)) and set(frames[:4]) <= set(children)
    assert not set(children) & {t.child_frame_id for m in dynamic for t in m.transforms}
    # One each. A `sim` an earlier test of this worker stopped can stay in the DDS graph until its participant's
    # lease runs out (Fast DDS: 20 s; seen in CI rehearsals right after test_ros2_control's sim): wait for the count to settle.
    count = client.node.count_publishers
    client.spin_until(lambda: count("/tf_static") == count("/tf") == 1, 40, "one publisher of /tf and of /tf_static")
    assert client.node.count_publishers("/robot_description") == 1


# --- D: the planning scene ---------------------------------------------------------------------------------------

@needs_moveit_msgs
def test_the_planning_scene_world_has_the_bins_and_the_objects(client, stack):
    from moveit_msgs.msg import CollisionObject, PlanningSceneWorld
    from shape_msgs.msg import SolidPrimitive

    client.spin_for(0.3)
    world = latched(client, PlanningSceneWorld, "planning_scene_world")[0]
    objects = {o.id: o for o in world.collision_objects}
    sim = stack.sim
    assert set(objects) == {"pick_bin", "drop_bin"} | {o.name for o in sim.scene.objects}
    for bin_ in sim.scene.bins:
        box = objects[bin_.name]
        assert box.header.frame_id == "world" and box.operation == CollisionObject.ADD
        assert [p.type for p in box.primitives] == [SolidPrimitive.BOX] * 5
        assert [box.pose.position.x, box.pose.position.y, box.pose.position.z] == pytest.approx(bin_.position)
        assert sorted(tuple(p.dimensions) for p in box.primitives) == \
            pytest.approx(sorted(tuple(2 * np.array(h)) for h, _ in bin_.boxes()))
    poses = {o.name: p for o, p, _ in stack.loop.run(sim.object_poses)}
    for name, position in poses.items():
        mesh = objects[name].meshes[0]
        assert len(mesh.triangles) > 10 and len(mesh.vertices) > 10
        assert max(i for t in mesh.triangles for i in t.vertex_indices) < len(mesh.vertices)
        at = objects[name].pose.position
        assert [at.x, at.y, at.z] == pytest.approx(list(position), abs=0.01)  # (objects may still settle)
    extent = np.ptp([[v.x, v.y, v.z] for v in objects[next(iter(poses))].meshes[0].vertices], axis=0)
    assert 0.005 < extent.max() < 0.1  # scaled to the object's size (1-3 cm objects), not the file's units


@needs_moveit_msgs
def test_a_planning_scene_monitor_that_joins_later_gets_the_world(client, stack):
    """MoveIt's planning scene monitor subscribes to planning_scene_world, collision_object and
    attached_collision_object with rclcpp::ServicesQoS(): reliable, volatile, depth 10
    (moveit_ros/planning/planning_scene_monitor/src/planning_scene_monitor.cpp, jazzy), so it gets nothing a
    transient local publisher kept from before. A move_group started after another subscriber (RViz, a second
    planner) still gets the whole world."""
    from moveit_msgs.msg import CollisionObject, PlanningSceneWorld
    from rclpy.qos import qos_profile_services_default

    first = latched(client, PlanningSceneWorld, "planning_scene_world")[0]  # someone subscribed already
    assert qos_profile_services_default.durability == DurabilityPolicy.VOLATILE
    client.spin_for(1.0)  # (the world went out to the first one)
    worlds, objects = [], []
    client.node.create_subscription(PlanningSceneWorld, "planning_scene_world", worlds.append, qos_profile_services_default)
    client.node.create_subscription(CollisionObject, "collision_object", objects.append, qos_profile_services_default)
    client.spin_until(lambda: worlds, 10, "the world sent again to a volatile subscriber that joined later")
    assert {o.id for o in worlds[-1].collision_objects} == {o.id for o in first.collision_objects}
    client.spin_until(lambda: {"pick_bin", "drop_bin"} <= {o.id for o in objects}, 10, "the bins sent again")


@needs_moveit_msgs
def test_collision_objects_follow_delete_spawn_reset_and_grab(client, stack):
    from moveit_msgs.msg import AttachedCollisionObject, CollisionObject
    from std_srvs.srv import Trigger

    from binpick_sim.cell.entities.registry import Entities

    sim = stack.sim
    updates, attached = [], []
    client.node.create_subscription(CollisionObject, "collision_object", updates.append, 100)
    client.node.create_subscription(AttachedCollisionObject, "attached_collision_object", attached.append, 100)
    client.spin_for(0.5)

    def seen(name, operation):
        return any(u.id == name and u.operation == operation for u in updates)
    gone = sim.scene.objects[0].name
    stack.loop.run(sim.scene.remove_object, gone)
    client.spin_until(lambda: seen(gone, CollisionObject.REMOVE), 30, "REMOVE of a deleted object")
    name = stack.loop.run(lambda: Entities(sim).spawn("crate", False, "", SMALL_BOX, "world", (0.5, 0.3, 0.4),
                                                      (0, 0, 0, 1)))
    client.spin_until(lambda: seen(name, CollisionObject.ADD), 30, "ADD of a spawned object")
    added = [u for u in updates if u.id == name][-1]
    assert added.primitives[0].dimensions == pytest.approx([0.02, 0.03, 0.04])
    reset = client.node.create_client(Trigger, "world/reset")
    future = reset.call_async(Trigger.Request())
    client.spin_until(future.done, 30, "world/reset")
    client.spin_until(lambda: seen(name, CollisionObject.REMOVE), 30, "the spawned object removed by the reset")
    # a grab: an object held between both fingers is attached to the hand, and leaves the world
    held = stack.loop.run(hold_an_object, sim)
    client.spin_until(lambda: any(a.object.id == held and a.object.operation == CollisionObject.ADD for a in attached),
                      30, "the held object attached")
    message = [a for a in attached if a.object.id == held][-1]
    assert message.link_name == "panda_hand" and "panda_leftfinger" in message.touch_links
    assert message.object.meshes  # the object's mesh goes with it


SMALL_BOX = """<robot name="crate"><link name="base"><inertial><mass value="0.05"/>
<inertia ixx="1e-5" iyy="1e-5" izz="1e-5" ixy="0" ixz="0" iyz="0"/></inertial>
<visual><geometry><box size="0.02 0.03 0.04"/></geometry></visual>
<collision><geometry><box size="0.02 0.03 0.04"/></geometry></collision></link></robot>"""


def hold_an_object(sim):
    """(physics thread) An object made static between the open fingers, and the fingers closed on it
    until both touch it; returns its name."""
    c, arm = sim.world.client, sim.arm
    obj = sim.scene.objects[0]
    arm.set_gripper(True)
    sim.world.step(60)
    position, orientation = arm.ee_pose()
    c.changeDynamics(obj.body, -1, mass=0.0)
    c.resetBasePositionAndOrientation(obj.body, list(position), list(orientation))
    arm.set_gripper(False)
    for _ in range(240):
        sim.world.step(1)
        if obj.body in arm.gripped_bodies():
            break
    assert obj.body in arm.gripped_bodies()
    return obj.name


# --- C: the MoveIt files of config/ and moveit.launch.py ----------------------------------------------------------------------

def load_launch_file():
    import importlib.util

    spec = importlib.util.spec_from_file_location("moveit_launch", share_dir() / "launch" / "moveit.launch.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_moveit_config_files_agree_with_the_cell(config):
    srdf = ET.fromstring((MOVEIT / "binpick_cell.srdf").read_text())
    groups = {g.get("name") for g in srdf.findall("group")}
    ompl = yaml.safe_load((MOVEIT / "ompl_planning.yaml").read_text())
    assert {"panda_arm", "panda_arm_hand", "hand"} <= set(ompl) and ompl["planning_plugins"] == ["ompl_interface/OMPLPlanner"]
    assert ompl["panda_arm"]["default_planner_config"] == "RRTConnectkConfigDefault"
    assert all(c in ompl["planner_configs"] for g in groups for c in ompl[g]["planner_configs"])
    assert set(yaml.safe_load((MOVEIT / "kinematics.yaml").read_text())) <= groups
    controllers = yaml.safe_load((MOVEIT / "moveit_controllers.yaml").read_text())["moveit_simple_controller_manager"]
    arm, hand = controllers["panda_arm_controller"], controllers["panda_hand_controller"]
    assert (arm["type"], arm["action_ns"], arm["joints"]) == ("FollowJointTrajectory", "follow_joint_trajectory",
                                                             list(JOINT_NAMES[:7]))
    assert (hand["type"], hand["action_ns"], hand["joints"]) == ("GripperCommand", "gripper_cmd", ["panda_finger_joint1"])
    sensors = yaml.safe_load((MOVEIT / "sensors_3d.yaml").read_text())
    assert sensors["camera"]["point_cloud_topic"] == "camera/points"  # the camera node's cloud


@pytest.mark.skipif(ros_env.missing("launch", "launch_ros") is not None, reason=str(ros_env.missing("launch", "launch_ros")))
def test_the_moveit_launch_file_arguments_and_parameters(config):
    from launch.actions import DeclareLaunchArgument

    module = load_launch_file()
    description = module.generate_launch_description()
    declared = [e.name for e in description.entities if isinstance(e, DeclareLaunchArgument)]
    assert declared == ["config", "sim", "octomap", "namespace", "use_sim_time", "log_level"]
    parameters = module.moveit_parameters(config.source, MOVEIT, True, True)
    merged = {k: v for p in parameters for k, v in p.items()}
    assert merged["robot_description"] == cell_description(config)
    assert merged["robot_description_semantic"] == (MOVEIT / "binpick_cell.srdf").read_text()
    assert merged["robot_description_planning"]["joint_limits"]["panda_joint2"]["max_acceleration"] == ACCELERATION_LIMITS[1]
    assert merged["planning_pipelines"] == ["ompl"] and merged["ompl"]["panda_arm"]
    assert merged["moveit_simple_controller_manager"]["controller_names"] == ["panda_arm_controller", "panda_hand_controller"]
    assert merged["sensors"] == ["camera"] and merged["octomap_frame"] == "world"
    assert "sensors" not in {k for p in module.moveit_parameters(config.source, MOVEIT, False, True) for k in p}
    for name in module.FILES:
        assert (MOVEIT / name).is_file()


def test_move_group_starts_against_the_simulation():
    """Where MoveIt is installed: `ros2 launch binpick_sim moveit.launch.py` brings move_group up on the cell."""
    import subprocess

    missing = ros_env.missing("launch", "launch_ros", "ros2cli")
    if missing:
        pytest.skip(missing)
    ros_env.prefixes()
    from ament_index_python.packages import PackageNotFoundError, get_package_prefix

    try:
        get_package_prefix("moveit_ros_move_group")
    except PackageNotFoundError:
        pytest.skip("MoveIt's move_group is not installed (C++, not on PyPI; a ROS 2 install with MoveIt has it)")
    process = subprocess.Popen(["ros2", "launch", "binpick_sim", "moveit.launch.py", "camera:=false"], env=ros_env.shell_env(),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        lines = []
        for line in process.stdout:
            lines.append(line)
            if "You can start planning now" in line:
                break
        assert any("You can start planning now" in line for line in lines), "".join(lines[-40:])
    finally:
        process.terminate()
        process.wait(timeout=30)
