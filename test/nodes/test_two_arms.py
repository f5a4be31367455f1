"""Several arms (seed 000's `robots`): the scene file's `arms:`, one arm node per arm under its own
namespace over ROS, each obeying only its own commands."""
import dataclasses
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import yaml

from binpick_sim.config import ConfigError, config_from_dict, config_to_dict, load_config
from binpick_sim.paths import default_config

TWO_ARMS = default_config().parent / "scene_two_arms.yaml"
LEFT_TARGET = np.array([0.3, -0.5, -0.2, -2.2, 0.1, 1.8, 0.5, 0.03, 0.03])
RIGHT_TARGET = np.array([-0.4, -0.3, 0.2, -2.0, -0.1, 1.6, 1.0, 0.01, 0.01])


def test_one_arm_and_a_list_of_arms_are_both_valid():
    one = load_config(default_config())
    assert [a.name for a in one.arms] == ["arm"] and one.arms[0] is one.arm and not one.several_arms
    two = load_config(TWO_ARMS)
    assert [a.name for a in two.arms] == ["left", "right"] and two.arm is two.arms[0] and two.several_arms
    assert two.arms[1].base_position == (1.0, 0.0, 0.0) and two.arms[1].base_orientation_deg[2] == 180.0
    for config in (one, two):  # written back as it was given: `arm:` for one, `arms:` for several
        assert config_from_dict(config_to_dict(config)) == config
    assert "arm" in config_to_dict(one) and "arms" in config_to_dict(two)
    assert dataclasses.replace(one, arm=dataclasses.replace(one.arm, max_steps=9)).arms[0].max_steps == 9


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(arm=d["arms"][0]), "either arm .* or arms"),
    (lambda d: d.update(arms=[]), "a list of 1 to 4 arms"),
    (lambda d: d.update(arms=d["arms"] * 3), "at most 4 arms|a list of 1 to 4"),
    (lambda d: d["arms"][1].update(name="left"), "a name of its own"),
    (lambda d: d["arms"][1].update(name="Right arm"), r"arms\[1\].name: must be lower case"),
    (lambda d: d["arms"][1].update(name="world"), "taken by the simulation"),
    (lambda d: d["arms"][1].update(base_position=[1e308, 0, 0]), r"arms\[1\].base_position\[0\]"),
    (lambda d: d["arms"][1].update(reach=2), r"arms\[1\].reach: unknown key"),
])
def test_bad_arm_lists_fail_naming_the_key(change, message):
    data = yaml.safe_load(TWO_ARMS.read_text())
    change(data)
    with pytest.raises(ConfigError, match=message):
        config_from_dict(data)


def test_each_arm_stands_at_its_base_and_moves_on_its_own():
    from binpick_sim.cell.bin_picking_sim import BinPickingSim

    sim = BinPickingSim(load_config(TWO_ARMS))
    try:
        sim.reset(seed=0)
        left, right = sim.arms
        assert sim.arm is left and sim.arm_named("right") is right
        assert left.ee_pose()[0][0] < 0.5 < right.ee_pose()[0][0]  # facing each other across the bins
        assert sim.joint_names(right)[0] == "right_panda_joint1"
        right.set_position_targets(RIGHT_TARGET)
        sim.world.step(480)
        assert np.abs(right.joint_states()[0][:7] - RIGHT_TARGET[:7]).max() < 0.01
        assert np.abs(left.joint_states()[0] - left.home).max() < 0.01  # the other arm held its home
    finally:
        sim.close()


@pytest.fixture
def two_arm_stack(ros_context):
    from rclpy.parameter import Parameter

    from binpick_sim.nodes.process.stack import SimStack

    world = [Parameter("realtime_factor", value=0.0), Parameter("config", value=str(TWO_ARMS)),
             Parameter("camera", value=False), Parameter("reasoning", value=True)]
    with SimStack(ros_context, {"world": world}) as running:
        yield running


def test_two_arms_over_ros_each_obey_only_their_own_commands(ros_context, two_arm_stack):
    """Both arms driven at once over ROS: /left/arm/... and /right/arm/... move only their own arm, and
    each arm's joint_states carries its own prefixed joint names."""
    from sensor_msgs.msg import JointState

    from binpick_sim.nodes.clients.client import SimClient

    clients = {name: SimClient(f"test_{name}", namespace=f"/{name}", context=ros_context,
                               topics={"joint_states": JointState}) for name in ("left", "right")}
    try:
        for client in clients.values():
            client.wait_for_topics(["joint_states"], timeout=30)
        left, right = clients["left"], clients["right"]
        assert list(left.latest["joint_states"].name)[0] == "left_panda_joint1"
        assert list(right.latest["joint_states"].name)[8] == "right_panda_finger_joint2"
        home = two_arm_stack.sim.arms[0].home
        # one command to the left arm alone: the right arm stays home
        left.send("position", LEFT_TARGET)
        left.spin_until(lambda: np.abs(left.joint_positions() - LEFT_TARGET).max() < 0.01, 60, "left at target")
        right.spin_for(0.2)
        assert np.abs(right.joint_positions() - home).max() < 0.01
        # both at once, to different targets: each reaches its own
        left.send("position", home)
        right.send("position", RIGHT_TARGET)
        for client, target in ((left, home), (right, RIGHT_TARGET)):
            client.spin_until(lambda: np.abs(client.joint_positions() - target).max() < 0.01, 60, "arm at target")
        # a trajectory by prefixed joint names goes to its own arm only
        from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

        trajectory = JointTrajectory(joint_names=["right_panda_joint1"],
                                     points=[JointTrajectoryPoint(positions=[0.2])])
        trajectory.points[0].time_from_start.sec = 1
        publisher = right.node.create_publisher(JointTrajectory, "arm/joint_trajectory", 10)
        right.spin_until(lambda: publisher.get_subscription_count() > 0, 30, "the right arm's trajectory topic")
        publisher.publish(trajectory)
        right.spin_until(lambda: abs(right.joint_positions()[0] - 0.2) < 0.01, 60, "right joint 1 at 0.2")
        assert np.abs(left.joint_positions() - home).max() < 0.01
    finally:
        for client in clients.values():
            client.close()


