"""The scene file: one YAML document read into typed, validated dataclasses.

Validation happens once, at start-up, so that a typo or a wrong type fails with the key's
dotted path instead of surfacing as a PyBullet error minutes later. Fields without a default
are required; unknown keys are errors (they are almost always typos).

A scene file is untrusted input, so reading it is bounded before anything is built: at most
MAX_FILE_BYTES of UTF-8 text, YAML aliases refused (a "billion laughs" document expands a few lines
into gigabytes), nesting at most MAX_DEPTH deep, and every number within its key's bounds (BOUNDS; a
key not listed there: |x| <= MAX_FLOAT for reals, 0..MAX_INT for integers), so that no value can ask
for minutes of loading, gigabytes of memory or an image the renderer cannot hold.

The parts, one idea each: bounds.py (what a value may be, and the error naming its key), schema.py (the
sections as dataclasses), reading.py (file to config and back), parameters.py (every ROS parameter's default
and range). The names other packages use are importable from here.
"""
from .bounds import (  # noqa: F401
    BOUNDS, ConfigError, MAX_CAMERA_PIXELS, MAX_FLOAT, MAX_INT, MAX_OBJECTS, MAX_SEED, MAX_SHAKE_AMPLITUDE,
    MAX_SHAKE_DURATION, MAX_SHAKE_FREQUENCY, MAX_STEP_REQUEST, MIN_REALTIME_FACTOR, check_bounds,
    realtime_factor_problem)
from .schema import (  # noqa: F401
    ARM_JOINTS, ARM_NAME, ArmConfig, BinConfig, CONTROLLER_OPTIONS, CONTROLLER_TYPES, CameraConfig,
    Config, ControllerConfig, MAX_ARMS, RESERVED_ARM_NAMES, SceneConfig, SimulationConfig, TaskConfig,
    Vec3, option_problems)
from .reading import (  # noqa: F401
    MAX_DEPTH, MAX_FILE_BYTES, MAX_NAMED, NAME_PATTERN, checked_value, config_from_dict, config_to_dict,
    load_config, replaced, required_keys, save_config, with_changes)
