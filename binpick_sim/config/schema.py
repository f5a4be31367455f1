"""The scene file's shape: one frozen dataclass per section, each checking its own fields' relations in
`__post_init__` (the message names the key), and what a controller's options may hold.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from .bounds import (BOUNDS, MAX_CAMERA_PIXELS, MAX_FLOAT, ConfigError, _check, _describe, _finite,
                     realtime_factor_problem)

Vec3 = tuple[float, float, float]


@dataclass(frozen=True)
class SimulationConfig:
    timestep: float = 1.0 / 240.0
    substeps: int = 0
    solver_iterations: int = 50
    gravity: Vec3 = (0.0, 0.0, -9.81)
    seed: int = 0
    gui: bool = False
    realtime_factor: float = 1.0
    renderer: Literal["auto", "tiny", "egl", "gui"] = "tiny"  # doc/cameras.md: Renderers (cell/rendering/renderers.py)

    def __post_init__(self):
        _check(self.timestep > 0, "timestep", "must be > 0 seconds")
        _check(self.substeps >= 0, "substeps", "must be >= 0")
        _check(self.solver_iterations > 0, "solver_iterations", "must be > 0")
        _check(self.seed >= 0, "seed", "must be >= 0")
        problem = realtime_factor_problem(self.realtime_factor)
        _check(problem is None, "realtime_factor", problem or "")


@dataclass(frozen=True)
class BinConfig:
    position: Vec3
    orientation_deg: Vec3 = (0.0, 0.0, 0.0)
    size: Vec3 = (0.16, 0.16, 0.04)
    wall_thickness: float = 0.005
    min_objects: int = 0
    max_objects: int = 0

    def __post_init__(self):
        _check(all(s > 0 for s in self.size), "size", "length, width and height must be > 0 m")
        _check(0 < self.wall_thickness < min(self.size[:2]) / 2, "wall_thickness",
               "must be > 0 and leave room inside the bin")
        _check(self.min_objects >= 0, "min_objects", "must be >= 0")
        _check(self.max_objects >= self.min_objects, "max_objects", "must be >= min_objects")


@dataclass(frozen=True)
class SceneConfig:
    pick_bin: BinConfig
    drop_bin: BinConfig
    object_set: Literal["train", "test", "cube"] = "train"  # cube: pybullet_data's cube_small.urdf only
    object_size_range: tuple[float, float] = (0.01, 0.03)
    settle_steps: int = 500
    # where the pick bin's objects are dropped from: the reference simulator's rows along the walls, or anywhere
    # inside (a layer each: the one-object Lift's curriculum step, its object away from the walls)
    spawn: Literal["rows", "anywhere"] = "rows"

    def __post_init__(self):
        lo, hi = self.object_size_range
        _check(0 < lo <= hi, "object_size_range", "needs 0 < min <= max (metres)")
        _check(self.settle_steps >= 0, "settle_steps", "must be >= 0")


ARM_JOINTS = 9
MAX_ARMS = 4  # each arm is a Panda, its IK solver and its node: more would not fit around two bins anyway
ARM_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")  # a ROS namespace token and a joint-name prefix
# Names that several arms' namespaces must not take: the stack's own nodes and topic roots.
RESERVED_ARM_NAMES = ("world", "camera", "task", "reasoning", "robot", "simulation", "clock", "diagnostics")


@dataclass(frozen=True)
class ArmConfig:
    base_position: Vec3
    name: str = "arm"  # with several arms (`arms:`): its namespace and joint-name prefix
    base_orientation_deg: Vec3 = (0.0, 0.0, 0.0)
    home: tuple[float, ...] = (0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02)
    gripper_open: float = 0.02
    finger_force_sensors: bool = True
    clip_delta_to_workspace: bool = True
    workspace_margin: float = 0.015
    position_tolerance: float = 0.002
    max_steps: int = 240
    finger_force: float = 40.0
    self_collision: bool = True  # collisions between the arm's own links (PyBullet's URDF_USE_SELF_COLLISION)
    finger_gear: bool = True  # a gear constraint couples the fingers, as on the real hand
    ik_iterations: int = 10  # PyBullet descent iterations per IK pass, at most
    ik_rounds: int = 6  # IK refinement passes after the first (until 0.1 mm), at most
    ik_posture: bool = True  # the first IK pass pulls toward the home posture (PyBullet's null space)

    def __post_init__(self):
        _check(ARM_NAME.fullmatch(self.name) is not None, "name",
               f"must be lower case letters, digits and _ (a letter first, at most 32), got {self.name[:40]!r}")
        _check(len(self.home) == ARM_JOINTS, "home", f"needs {ARM_JOINTS} values (7 joints [rad], 2 fingers [m])")
        _check(0 < self.gripper_open <= 0.04, "gripper_open", "finger position must be in (0, 0.04] m")
        _check(self.workspace_margin >= 0, "workspace_margin", "must be >= 0 m")
        _check(self.position_tolerance > 0, "position_tolerance", "must be > 0")
        _check(self.max_steps > 0, "max_steps", "must be > 0")
        _check(self.finger_force > 0, "finger_force", "must be > 0 N")
        _check(0 < self.ik_iterations <= 10_000, "ik_iterations", "must be in [1, 10000]")
        _check(0 <= self.ik_rounds <= 100, "ik_rounds", "must be in [0, 100] (0: the first pass only)")


@dataclass(frozen=True)
class CameraConfig:
    position: Vec3
    orientation_deg: Vec3
    parent: str = "world"
    width: int = 640
    height: int = 480
    fov_deg: float = 60.0
    near: float = 0.1  # m; see doc/cameras.md "Renderers" for depth precision against near
    far: float = 3.0
    # The view's width / height (PyBullet's `aspect`); 0: width / height, square pixels. Another value draws
    # that view on a width x height grid, e.g. a 4:3 camera's view as a 64 x 64 observation (fx != fy in K).
    aspect: float = 0.0

    def __post_init__(self):
        _check(self.width > 0, "width", "must be > 0 pixels")
        _check(self.height > 0, "height", "must be > 0 pixels")
        high = BOUNDS[("CameraConfig", "width")][1], BOUNDS[("CameraConfig", "height")][1]
        if self.width <= high[0] and self.height <= high[1]:  # beyond a side's bound, the bound's message says it
            _check(self.width * self.height <= MAX_CAMERA_PIXELS, "width",
                   f"width x height must be at most {MAX_CAMERA_PIXELS} pixels (2048 x 2048, or e.g. 4096 x 1024), "
                   f"got {self.width} x {self.height}")
        _check(0 < self.fov_deg < 180, "fov_deg", "must be in (0, 180) degrees")
        _check(self.near > 0, "near", "must be > 0 m")
        _check(self.far > self.near, "far", "must be > near")
        _check(self.aspect == 0 or 0.01 <= self.aspect <= 100, "aspect",
               "must be 0 (width / height) or a view width / height from 0.01 to 100")

    @property
    def view_aspect(self) -> float:
        """The view's width / height: `aspect`, or the image's where that is 0."""
        return self.aspect or self.width / self.height


@dataclass(frozen=True)
class TaskConfig:
    grabs_to_terminate: int = 1
    # false: nothing lifted counts as a grab, so nothing is taken away (the goal envs: FrankaPickPlace carries an
    # object over the rims, above the grab height, into the drop bin; their success is their goal's)
    count_grabs: bool = True
    verify_grab_by_shaking: bool = False
    terminate_on_bin_collision: bool = True
    collision_threshold: float = 0.0
    steps_per_action: int = 24
    max_episode_steps: int = 200
    grab_reward: float = 1.0
    collision_reward: float = -1.0
    step_reward: float = 0.0

    def __post_init__(self):
        _check(self.grabs_to_terminate >= 1, "grabs_to_terminate", "must be >= 1")
        _check(self.collision_threshold >= 0, "collision_threshold", "must be >= 0 m")
        _check(self.steps_per_action >= 1, "steps_per_action", "must be >= 1")
        _check(self.max_episode_steps >= 1, "max_episode_steps", "must be >= 1")


CONTROLLER_TYPES = ("none", "joint_position", "joint_velocity", "joint_torque", "osc", "ik")
# What each controller's options hold, for checking a scene file's `controller.options` at load time: (the
# options that take a number or a list of numbers, those that take true/false). These are the kinds of the
# defaults of the controllers' constructors; the scene file is read below the controllers (they import it), so
# the kinds are written here, and test_config checks them against the constructors (control/controllers/options.py).
_RANGES = ("input_max", "input_min", "output_max", "output_min", "policy_freq")
_IMPEDANCE = ("kp", "damping_ratio", "kp_limits", "damping_ratio_limits")
CONTROLLER_OPTIONS = {
    "joint_position": (frozenset(_RANGES + _IMPEDANCE), frozenset()),
    "joint_velocity": (frozenset(_RANGES + ("kp",)), frozenset()),
    "joint_torque": (frozenset(_RANGES), frozenset()),
    "osc": (frozenset(("input_max", "input_min", "policy_freq", "kp_null") + _IMPEDANCE),
            frozenset(("control_ori", "control_delta", "uncouple_pos_ori"))),
    "ik": (frozenset(_RANGES + ("kp", "damping_ratio", "ik_pos_limit", "ik_ori_limit", "converge_steps")),
           frozenset(("load_urdf",))),
}


@dataclass(frozen=True)
class ControllerConfig:
    type: Literal["none", "joint_position", "joint_velocity", "joint_torque", "osc", "ik"] = "none"
    options: dict = field(default_factory=dict)  # the controller's keyword arguments (doc/controllers.md: Controllers)

    def __post_init__(self):
        for name, value in self.options.items():
            _check_option(value, f"options.{name}")
        for name, problem in option_problems(self.type, self.options):
            raise ConfigError(f"options.{name}: {problem}, got {_describe(self.options[name])}")


def option_problems(kind: str, options: dict) -> list[tuple[str, str]]:
    """(option, why) for each option whose value cannot be of the kind CONTROLLER_OPTIONS says: a number where
    the controller's default is a number (kp: high), true/false where it is true/false. Unknown options are
    left to make_controller, which names them."""
    numbers, flags = CONTROLLER_OPTIONS.get(kind, ((), ()))
    problems = []
    for name, value in options.items():
        if name in numbers and not _numbers(value):
            problems.append((name, "expected a number or a list of numbers"))
        elif name in flags and not isinstance(value, bool):
            problems.append((name, "expected true or false"))
    return problems


def _numbers(value) -> bool:
    values = value if isinstance(value, (list, tuple)) else [value]
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def _check_option(value, key: str, depth: int = 0) -> None:
    """A controller option is a finite number within MAX_FLOAT, a short string, true/false, null, or a short
    list of those (kp: .nan once made every torque NaN); the controller checks its meaning."""
    if isinstance(value, (list, tuple)):
        _check(depth == 0 and len(value) <= 64, key, "a list of at most 64 numbers, not nested")
        for i, item in enumerate(value):
            _check_option(item, f"{key}[{i}]", depth + 1)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        _check(_finite(value) and abs(value) <= MAX_FLOAT, key,
               f"expected a finite number of at most {MAX_FLOAT:g} in magnitude, got {_describe(value)}")
    else:
        _check(value is None or isinstance(value, bool) or (isinstance(value, str) and len(value) <= 100), key,
               f"expected a number, true/false, a name or a list of numbers, got {_describe(value)}")


@dataclass(frozen=True)
class Config:
    scene: SceneConfig
    arm: ArmConfig
    camera: CameraConfig
    cameras: dict[str, CameraConfig] = field(default_factory=dict)  # more cameras, by name (doc/cameras.md: Cameras)
    simulation: SimulationConfig = field(default_factory=SimulationConfig)
    task: TaskConfig = field(default_factory=TaskConfig)
    controller: ControllerConfig = field(default_factory=ControllerConfig)
    arms: tuple[ArmConfig, ...] = ()  # every arm, `arm` first; a file gives `arm:` (one) or `arms:` (a list)
    source: str = field(default="<defaults>", compare=False)

    def __post_init__(self):
        # `arm` is the first arm: a file with `arms:` fills it from the list, one with `arm:` is a list of one,
        # and dataclasses.replace(config, arm=...) changes the first arm.
        object.__setattr__(self, "arms", (self.arm, *self.arms[1:]))
        _check(len(self.arms) <= MAX_ARMS, "arms", f"at most {MAX_ARMS} arms, got {len(self.arms)}")
        names = [a.name for a in self.arms]
        _check(len(set(names)) == len(names), "arms", f"every arm needs a name of its own, got {names}")
        if len(self.arms) > 1:
            reserved = [n for n in names if n in RESERVED_ARM_NAMES]
            _check(not reserved, "arms", f"{reserved[:1]} is taken by the simulation's own nodes and topics")

    @property
    def several_arms(self) -> bool:
        return len(self.arms) > 1