def test_reasoning_reachable_and_blocking_take_the_arm_to_use():
    """A point near the right arm's base is out of the left arm's reach, and the other arm, parked over
    the target, blocks the arm sent to it."""
    from binpick_sim.cell.bin_picking_sim import BinPickingSim
    from binpick_sim.reasoning import ROBOT, Reasoner

    sim = BinPickingSim(load_config(TWO_ARMS))
    reasoner = Reasoner(sim)
    try:
        sim.reset(seed=0)
        point = {"p": np.array([1.0, 0.45, 0.3])}  # beside the right arm's base, 1.1 m from the left's
        assert reasoner.reachable(point, "panda_grasptarget", 0.001, top_down=False, arm="right")["p"]["reachable"]
        assert not reasoner.reachable(point, "panda_grasptarget", 0.001, top_down=False, arm="left")["p"]["reachable"]
        assert not reasoner.reachable(point, "panda_grasptarget", 0.001, top_down=False)["p"]["reachable"]  # first
        with pytest.raises(KeyError, match="no arm named 'middle'"):
            reasoner.reachable(point, "panda_grasptarget", 0.001, top_down=False, arm="middle")
        assert reasoner.types()["left"] == ROBOT and reasoner.types()["right"] == ROBOT
        # the right arm's hand parked right over an object of the pick bin: it blocks the left arm there
        target = sim.scene.objects[0].name
        above = reasoner.object_position(target) + [0.0, 0.0, 0.12]
        right = sim.arm_named("right")
        right.set_position_targets(right.ik(above, 0.0))
        sim.world.step(480)
        blocked = reasoner.blocking("panda_grasptarget", True, [target], arm="left")[target]
        assert "right" in blocked and "left" not in blocked
        assert "right" not in reasoner.blocking("panda_grasptarget", True, [target], arm="right")[target]
    finally:
        reasoner.close()
        sim.close()


def test_the_task_counts_grabs_and_bin_collisions_per_arm():
    """The right arm grabs (an object held between its fingers above the rims) and the left arm touches
    the pick bin: each is counted for the arm that did it."""
    from binpick_sim.cell.bin_picking_sim import BinPickingSim
    from binpick_sim.picking.task import PickTask

    sim = BinPickingSim(load_config(TWO_ARMS))
    try:
        sim.reset(seed=0)
        task = PickTask(sim, sim.config.task)
        left, right = sim.arms
        c = sim.world.client
        held = sim.scene.objects[0]
        grasp = right.ee_pose()[0]  # 48 cm up, far above the rims: a grab once both fingers touch it
        box = c.createCollisionShape(c.GEOM_BOX, halfExtents=[0.01, 0.01, 0.01])
        block = c.createMultiBody(0, box, -1, grasp.tolist())  # fixed where the fingers close
        c.removeBody(held.body)
        held.body = block
        right.actuate_gripper(False)
        status = task.update()
        assert status.arm_grabs == {"left": 0, "right": 1} and status.grabbed == (held.name,)
        assert status.as_dict()["arm_grabs"] == {"left": 0, "right": 1}
        left.move_to(left.ik(sim.scene.pick_bin.to_world([-0.08, 0.0, 0.02]), 0.0))  # into the near wall
        status = task.update()
        assert status.bin_collision and status.arm_bin_collisions == ("left",)
        assert task.arm_touches_a_bin(arm=left) and not task.arm_touches_a_bin(arm=right)
        assert status.as_dict()["arm_bin_collisions"] == ["left"]
    finally:
        sim.close()


