"""Every ROS parameter's default and range, by node: the one home of those values.

A node declares a parameter by its name only (`nodes/common/params.py`'s `declare`), and the default and
range come from here; so `ros2 param describe`, the launch files' arguments and the nodes' checks cannot
disagree, and test/nodes/test_parameter_homes.py reads each node's descriptors back against this table.
A default that is a scene file's value names its key (`scene_key`), and its range is the scene file's
(BOUNDS), so a value set as a parameter is held to the bounds the same value has in a scene file.
"""
from __future__ import annotations

from dataclasses import dataclass

from .bounds import (BOUNDS, MAX_SEED, MAX_SHAKE_AMPLITUDE, MAX_SHAKE_DURATION, MAX_SHAKE_FREQUENCY,
                     MAX_STEP_REQUEST, MIN_SHAKE)
from .schema import CameraConfig, ControllerConfig, SimulationConfig

MIN_RATE, MAX_RATE = 0.1, 1000.0  # Hz of sim time, for every periodic publisher
MIN_PHYSICS_RATE, MAX_PHYSICS_RATE = 10.0, 10000.0  # Hz of the robot interface's physics
ROBOT_INTERFACE_RATE = 1000.0  # Hz: the time-indexed robot interface steps (and controls) at 1 kHz
MAX_RENDER_WORKERS = 8  # each is a process with a copy of the cell
# Two at most by default: a second worker is started only where one falls behind the camera's rate (camera_frames),
# and on 2 cores it took egl 640x480 frames from 0.81-0.92 to 1.19-1.28 of the raw call's rate (doc/benchmarks.md).
DEFAULT_RENDER_WORKERS = 2
MIN_REASONING_RENDER, MAX_REASONING_RENDER = 8, 640  # px per side of visible/occluding's masks
MAX_ACTION_REPETITIONS = 10 ** 9  # about 11 days at 1 kHz


@dataclass(frozen=True)
class Unset:
    """A parameter declared by its type only, with no value until one is given (an empty list has no type
    that rclpy can tell): `kind` is "string_array" or "double_array"."""
    kind: str


@dataclass(frozen=True)
class NodeParameter:
    """One parameter: its default (a value, an Unset, or, with `scene_key`, the scene file's value of that
    key) and its inclusive range (None: no range). `given`: the node hands the default over (the package's
    scene file, whose place paths.py knows and config/ does not import)."""
    default: object = None
    low: float | None = None
    high: float | None = None
    scene_key: str | None = None  # "simulation.seed": the default is the scene file's simulation.seed
    given: bool = False


def _scene(section: type, field: str, key: str | None = None, bounded: bool = True) -> NodeParameter:
    """A parameter whose default is the scene file's `key` (section.field) and whose range is that key's."""
    low, high = BOUNDS.get((section.__name__, field), (None, None)) if bounded else (None, None)
    return NodeParameter(low=low, high=high, scene_key=key or field)


_CAMERA_FIELDS = ("parent", "position", "orientation_deg", "fov_deg", "near", "far", "width", "height", "aspect")

