"""The scene file: one YAML document read into typed, validated dataclasses.

Validation happens once, at start-up, so that a typo or a wrong type fails with the key's
dotted path instead of surfacing as a PyBullet error minutes later. Fields without a default
are required; unknown keys are errors (they are almost always typos).
"""
from __future__ import annotations

import dataclasses
import math
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import yaml

Vec3 = tuple[float, float, float]


class ConfigError(ValueError):
    """A scene file that cannot be used; the message names the file and the key."""


def _check(condition: bool, key: str, message: str) -> None:
    if not condition:
        raise ConfigError(f"{key}: {message}")


@dataclass(frozen=True)
class SimulationConfig:
    timestep: float = 1.0 / 240.0
    substeps: int = 0
    solver_iterations: int = 50
    gravity: Vec3 = (0.0, 0.0, -9.81)
    seed: int = 0
    gui: bool = False
    realtime_factor: float = 1.0

    def __post_init__(self):
        _check(self.timestep > 0, "timestep", "must be > 0 seconds")
        _check(self.substeps >= 0, "substeps", "must be >= 0")
        _check(self.solver_iterations > 0, "solver_iterations", "must be > 0")
        _check(self.seed >= 0, "seed", "must be >= 0")
        _check(self.realtime_factor >= 0, "realtime_factor", "must be >= 0 (0 = as fast as possible)")


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
    object_set: Literal["train", "test"] = "train"
    object_size_range: tuple[float, float] = (0.01, 0.03)
    settle_steps: int = 500

    def __post_init__(self):
        lo, hi = self.object_size_range
        _check(0 < lo <= hi, "object_size_range", "needs 0 < min <= max (metres)")
        _check(self.settle_steps >= 0, "settle_steps", "must be >= 0")


ARM_JOINTS = 9


@dataclass(frozen=True)
class ArmConfig:
    base_position: Vec3
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
    ik_iterations: int = 100  # PyBullet descent iterations per IK pass
    ik_rounds: int = 6  # IK refinement passes after the first (until 0.1 mm), at most

    def __post_init__(self):
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
    near: float = 0.01
    far: float = 3.0

    def __post_init__(self):
        _check(self.width > 0, "width", "must be > 0 pixels")
        _check(self.height > 0, "height", "must be > 0 pixels")
        _check(0 < self.fov_deg < 180, "fov_deg", "must be in (0, 180) degrees")
        _check(self.near > 0, "near", "must be > 0 m")
        _check(self.far > self.near, "far", "must be > near")


@dataclass(frozen=True)
class TaskConfig:
    grabs_to_terminate: int = 1
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


@dataclass(frozen=True)
class ControllerConfig:
    type: Literal["none", "joint_position", "joint_velocity", "joint_torque", "osc", "ik"] = "none"
    options: dict = field(default_factory=dict)  # the controller's keyword arguments (README: Controllers)


@dataclass(frozen=True)
class Config:
    scene: SceneConfig
    arm: ArmConfig
    camera: CameraConfig
    simulation: SimulationConfig = field(default_factory=SimulationConfig)
    task: TaskConfig = field(default_factory=TaskConfig)
    controller: ControllerConfig = field(default_factory=ControllerConfig)
    source: str = field(default="<defaults>", compare=False)


def load_config(path: str | Path) -> Config:
    """Read and validate a scene file; raise ConfigError naming the file and key on any problem."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the scene file ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc})") from None
    try:
        config = _build(Config, data, "")
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return dataclasses.replace(config, source=str(path))


def config_from_dict(data: dict) -> Config:
    """Build a Config from an in-memory mapping (tests, the gym env's overrides)."""
    return _build(Config, data, "")


def _build(cls, data, prefix: str):
    if not isinstance(data, dict):
        raise ConfigError(f"{prefix or 'top level'}: expected a mapping, got {_describe(data)}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init and f.name != "source"}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ConfigError(f"{prefix}{unknown[0]}: unknown key (known: {', '.join(sorted(fields))})")
    values = {}
    for name, f in fields.items():
        key = prefix + name
        if name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ConfigError(f"{key}: required key is missing")
            continue
        values[name] = _convert(hints[name], data[name], key)
    try:
        return cls(**values)
    except ConfigError as exc:
        raise ConfigError(f"{prefix}{exc}") from None


def _convert(hint, value, key: str):
    origin = typing.get_origin(hint)
    if dataclasses.is_dataclass(hint):
        return _build(hint, value, key + ".")
    if origin is Literal:
        choices = typing.get_args(hint)
        if value not in choices:
            raise ConfigError(f"{key}: expected one of {list(choices)}, got {value!r}")
        return value
    if origin is tuple:
        args = typing.get_args(hint)
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{key}: expected a list, got {_describe(value)}")
        if args[-1] is not Ellipsis and len(value) != len(args):
            raise ConfigError(f"{key}: expected {len(args)} values, got {len(value)}")
        item_types = [args[0]] * len(value) if args[-1] is Ellipsis else args
        return tuple(_convert(t, v, f"{key}[{i}]") for i, (t, v) in enumerate(zip(item_types, value)))
    if hint is dict:
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise ConfigError(f"{key}: expected a mapping of names to values, got {_describe(value)}")
        return dict(value)
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{key}: expected true or false, got {_describe(value)}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{key}: expected an integer, got {_describe(value)}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ConfigError(f"{key}: expected a finite number, got {_describe(value)}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{key}: expected a string, got {_describe(value)}")
        return value
    raise TypeError(f"config field {key} has an unsupported type {hint}")  # a bug in this module


def _describe(value) -> str:
    return f"{type(value).__name__} {value!r}" if value is not None else "nothing"


def required_keys(cls=Config, prefix: str = "") -> list[str]:
    """Dotted paths of every key a scene file must contain (used by tests and the README)."""
    keys = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if not f.init or f.name == "source":
            continue
        key = prefix + f.name
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            keys.append(key)
        if dataclasses.is_dataclass(hints[f.name]):
            keys.extend(required_keys(hints[f.name], key + "."))
    return keys


def config_to_dict(config: Config) -> dict:
    """Plain data that `config_from_dict` (or a YAML file) turns back into the same Config."""
    def plain(value):
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        return value

    data = plain(dataclasses.asdict(config))
    data.pop("source")
    return data


def save_config(config: Config, path: str | Path) -> Path:
    path = Path(path)
    path.write_text(yaml.safe_dump(config_to_dict(config), sort_keys=False))
    return path
