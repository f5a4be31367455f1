"""What the Franka Panda is, apart from any world it is loaded into: its joint and link names, its URDF, its
limits, and the name it goes by.

These are facts about the robot, read by the arm, the controllers, the trajectory checks, the nodes and the
envs' spaces alike; kept apart from FrankaArm (cell/arm/franka.py), which needs a physics world, so that a reader of
a name or a limit imports no more than this.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from numpy.core.umath import clip  # np.clip's own ufunc (cell/arm/ik.py says why)

ROBOT_NAME = "panda"  # the arm's name in reasoning answers and entity lists when the scene has one arm
ARM_JOINT_NAMES = tuple(f"panda_joint{i}" for i in range(1, 8))
FINGER_JOINT_NAMES = ("panda_finger_joint1", "panda_finger_joint2")
JOINT_NAMES = ARM_JOINT_NAMES + FINGER_JOINT_NAMES
PANDA_URDF = "franka_panda/panda.urdf"  # in pybullet_data
GRASP_TARGET_LINK = "panda_grasptarget"
FINGER_LINKS = ("panda_leftfinger", "panda_rightfinger")
# Joint acceleration limits [rad/s^2] of the Panda's datasheet (PyBullet's URDF has none) and, for the
# fingers, 1 m/s^2 (moveit_resources' panda_moveit_config/config/joint_limits.yaml): MoveIt Jazzy's
# AddTimeOptimalParameterization refuses a plan for a group with a joint that has no acceleration limit,
# so the fingers need one too. Trajectories whose points ask for more are refused (control/trajectory.py),
# and config/joint_limits.yaml gives planners the same numbers.
ACCELERATION_LIMITS = (15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0, 1.0, 1.0)


@dataclass(frozen=True)
class JointLimits:
    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray
    acceleration: np.ndarray = field(default_factory=lambda: np.array(ACCELERATION_LIMITS))

    def clip_position(self, q) -> np.ndarray:
        return clip(np.asarray(q, dtype=float), self.lower, self.upper)

    def clip_velocity(self, v) -> np.ndarray:
        return clip(np.asarray(v, dtype=float), -self.velocity, self.velocity)


def hulled_panda_urdf() -> str:
    """pybullet_data's Panda with its collision meshes cut down to their hulls (cell/hulls.py: the same arm, loaded
    in a third of the time), its visual elements naming pybullet_data's meshes: what every arm and every IK copy of
    one is loaded from."""
    import pybullet_data

    from ..hulls import hulled

    return hulled(Path(pybullet_data.getDataPath()) / PANDA_URDF)


def urdf_joint_limits() -> JointLimits:
    """The 9 joints' limits as the Panda's URDF gives them, read from the file (the numbers PyBullet's
    getJointInfo reports), without a physics client: an env reads them to build its spaces before any
    world exists, and a scratch client with the arm loaded would cost ~100 MB that the allocator keeps."""
    import pybullet_data
    from xml.etree import ElementTree

    root = ElementTree.parse(Path(pybullet_data.getDataPath()) / PANDA_URDF).getroot()
    limits = {j.get("name"): j.find("limit") for j in root.iter("joint")}
    rows = [[float(limits[name].get(key)) for name in JOINT_NAMES] for key in ("lower", "upper", "velocity", "effort")]
    return JointLimits(*map(np.array, rows))


def check_joint_names(names, error: type[Exception] = ValueError) -> list[str]:
    """Names as a planner sends them: known, each once, at least one; `error` says which is wrong."""
    names = list(names)
    if not names:
        raise error("no joint names")
    unknown = [n for n in names if n not in JOINT_NAMES]
    if unknown:  # quoted short: the names are the sender's text, of any length and number
        quoted = ", ".join(repr(n[:40] + "...") if len(n) > 40 else repr(n) for n in unknown[:3])
        more = f" and {len(unknown) - 3} more" if len(unknown) > 3 else ""
        raise error(f"unknown joint(s) {quoted}{more} (joints: {', '.join(JOINT_NAMES)})")
    if len(set(names)) != len(names):
        raise error("a joint is named twice")
    return names
