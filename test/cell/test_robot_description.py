"""The robot description: ROS's URDF parser reads it, and it agrees with what PyBullet simulates."""
import dataclasses
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from binpick_sim.cell.arm.panda import JOINT_NAMES
from binpick_sim.description import MESH_URI, cell_description, panda_meshes
from binpick_sim.cell.bin_picking_sim import BinPickingSim

from urdf_kinematics import forward_kinematics, parse


@pytest.fixture
def mounted(config):
    """The default scene, but with the arm moved and turned and the camera on the hand, so that any
    mix-up of frames shows."""
    arm = dataclasses.replace(config.arm, base_position=(0.05, -0.1, 0.02), base_orientation_deg=(0, 0, 20))
    camera = dataclasses.replace(config.camera, parent="panda_hand", position=(0.05, 0.0, 0.04),
                                 orientation_deg=(0.0, -80.0, 0.0))
    config = dataclasses.replace(config, arm=arm, camera=camera)
    sim = BinPickingSim(config)
    yield config, sim
    sim.close()


def test_joints_limits_and_link_tree_match_pybullet(mounted):
    config, sim = mounted
    robot = parse(cell_description(config))
    movable = [j for j in robot.joints if j.type != "fixed"]
    assert [j.name for j in movable] == list(JOINT_NAMES)
    for joint, lower, upper, effort, velocity in zip(movable, sim.arm.limits.lower, sim.arm.limits.upper,
                                                     sim.arm.limits.effort, sim.arm.limits.velocity):
        assert (joint.limit.lower, joint.limit.upper) == pytest.approx((lower, upper))
        assert (joint.limit.effort, joint.limit.velocity) == pytest.approx((effort, velocity))
    c, body = sim.world.client, sim.arm.body
    parents = {j.child: j.parent for j in robot.joints}
    for index in range(c.getNumJoints(body)):
        info = c.getJointInfo(body, index)
        child, parent = info[12].decode(), info[16]
        expected = "panda_link0" if parent == -1 else c.getJointInfo(body, parent)[12].decode()
        assert parents[child] == expected
    assert parents["panda_link0"] == "world" and parents["camera_link"] == "panda_hand"
    assert parents["camera_optical_frame"] == "camera_link"


def test_link_poses_agree_with_pybullet_in_random_poses(mounted):
    config, sim = mounted
    robot = parse(cell_description(config))
    c, arm = sim.world.client, sim.arm
    rng = np.random.default_rng(0)
    for _ in range(5):
        q = rng.uniform(arm.limits.lower, arm.limits.upper)
        for joint, value in zip(arm.joints, q):
            c.resetJointState(arm.body, joint, value)
        poses = forward_kinematics(robot, dict(zip(JOINT_NAMES, q)))
        for name, index in arm.link_index.items():
            state = c.getLinkState(arm.body, index, computeForwardKinematics=True)
            assert poses[name][:3, 3] == pytest.approx(state[4], abs=1e-6), name
            assert np.abs(poses[name][:3, :3] - np.array(c.getMatrixFromQuaternion(state[5])).reshape(3, 3)).max() < 1e-6
        position, rotation = sim.camera.optical_pose()
        assert poses["camera_optical_frame"][:3, 3] == pytest.approx(position, abs=1e-6)
        assert np.abs(poses["camera_optical_frame"][:3, :3] - rotation).max() < 1e-6


def test_the_bins_are_where_pybullet_has_them(mounted):
    config, sim = mounted
    robot = parse(cell_description(config))
    scene = robot.link_map["scene"]
    c = sim.world.client
    for bin_ in sim.scene.bins:
        shapes = c.getCollisionShapeData(bin_.body, -1)
        boxes = [s for s in scene.collisions if s.name.startswith(bin_.name)]
        assert len(boxes) == len(shapes) == 5
        for box, shape in zip(boxes, shapes):
            assert box.origin.xyz == pytest.approx(bin_.to_world(shape[5]), abs=1e-9)
            assert box.geometry.size == pytest.approx(shape[3], abs=1e-9)


def test_ros2_control_block_and_the_executable(config):
    text = cell_description(config, ros2_control=True)
    robot = parse(text)
    assert "<plugin>joint_state_topic_hardware_interface/JointStateTopicSystem</plugin>" in text
    block = ET.fromstring(text).find("ros2_control")
    assert [j.get("name") for j in block.findall("joint")] == list(JOINT_NAMES)
    assert robot.name == "binpick_cell"
    printed = subprocess.run([sys.executable, "-m", "binpick_sim.description"], capture_output=True, text=True,
                             check=True, timeout=60).stdout
    assert parse(printed).link_map["camera_optical_frame"] is not None
    mesh = next(v.geometry.filename for v in parse(printed).link_map["panda_link3"].visuals)
    # a package:// URI (RViz or MoveIt on another machine resolve it through the ament index), naming a file
    # of the package's share (a checkout: pybullet_data's own copy)
    assert mesh.startswith("package://binpick_sim/meshes/franka_panda/visual/"), mesh
    assert (panda_meshes() / mesh.removeprefix(MESH_URI)).is_file()