def test_the_robot_description_covers_every_arm_where_pybullet_has_it():
    """Each arm's links, prefixed with its name, at the poses PyBullet gives them (random joint values)."""
    from urdf_kinematics import forward_kinematics, parse

    from binpick_sim.cell.bin_picking_sim import BinPickingSim
    from binpick_sim.description import cell_description

    config = load_config(TWO_ARMS)
    sim = BinPickingSim(config)
    try:
        robot = parse(cell_description(config))
        c, rng = sim.world.client, np.random.default_rng(1)
        values = {}
        for arm in sim.arms:
            q = rng.uniform(arm.limits.lower, arm.limits.upper)
            for joint, value in zip(arm.joints, q):
                c.resetJointState(arm.body, joint, value)
            values.update(zip(sim.joint_names(arm), q))
        poses = forward_kinematics(robot, values)
        for arm in sim.arms:
            for name, index in arm.link_index.items():
                state = c.getLinkState(arm.body, index, computeForwardKinematics=True)
                assert poses[f"{arm.config.name}_{name}"][:3, 3] == pytest.approx(state[4], abs=1e-6), name
        assert "panda_link0" not in poses  # every Panda link is some arm's
    finally:
        sim.close()


@pytest.mark.slow
def test_the_two_arm_demo_picks_with_one_arm_while_the_other_moves(tmp_path):
    """`make demo-two-arms`'s command: the first arm picks over ROS while the other is sent, over its own
    topics, above the drop bin; it succeeds only if both happen."""
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    makefile = (repo / "Makefile").read_text()
    assert "-m binpick_sim.demo --config config/scene_two_arms.yaml --seed $(SEED) --out $(OUT)" in makefile
    result = subprocess.run([sys.executable, "-m", "binpick_sim.demo", "--config", "config/scene_two_arms.yaml",
                             "--seed", "0", "--out", str(tmp_path)], cwd=repo, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "demo succeeded" in result.stdout
    assert "right: right_panda_joint1..right_panda_finger_joint2 at the sent pose" in result.stdout
    assert "grabs per arm: {'left': 1, 'right': 0}" in result.stdout


def test_the_cells_joint_states_carry_both_arms_for_one_robot_state_publisher(ros_context, two_arm_stack):
    """Each arm's node also sends its joint states to the stack's own `joint_states` (where sim.launch.py's one
    robot_state_publisher reads them), each message naming that arm's joints alone."""
    from sensor_msgs.msg import JointState

    from binpick_sim.nodes.clients.client import SimClient

    cell = SimClient("test_cell", context=ros_context, topics={})
    try:
        messages = []
        cell.node.create_subscription(JointState, "/joint_states", lambda m: messages.append(list(m.name)), 10)
        cell.spin_until(lambda: {n[0] for n in messages} >= {"left_panda_joint1", "right_panda_joint1"}, 30,
                        "both arms on /joint_states")
        for names in messages:
            assert len(names) == 9 and len({n.split("_")[0] for n in names}) == 1, names
    finally:
        cell.close()


def test_the_reasoning_node_answers_for_the_arm_its_parameter_names(ros_context, two_arm_stack):
    import json

    from rclpy.parameter import Parameter
    from rclpy.parameter_client import AsyncParameterClient

    from binpick_sim.nodes.clients.client import SimClient

    client = SimClient("test_reasoning_arm", context=ros_context, topics={})
    try:
        remote = AsyncParameterClient(client.node, "reasoning")
        client.spin_until(remote.services_are_ready, 30, "reasoning's parameter services")

        def set_arm(name):
            future = remote.set_parameters([Parameter("arm", value=name)])
            client.spin_until(future.done, 30, "arm set")
            return future.result().results[0]

        refused = set_arm("middle")
        assert not refused.successful and "unknown arm 'middle' (arms: left, right)" in refused.reason
        assert json.loads(client.call("reasoning/reachable", timeout=60).message)["arm"] == "left"
        assert set_arm("right").successful
        answer = json.loads(client.call("reasoning/reachable", timeout=60).message)
        assert answer["arm"] == "right" and answer["objects"]
    finally:
        client.close()


def test_the_ros2_control_description_has_one_system_per_arm():
    from binpick_sim.description import cell_description

    robot = ET.fromstring(cell_description(load_config(TWO_ARMS), ros2_control=True, namespace="/cell"))
    systems = robot.findall("ros2_control")
    assert [s.get("name") for s in systems] == ["binpick_sim_left", "binpick_sim_right"]
    for system, arm in zip(systems, ("left", "right")):
        params = {p.get("name"): p.text for p in system.iter("param")}
        assert params["joint_commands_topic"] == f"/cell/{arm}/arm/joint_commands"
        assert params["joint_states_topic"] == f"/cell/{arm}/binpick/joint_states"
        joints = [j.get("name") for j in system.findall("joint")]
        assert len(joints) == 9 and all(j.startswith(f"{arm}_panda_") for j in joints)
    one = ET.fromstring(cell_description(load_config(default_config()), ros2_control=True))
    assert [j.get("name") for j in one.find("ros2_control").findall("joint")][0] == "panda_joint1"


def test_the_simulation_standards_entities_name_every_arm():
    from binpick_sim.cell.entities.registry import Entities
    from binpick_sim.cell.bin_picking_sim import BinPickingSim

    sim = BinPickingSim(load_config(TWO_ARMS))
    entities = Entities(sim)
    try:
        robots = {e.name: e.body for e in entities.all() if "robot" in e.tags}
        assert robots == {"left": sim.arms[0].body, "right": sim.arms[1].body}
    finally:
        entities.close()
        sim.close()
