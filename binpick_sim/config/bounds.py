"""What a value in a scene file may be: the bounds of every number (BOUNDS, MAX_FLOAT, MAX_INT), the error
that names the key, and the checks that raise it.

Kept apart from the dataclasses (schema.py) and the reading of a file (reading.py): both check values the
same way, and a node checks a value changed at run time against the same bounds (check_bounds).
"""
from __future__ import annotations

import dataclasses
import math

MAX_FLOAT = 1e6  # any real number in the file, unless BOUNDS says otherwise
MAX_INT = 10 ** 9  # any integer in the file, unless BOUNDS says otherwise
MAX_OBJECTS = 200  # per bin: loading and settling 200 objects takes seconds, 10**6 took minutes and GBs
# Every seed: numpy's default_rng (cell/world.py) and Gymnasium's reset take any integer >= 0, and a ROS
# integer parameter (the world node's seed) holds an int64, the narrowest of the three.
MAX_SEED = 2 ** 63 - 1
# realtime_factor: 0 runs as fast as possible; a positive one below this waits minutes a step (1e-300 overflowed)
MIN_REALTIME_FACTOR = 0.01
MAX_STEP_REQUEST = 100_000  # physics steps one request may ask for (7 sim minutes at 240 Hz); 2**32-1 was 30 days
# A bin shake's parameters, inclusive of the upper bound: beyond them a bin leaves its place (5 cm is a third of
# the default bin) or the motion outruns a 240 Hz step.
MIN_SHAKE = 1e-4  # the lower bound of each as a ROS parameter (a shake of 0 is none)
MAX_SHAKE_AMPLITUDE = 0.05  # m
MAX_SHAKE_FREQUENCY = 10.0  # Hz
MAX_SHAKE_DURATION = 60.0  # s
# Pixels of one camera frame (width x height): 2048 x 2048. Each frame goes from the render worker to the
# camera node and out on up to six topics; 4096 x 4096 with the cloud and the segmentation made 3.2 GB at
# the peak and stalled the physics thread for seconds (doc/robustness.md "Bad input").
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


def _describe(value) -> str:
    if value is None:
        return "nothing"
    return f"{type(value).__name__} {_short(repr(value), 80)}"


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


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


def check_bounds(instance, prefix: str = "") -> None:
    """Every number of a built config within BOUNDS, as load_config checks it (for values changed at run
    time); ConfigError naming the key otherwise."""
    for f in dataclasses.fields(instance):
        _check_bounds(type(instance), f.name, getattr(instance, f.name), prefix + f.name)


def realtime_factor_problem(value: float) -> str | None:
    """Why a realtime_factor cannot be used beyond its range, or None: 0 or at least MIN_REALTIME_FACTOR."""
    if 0 < value < MIN_REALTIME_FACTOR:
        return f"needs 0 (as fast as possible) or at least {MIN_REALTIME_FACTOR:g}, got {value!r}"
    return None
