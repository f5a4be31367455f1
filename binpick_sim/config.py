"""The scene file: one YAML document read into typed, validated dataclasses.

Validation happens once, at start-up, so that a typo or a wrong type fails with the key's
dotted path instead of surfacing as a PyBullet error minutes later. Fields without a default
are required; unknown keys are errors (they are almost always typos).

A scene file is untrusted input, so reading it is bounded before anything is built: at most
MAX_FILE_BYTES of UTF-8 text, YAML aliases refused (a "billion laughs" document expands a few lines
into gigabytes), nesting at most MAX_DEPTH deep, and every number within its key's bounds (BOUNDS; a
key not listed there: |x| <= MAX_FLOAT for reals, 0..MAX_INT for integers), so that no value can ask
for minutes of loading, gigabytes of memory or an image the renderer cannot hold.
"""
from __future__ import annotations

import dataclasses
import math
import re
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import yaml

Vec3 = tuple[float, float, float]

MAX_FILE_BYTES = 1 << 20  # 1 MiB; the default scene file is 3 kB
MAX_DEPTH = 32  # nesting of mappings and lists
MAX_FLOAT = 1e6  # any real number in the file, unless BOUNDS says otherwise
MAX_INT = 10 ** 9  # any integer in the file, unless BOUNDS says otherwise
MAX_OBJECTS = 200  # per bin: loading and settling 200 objects takes seconds, 10**6 took minutes and GBs
MAX_SEED = 2 ** 63 - 1  # the world node's seed parameter is an int64
# Pixels of one camera frame (width x height): 2048 x 2048. Each frame goes from the render worker to the
# camera node and out on up to six topics; 4096 x 4096 with the cloud and the segmentation made 3.2 GB at
# the peak and stalled the physics thread for seconds (README "Bad input").
MAX_CAMERA_PIXELS = 2048 * 2048
# (class, field) -> inclusive bounds of each number in it
BOUNDS: dict[tuple[str, str], tuple[float, float]] = {
    ("SimulationConfig", "timestep"): (1e-5, 0.1),
    ("SimulationConfig", "substeps"): (0, 100),
    ("SimulationConfig", "solver_iterations"): (1, 10_000),
    ("SimulationConfig", "gravity"): (-1000.0, 1000.0),
    ("SimulationConfig", "seed"): (0, MAX_SEED),
    ("SimulationConfig", "realtime_factor"): (0.0, 1000.0),
    ("BinConfig", "position"): (-100.0, 100.0),
    ("BinConfig", "orientation_deg"): (-360.0, 360.0),
    ("BinConfig", "size"): (0.0, 10.0),
    ("BinConfig", "wall_thickness"): (0.0, 1.0),
    ("BinConfig", "min_objects"): (0, MAX_OBJECTS),
    ("BinConfig", "max_objects"): (0, MAX_OBJECTS),
    ("SceneConfig", "object_size_range"): (0.0, 0.5),
    ("SceneConfig", "settle_steps"): (0, 10_000),
    ("ArmConfig", "base_position"): (-100.0, 100.0),
    ("ArmConfig", "base_orientation_deg"): (-360.0, 360.0),
    ("ArmConfig", "home"): (-10.0, 10.0),
    ("ArmConfig", "workspace_margin"): (0.0, 1.0),
    ("ArmConfig", "position_tolerance"): (0.0, 1.0),
    ("ArmConfig", "max_steps"): (1, 100_000),
    ("ArmConfig", "finger_force"): (0.0, 1000.0),
    ("CameraConfig", "position"): (-100.0, 100.0),
    ("CameraConfig", "orientation_deg"): (-360.0, 360.0),
    ("CameraConfig", "width"): (1, 4096),  # TinyRenderer crashed at 100000 x 100000; see MAX_CAMERA_PIXELS too
    ("CameraConfig", "height"): (1, 4096),
    # A lens that means something (issue 25): near 5e-324 made every depth NaN, fov 1e-300 gave fx = 2.75e304.
    ("CameraConfig", "fov_deg"): (1.0, 170.0),
    ("CameraConfig", "near"): (0.001, 100.0),
    ("CameraConfig", "far"): (0.01, 1000.0),
    ("CameraConfig", "aspect"): (0.0, 100.0),
    ("TaskConfig", "grabs_to_terminate"): (1, MAX_OBJECTS),
    ("TaskConfig", "collision_threshold"): (0.0, 1.0),
    ("TaskConfig", "steps_per_action"): (1, 100_000),
}


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
    renderer: Literal["auto", "tiny", "egl", "gui"] = "tiny"  # README: Renderers (cell/rendering.py)

    def __post_init__(self):
        _check(self.timestep > 0, "timestep", "must be > 0 seconds")
        _check(self.substeps >= 0, "substeps", "must be >= 0")
        _check(self.solver_iterations > 0, "solver_iterations", "must be > 0")
        _check(self.seed >= 0, "seed", "must be >= 0")
        _check(self.realtime_factor == 0 or self.realtime_factor >= 0.01, "realtime_factor",
               "must be 0 (as fast as possible) or at least 0.01")


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
    near: float = 0.1  # m; see README "Renderers" for depth precision against near
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
    options: dict = field(default_factory=dict)  # the controller's keyword arguments (README: Controllers)

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
    cameras: dict[str, CameraConfig] = field(default_factory=dict)  # more cameras, by name (README: Cameras)
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


