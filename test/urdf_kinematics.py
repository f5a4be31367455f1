"""The robot description read as ROS reads it (urdf_parser_py) and each link's world pose computed from
the URDF alone: shared by the description's tests (cell/) and the two-arm tests (nodes/)."""
import numpy as np
from scipy.spatial.transform import Rotation
from urdf_parser_py.urdf import URDF


def parse(text):
    return URDF.from_xml_string(text.encode())


def transform(xyz, rpy):
    matrix = np.eye(4)
    matrix[:3, :3] = Rotation.from_euler("xyz", rpy).as_matrix()
    matrix[:3, 3] = xyz
    return matrix


def forward_kinematics(robot, positions: dict) -> dict:
    """World pose (4x4) of every link, from the URDF alone."""
    poses = {"world": np.eye(4)}
    children = {}
    for joint in robot.joints:
        children.setdefault(joint.parent, []).append(joint)
    stack = ["world"]
    while stack:
        parent = stack.pop()
        for joint in children.get(parent, []):
            origin = joint.origin
            pose = poses[parent] @ transform(origin.xyz if origin else [0, 0, 0], origin.rpy if origin else [0, 0, 0])
            q = positions.get(joint.name, 0.0)
            motion = np.eye(4)
            if joint.type == "revolute":
                motion[:3, :3] = Rotation.from_rotvec(np.asarray(joint.axis) * q).as_matrix()
            elif joint.type == "prismatic":
                motion[:3, 3] = np.asarray(joint.axis) * q
            poses[joint.child] = pose @ motion
            stack.append(joint.child)
    return poses