PARAMETERS: dict[str, dict[str, NodeParameter]] = {
    "world": {
        "config": NodeParameter(given=True),
        "seed": NodeParameter(low=0, high=MAX_SEED, scene_key="simulation.seed"),
        "realtime_factor": _scene(SimulationConfig, "realtime_factor", "simulation.realtime_factor"),
        "gui": _scene(SimulationConfig, "gui", "simulation.gui"),
        "renderer": _scene(SimulationConfig, "renderer", "simulation.renderer"),
        "objects_rate": NodeParameter(10.0, MIN_RATE, MAX_RATE),
        "camera": NodeParameter(True),
        "task": NodeParameter(False),
        "reasoning": NodeParameter(False),
        "simulation_interfaces": NodeParameter(True),
        "lockstep": NodeParameter(False),
        "exit_with_parent": NodeParameter(True),
        "executor": NodeParameter("events"),
        "keep_object_type": NodeParameter(False),
        "reset_id": NodeParameter(0, 0, MAX_SEED),
        "robot_interface": NodeParameter(False),
        "robot_interface_rate": NodeParameter(ROBOT_INTERFACE_RATE, MIN_PHYSICS_RATE, MAX_PHYSICS_RATE),
        "wall_rate_cap": NodeParameter(True),
        "publish_robot_tf": NodeParameter(False),
        "robot_state_publisher": NodeParameter(False),
        "shake_amplitude": NodeParameter(0.02, MIN_SHAKE, MAX_SHAKE_AMPLITUDE),
        "shake_frequency": NodeParameter(3.0, MIN_SHAKE, MAX_SHAKE_FREQUENCY),
        "shake_duration": NodeParameter(1.5, MIN_SHAKE, MAX_SHAKE_DURATION),
    },
    "arm": {
        "publish_rate": NodeParameter(100.0, MIN_RATE, MAX_RATE),
        "velocity_timeout": NodeParameter(0.5, 0.0, 3600.0),
        "controller_name": NodeParameter("panda_arm_controller"),
        "gripper_controller_name": NodeParameter("panda_hand_controller"),
        "controller": _scene(ControllerConfig, "type", "controller.type"),
        "trajectory_actions": NodeParameter(True),
        # the control_msgs actions' parameters, named and defaulted as JTC's and GripperActionController's
        "allow_partial_joints_goal": NodeParameter(False),
        "allow_nonzero_velocity_at_trajectory_end": NodeParameter(False),
        "constraints.goal_time": NodeParameter(1.0, 0.0, 3600.0),
        "constraints.stopped_velocity_tolerance": NodeParameter(0.01, 0.0, 100.0),
        "constraints.goal": NodeParameter(0.02, 0.0, 10.0),
        "constraints.trajectory": NodeParameter(0.0, 0.0, 10.0),
        "gripper.goal_tolerance": NodeParameter(0.002, 0.0, 0.04),
        "gripper.allow_stalling": NodeParameter(True),
        "gripper.stall_velocity_threshold": NodeParameter(0.001, 0.0, 1.0),
        "gripper.stall_timeout": NodeParameter(1.0, 0.0, 60.0),
    },
    "camera": {
        "rate": NodeParameter(10.0, MIN_RATE, MAX_RATE),
        "render_process": NodeParameter(True),
        "render_workers": NodeParameter(DEFAULT_RENDER_WORKERS, 1, MAX_RENDER_WORKERS),
        # the camera's own scene-file section (`camera:`, or its entry of `cameras:`); lists have no range
        **{name: _scene(CameraConfig, name, f"camera.{name}", bounded=name not in ("position", "orientation_deg"))
           for name in _CAMERA_FIELDS},
    },
    "task": {
        "rate": NodeParameter(10.0, MIN_RATE, MAX_RATE),
        "privileged": NodeParameter(False),
        "objects": NodeParameter(True),
    },
    "reasoning": {
        "objects": NodeParameter(Unset("string_array")),
        "use_camera_pose": NodeParameter(True),
        "camera_position": NodeParameter([0.0, 0.0, 1.0]),
        "camera_orientation": NodeParameter([0.0, 0.0, 0.0, 1.0]),
        "front_axis": NodeParameter([0.0, 0.0, 1.0]),
        "visible_threshold": NodeParameter(0.8, 0.0, 1.0),
        "render_width": NodeParameter(320, MIN_REASONING_RENDER, MAX_REASONING_RENDER),
        "render_height": NodeParameter(240, MIN_REASONING_RENDER, MAX_REASONING_RENDER),
        "gripper_link": NodeParameter("panda_grasptarget"),
        "reach_threshold": NodeParameter(0.001, 0.0, 10.0),
        "top_down": NodeParameter(True),
        "arm": NodeParameter(""),
        "positions": NodeParameter(Unset("double_array")),
    },
    "robot": {
        "max_action_repetitions": NodeParameter(0, 0, MAX_ACTION_REPETITIONS),
        "gravity_compensation": NodeParameter(True),
        "camera_rate": NodeParameter(0.0, 0.0, MAX_RATE),
    },
    "simulation": {
        "prefix": NodeParameter(""),
        "max_steps": NodeParameter(MAX_STEP_REQUEST),
        "spawnable_folders": NodeParameter(Unset("string_array")),
    },
}


def scene_value(config, key: str):
    """The value of a dotted scene-file key (`simulation.seed`) in `config` (a Config or one of its sections,
    whose own field is the key's last part); tuples as lists of floats, as a ROS parameter holds them."""
    section, _, field = key.rpartition(".")
    holder = getattr(config, section) if hasattr(config, section) else config  # else: the section itself
    value = getattr(holder, field)
    if isinstance(value, tuple):
        return [float(v) for v in value]
    return value