def load_config(path: str | Path) -> Config:
    """Read and validate a scene file; raise ConfigError naming the file and key on any problem."""
    path = Path(path)
    try:
        with open(path, "rb") as file:
            raw = file.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the scene file ({exc.strerror})") from None
    if len(raw) > MAX_FILE_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_FILE_BYTES} bytes, not a scene file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start} is {raw[exc.start]:#04x})") from None
    try:
        data = yaml.load(text, Loader=_BoundedLoader)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({_short(str(exc))})") from None
    try:
        config = _build(Config, data, "")
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return dataclasses.replace(config, source=str(path))


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing aliases and nesting deeper than MAX_DEPTH before building anything."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise ConfigError(f"{_where(mark, self)}: YAML aliases (*name) are not accepted in a scene file")
        depth = getattr(self, "_depth", 0)
        if depth >= MAX_DEPTH:
            raise ConfigError(f"{_where(self.peek_event().start_mark, self)}: nested more than {MAX_DEPTH} deep")
        self._depth = depth + 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth = depth


def _where(mark, loader) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}"


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def config_from_dict(data: dict) -> Config:
    """Build a Config from an in-memory mapping (tests, the gym env's overrides)."""
    return _build(Config, data, "")


def _one_arm_or_several(data: dict) -> dict:
    """`arm:` (one arm, as ever) or `arms:` (a list of one or more): never both, never neither."""
    if "arms" not in data:
        return data
    _check("arm" not in data, "arms", "give either arm (one arm) or arms (a list), not both")
    arms = data["arms"]
    _check(isinstance(arms, list) and 0 < len(arms) <= MAX_ARMS, "arms",
           f"expected a list of 1 to {MAX_ARMS} arms, got {_describe(arms)}")
    return {**data, "arm": arms[0]}


def _build(cls, data, prefix: str):
    if not isinstance(data, dict):
        raise ConfigError(f"{prefix or 'top level'}: expected a mapping, got {_describe(data)}")
    if cls is Config:
        data = _one_arm_or_several(data)
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
        built = cls(**values)  # its own checks first: their messages say more than a range
    except ConfigError as exc:
        raise ConfigError(f"{prefix}{exc}") from None
    for name, value in values.items():
        _check_bounds(cls, name, value, prefix + name)
    return built


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
    if origin is dict and dataclasses.is_dataclass(typing.get_args(hint)[1]):
        return _named(typing.get_args(hint)[1], value, key)
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
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not _finite(value):
            raise ConfigError(f"{key}: expected a finite number, got {_describe(value)}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{key}: expected a string, got {_describe(value)}")
        return value
    raise TypeError(f"config field {key} has an unsupported type {hint}")  # a bug in this module


