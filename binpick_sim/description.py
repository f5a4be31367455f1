"""The robot description (URDF) of the whole cell, made from the same sources as the simulation:
PyBullet's own `franka_panda/panda.urdf` (the file the arm is loaded from) placed at the scene file's
base pose, the bins built from the scene file's boxes, and the camera frames where it mounts the
camera. Generating it, rather than keeping a second hand-written copy, means the two cannot drift.

The Panda's meshes are named by `package://binpick_sim/meshes/franka_panda/...` URIs: setup.py installs
pybullet_data's own Panda meshes into the package's share under that name, so RViz or MoveIt on any
machine with the package installed finds them through the ament index, as they find any robot's meshes
(a `file://` path into this machine's site-packages opened nowhere else). `local_meshes` turns the URIs
back into paths of this machine for a reader that takes only paths (PyBullet).
"""
from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pybullet_data

from .cell.bins.geometry import bin_boxes  # the boxes the simulation builds, without importing PyBullet
from .config import ArmConfig, BinConfig, Config, ConfigError, load_config
from .paths import default_config, share_dir

PANDA_DIR = Path(pybullet_data.getDataPath()) / "franka_panda"
OPTICAL_RPY = (-np.pi / 2, 0.0, -np.pi / 2)  # camera_link -> camera_optical_frame (REP 103)
ROS2_CONTROL = "ros2_control.xml"  # the <ros2_control> block (joint_state_topic_hardware_interface), in urdf/
MESH_URI = "package://binpick_sim/meshes/franka_panda/"  # + visual/... or collision/...: where setup.py installs them


def panda_meshes() -> Path:
    """The folder MESH_URI names on this machine: the installed share's copy, else (a checkout) pybullet_data's."""
    installed = share_dir() / "meshes" / "franka_panda"
    return installed if installed.is_dir() else PANDA_DIR / "meshes"


def local_meshes(urdf: str) -> str:
    """The URDF with the Panda's mesh URIs as plain paths of this machine (PyBullet reads no package:// URI)."""
    return urdf.replace(f'filename="{MESH_URI}', f'filename="{panda_meshes()}/')


def cell_description(config: Config, ros2_control: bool = False, namespace: str = "") -> str:
    robot = ET.Element("robot", name="binpick_cell")
    ET.SubElement(robot, "link", name="world")
    for arm in config.arms:  # with several, each arm's links and joints carry its name (left_panda_link0)
        _add_panda(robot, arm, f"{arm.name}_" if config.several_arms else "")
    _add_bins(robot, config)
    _add_camera(robot, config)
    if ros2_control:
        for arm in config.arms:  # several arms: one system each, in the arm's namespace, its joints prefixed
            robot.append(_ros2_control(namespace, arm.name if config.several_arms else ""))
    ET.indent(robot)
    return '<?xml version="1.0"?>\n' + ET.tostring(robot, encoding="unicode") + "\n"


def _ros2_control(namespace: str, arm: str = "") -> ET.Element:
    """The <ros2_control> block, its hardware's topics in the simulation's namespace (absolute names,
    since the controller manager that reads them runs in a namespace of its own); `arm`: with several
    arms, the arm's name: its own system, joints and namespace."""
    block = ET.parse(share_dir() / "urdf" / ROS2_CONTROL).getroot()
    namespace = "/".join(part for part in (namespace.strip("/"), arm) if part)
    prefix = "/" + namespace if namespace else ""
    if arm:
        block.set("name", f"{block.get('name')}_{arm}")
        for joint in block.iter("joint"):
            joint.set("name", f"{arm}_{joint.get('name')}")
    topics = {"joint_commands_topic": "arm/joint_commands", "joint_states_topic": "binpick/joint_states"}
    for param in block.iter("param"):
        if param.get("name") in topics:
            param.text = f"{prefix}/{topics[param.get('name')]}"
    return block


def _add_panda(robot: ET.Element, arm: ArmConfig, prefix: str = "") -> None:
    """PyBullet's Panda, less its PyBullet-only tags, fixed to `world` at the arm's base pose; `prefix`
    before every link and joint name (several arms, as their joint_states name them)."""
    panda = ET.parse(PANDA_DIR / "panda.urdf").getroot()
    _fixed_joint(robot, f"world_to_{prefix}panda", "world", f"{prefix}panda_link0", arm.base_position,
                 np.radians(arm.base_orientation_deg))
    for element in panda:
        if element.tag not in ("link", "joint"):
            continue
        if prefix:
            element.set("name", prefix + element.get("name"))
            for reference in element.findall("parent") + element.findall("child"):
                reference.set("link", prefix + reference.get("link"))
            for mimic in element.findall("mimic"):
                mimic.set("joint", prefix + mimic.get("joint"))
        for contact in element.findall("contact"):
            element.remove(contact)
        for collision in element.findall("collision"):
            for material in collision.findall("material"):  # only visuals may carry a material
                collision.remove(material)
        for mesh in element.iter("mesh"):
            mesh.set("filename", MESH_URI + mesh.get("filename").removeprefix("package://meshes/"))
        robot.append(element)


