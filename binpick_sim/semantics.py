"""The cell's semantic description (SRDF) for MoveIt-style planners: planning groups, end effector,
named states and the link pairs whose collisions need not be checked. The groups and states follow
from the scene file; the disabled pairs are computed once by sampling (tools/moveit_config.py, as
MoveIt's setup assistant does) and kept in config/ (with the other MoveIt files), since sampling takes a while.

The URDF's root link is `world` (the arm is fixed to it at the scene's base pose), so the SRDF declares
no virtual joint: MoveIt's stock Panda config adds one from `world` to `panda_link0`, which here would
make `panda_link0` a second root. The planning frame is the root link, `world`.

The bins are both the URDF's `scene` link and, for planners that take the environment from the
planning scene, collision objects of the world (nodes/servers/planning_scene.py); the objects lie on
the bins' floors. So `scene` is allowed to touch anything by default (`disable_default_collisions`,
which reaches the world's objects too) and its pairs with the arm's links that may meet it are
enabled again one by one (`enable_collisions`): the arm is checked against the bins, but the bins are
never reported touching their own copies or what lies in them.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from .config import Config
from .paths import share_dir

ARM_GROUP, HAND_GROUP, ARM_HAND_GROUP = "panda_arm", "hand", "panda_arm_hand"
ARM_BASE, ARM_TIP = "panda_link0", "panda_link8"
HAND_LINKS = ("panda_hand", "panda_leftfinger", "panda_rightfinger")
FINGER_OPEN, FINGER_CLOSED = 0.04, 0.0


def srdf_path() -> Path:
    return share_dir() / "config" / "binpick_cell.srdf"


SCENE_LINK = "scene"


def semantic_description(config: Config, disabled: list[tuple[str, str, str]], solid_links: list[str]) -> str:
    """The SRDF of a one-arm cell; `disabled`: (link, link, reason) pairs, reason as the setup assistant's
    (Adjacent, Default, Never, Always); `solid_links`: the links with collision geometry."""
    if config.several_arms:
        raise ValueError("the SRDF describes a cell of one arm")
    robot = ET.Element("robot", name="binpick_cell")
    arm = ET.SubElement(robot, "group", name=ARM_GROUP)
    ET.SubElement(arm, "chain", base_link=ARM_BASE, tip_link=ARM_TIP)
    hand = ET.SubElement(robot, "group", name=HAND_GROUP)
    for link in HAND_LINKS:
        ET.SubElement(hand, "link", name=link)
    both = ET.SubElement(robot, "group", name=ARM_HAND_GROUP)
    for group in (ARM_GROUP, HAND_GROUP):
        ET.SubElement(both, "group", name=group)
    home = np.asarray(config.arm.home, dtype=float)
    states = {("ready", ARM_GROUP): home[:7], ("extended", ARM_GROUP): [0.0, 0.0, 0.0, -0.0698, 0.0, 1.571, 0.785],
              ("open", HAND_GROUP): [FINGER_OPEN] * 2, ("close", HAND_GROUP): [FINGER_CLOSED] * 2}
    for (name, group), values in states.items():
        state = ET.SubElement(robot, "group_state", name=name, group=group)
        joints = [f"panda_joint{i}" for i in range(1, 8)] if group == ARM_GROUP else \
            ["panda_finger_joint1", "panda_finger_joint2"]
        for joint, value in zip(joints, values):
            ET.SubElement(state, "joint", name=joint, value=f"{float(value):.6g}")
    ET.SubElement(robot, "end_effector", name="hand", parent_link=ARM_TIP, group=HAND_GROUP, parent_group=ARM_GROUP)
    for first, second, reason in sorted(disabled):
        ET.SubElement(robot, "disable_collisions", link1=first, link2=second, reason=reason)
    off = {frozenset(p[:2]) for p in disabled}
    ET.SubElement(robot, "disable_default_collisions", link=SCENE_LINK)
    for link in sorted(solid_links):
        if link != SCENE_LINK and frozenset((link, SCENE_LINK)) not in off:
            ET.SubElement(robot, "enable_collisions", link1=link, link2=SCENE_LINK, reason="may touch the bins")
    ET.indent(robot)
    return '<?xml version="1.0"?>\n' + ET.tostring(robot, encoding="unicode") + "\n"


def disabled_pairs(srdf: str) -> set[frozenset[str]]:
    """The link pairs an SRDF disables."""
    return {frozenset((e.get("link1"), e.get("link2"))) for e in ET.fromstring(srdf).iter("disable_collisions")}


def load_semantic_description(config: Config) -> str | None:
    """The kept SRDF for a cell of one arm (None for several arms, or where the file is missing)."""
    path = srdf_path()
    if config.several_arms or not path.is_file():
        return None
    return path.read_text()