MAX_NAMED = 8  # named entries (cameras) in one mapping: each renders its own images
NAME_PATTERN = re.compile(r"[a-z][a-z0-9_]{0,31}")  # becomes part of topic, node and frame names


def _named(cls, value, key: str) -> dict:
    """A mapping of names to `cls` entries (`cameras:`): each name a lower-case ROS name fragment."""
    if not isinstance(value, dict):
        raise ConfigError(f"{key}: expected a mapping of names to entries, got {_describe(value)}")
    if len(value) > MAX_NAMED:
        raise ConfigError(f"{key}: at most {MAX_NAMED} entries, got {len(value)}")
    for name in value:
        if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
            raise ConfigError(f"{key}: {_short(repr(name), 40)} is not a name: lower-case letters, digits and _, "
                              "starting with a letter, at most 32")
    return {name: _build(cls, entry, f"{key}.{name}.") for name, entry in value.items()}


def _number(x) -> str:
    return str(x) if isinstance(x, int) else f"{x:g}"


def _finite(number) -> bool:
    try:
        return math.isfinite(number)
    except OverflowError:  # an integer beyond any float
        return False


def _check_bounds(cls, name: str, value, key: str) -> None:
    """Every number of a field within BOUNDS (or the defaults MAX_FLOAT / MAX_INT)."""
    numbers = value if isinstance(value, tuple) else (value,)
    for i, number in enumerate(numbers):
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            continue
        default = (0, MAX_INT) if isinstance(number, int) else (-MAX_FLOAT, MAX_FLOAT)
        low, high = BOUNDS.get((cls.__name__, name), default)
        if not low <= number <= high:
            where = f"{key}[{i}]" if isinstance(value, tuple) else key
            raise ConfigError(f"{where}: must be from {_number(low)} to {_number(high)}, "
                              f"got {_short(repr(number), 40)}")


def checked_value(cls, name: str, value, key: str, bounds: bool = True):
    """One field's value as a scene file's would be read (type, number of values, finite, and, with `bounds`,
    within BOUNDS), on its own: the class's checks across fields are `replaced`'s. ConfigError naming `key`."""
    hints = typing.get_type_hints(cls)
    if name not in hints or name == "source":
        raise ConfigError(f"{key}: unknown key")
    value = _convert(hints[name], value, key)
    if bounds:
        _check_bounds(cls, name, value, key)
    return value


def replaced(instance, prefix: str = "", **changes):
    """`instance` with `changes`, as a scene file's values are read: each converted (type, number of values,
    finite), the result checked as a whole (its class's own checks, whose messages say more than a range),
    then each within BOUNDS; ConfigError naming the key otherwise, and nothing changes."""
    values = {name: checked_value(type(instance), name, value, prefix + name, bounds=False)
              for name, value in changes.items()}
    try:
        result = dataclasses.replace(instance, **values)
    except ConfigError as exc:
        raise ConfigError(f"{prefix}{exc}") from None
    for name, value in values.items():
        _check_bounds(type(instance), name, value, prefix + name)
    return result


def check_bounds(instance, prefix: str = "") -> None:
    """Every number of a built config within BOUNDS, as load_config checks it (for values changed at run
    time); ConfigError naming the key otherwise."""
    for f in dataclasses.fields(instance):
        _check_bounds(type(instance), f.name, getattr(instance, f.name), prefix + f.name)


def _describe(value) -> str:
    if value is None:
        return "nothing"
    return f"{type(value).__name__} {_short(repr(value), 80)}"


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
    data.pop("arm" if config.several_arms else "arms")
    return data


def save_config(config: Config, path: str | Path) -> Path:
    path = Path(path)
    path.write_text(yaml.safe_dump(config_to_dict(config), sort_keys=False))
    return path