def _add_bins(robot: ET.Element, config: Config) -> None:
    """One fixed `scene` link carrying both bins as boxes, visual and collision."""
    scene = ET.SubElement(robot, "link", name="scene")
    _fixed_joint(robot, "world_to_scene", "world", "scene", (0, 0, 0), (0, 0, 0))
    for name, bin_config, colour in (("pick_bin", config.scene.pick_bin, "0.3 0.3 0.3 1"),
                                     ("drop_bin", config.scene.drop_bin, "0.25 0.35 0.45 1")):
        for k, (half, centre) in enumerate(bin_boxes(bin_config)):
            position, rpy = _in_world(bin_config, centre)
            size = " ".join(f"{2 * h:.6g}" for h in half)
            for tag in ("visual", "collision"):
                shape = ET.SubElement(scene, tag, name=f"{name}_{k}")
                ET.SubElement(shape, "origin", xyz=_xyz(position), rpy=_xyz(rpy))
                ET.SubElement(ET.SubElement(shape, "geometry"), "box", size=size)
                if tag == "visual":
                    ET.SubElement(ET.SubElement(shape, "material", name=f"{name}_grey"), "color", rgba=colour)


def _add_camera(robot: ET.Element, config: Config) -> None:
    """camera_link / camera_optical_frame for `camera:`, camera_<name>_link / ..._optical_frame for `cameras:`."""
    for name, camera in {"": config.camera, **config.cameras}.items():
        prefix = f"camera_{name}" if name else "camera"
        parent = camera.parent  # a Panda link of the first arm, as the simulation mounts it, or world
        if parent != "world" and config.several_arms:
            parent = f"{config.arm.name}_{parent}"
        ET.SubElement(robot, "link", name=f"{prefix}_link")
        ET.SubElement(robot, "link", name=f"{prefix}_optical_frame")
        _fixed_joint(robot, f"{prefix}_joint", parent, f"{prefix}_link", camera.position,
                     np.radians(camera.orientation_deg))
        _fixed_joint(robot, f"{prefix}_optical_joint", f"{prefix}_link", f"{prefix}_optical_frame", (0, 0, 0),
                     OPTICAL_RPY)


def _fixed_joint(robot, name, parent, child, xyz, rpy) -> None:
    joint = ET.SubElement(robot, "joint", name=name, type="fixed")
    ET.SubElement(joint, "parent", link=parent)
    ET.SubElement(joint, "child", link=child)
    ET.SubElement(joint, "origin", xyz=_xyz(xyz), rpy=_xyz(rpy))


def _in_world(bin_config: BinConfig, local) -> tuple[np.ndarray, np.ndarray]:
    """A point of the bin's frame in the world's, and the bin's turn as URDF's rpy (fixed axes x, y, z: the scene
    file's `orientation_deg` as it stands). Plain numpy: scipy's rotations were ~90 ms of every sim start."""
    roll, pitch, yaw = np.radians(bin_config.orientation_deg)
    cx, sx, cy, sy, cz, sz = np.cos(roll), np.sin(roll), np.cos(pitch), np.sin(pitch), np.cos(yaw), np.sin(yaw)
    rotation = (np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]]) @ np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
                @ np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]]))
    return np.asarray(bin_config.position) + rotation @ np.asarray(local, dtype=float), np.array([roll, pitch, yaw])


def _xyz(values) -> str:
    return " ".join(f"{float(v):.9g}" for v in values)


def main(argv: list[str] | None = None) -> int:
    """`ros2 run binpick_sim description [--config scene.yaml] [--ros2-control] [--namespace NS]`: the
    URDF on stdout and nothing else; a bad scene file: one line on stderr naming the key, exit 2."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--config", type=Path, default=default_config(), help="scene file")
    parser.add_argument("--ros2-control", action="store_true", help="add the <ros2_control> block (joint_state_topic_hardware_interface)")
    parser.add_argument("--namespace", default=None, help="namespace of the simulation the ros2_control "
                        "hardware talks to (default: __ns of --ros-args, else none)")
    args, rest = parser.parse_known_args(argv)  # launch and `ros2 run` may append --ros-args
    namespace = args.namespace if args.namespace is not None else _ros_namespace(rest)
    try:
        urdf = cell_description(load_config(args.config), ros2_control=args.ros2_control, namespace=namespace)
    except ConfigError as exc:
        print(f"binpick_sim description: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(urdf)
    return 0


def _ros_namespace(args: list[str]) -> str:
    """The namespace a `--ros-args -r __ns:=/name` remapping gives, if any."""
    for arg in args:
        if arg.startswith("__ns:="):
            return arg.removeprefix("__ns:=")
    return ""


if __name__ == "__main__":
    sys.exit(main())
