"""A bad scene file fails at start-up with the file and the key in the message."""
import copy

import pytest
import yaml

from binpick_sim.config import ConfigError, load_config, required_keys
from binpick_sim.paths import default_config, share_dir


@pytest.fixture
def scene_data():
    return yaml.safe_load(default_config().read_text())


def write(tmp_path, data):
    path = tmp_path / "scene.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def drop(data, dotted):
    *parents, last = dotted.split(".")
    for key in parents:
        data = data[key]
    del data[last]


def test_default_scene_loads():
    config = load_config(default_config())
    assert config.scene.pick_bin.size == (0.16, 0.16, 0.04)
    assert len(config.arm.home) == 9


def test_the_one_object_scene_has_panda_gyms_step_and_arm():
    """config/scene_one_object.yaml: PandaPickAndPlace-v3's 0.04 s step in 2 ms physics steps, one box,
    the Panda as panda-gym models it; the rest as the default scene."""
    default = load_config(default_config())
    config = load_config(share_dir() / "config" / "scene_one_object.yaml")
    assert config.simulation.timestep == 0.002 and config.task.steps_per_action == 20
    assert config.simulation.timestep * config.task.steps_per_action == pytest.approx(0.04)
    assert config.scene.pick_bin.min_objects == config.scene.pick_bin.max_objects == 1
    assert (config.scene.object_set, default.scene.object_set) == ("cube", "train")  # a box, as panda-gym's
    assert not (config.arm.self_collision or config.arm.finger_gear or config.arm.finger_force_sensors)
    assert (config.arm.ik_posture, config.arm.ik_iterations, config.arm.ik_rounds) == (False, 20, 0)
    assert (default.arm.ik_posture, default.arm.ik_iterations, default.arm.ik_rounds) == (True, 10, 6)
    assert default.arm.self_collision and default.arm.finger_gear and default.arm.finger_force_sensors
    assert config.scene.pick_bin.position == default.scene.pick_bin.position and config.camera == default.camera


def test_every_required_key_is_named_when_missing(tmp_path, scene_data):
    keys = required_keys()
    assert {"scene.pick_bin.position", "arm.base_position", "camera.position"} <= set(keys)
    for key in keys:
        data = copy.deepcopy(scene_data)
        drop(data, key)
        with pytest.raises(ConfigError, match=rf"{key.replace('.', '[.]')}: required key is missing"):
            load_config(write(tmp_path, data))


@pytest.mark.parametrize("key, value, expected", [
    ("scene.pick_bin.size", [0.1, 0.1], "scene.pick_bin.size: expected 3 values, got 2"),
    ("scene.pick_bin.size", "big", "scene.pick_bin.size: expected a list"),
    ("scene.pick_bin.min_objects", 2.5, "scene.pick_bin.min_objects: expected an integer"),
    ("scene.pick_bin.max_objects", 0, "scene.pick_bin.max_objects: must be >= min_objects"),
    ("scene.object_set", "validation", "scene.object_set: expected one of"),
    ("scene.object_set", "cubes", "scene.object_set: expected one of ['train', 'test', 'cube']"),
    ("scene.object_set", ["cube"], "scene.object_set: expected one of"),
    ("scene.spawn", "everywhere", "scene.spawn: expected one of ['rows', 'anywhere']"),
    ("simulation.timestep", -1, "simulation.timestep: must be > 0"),
    ("simulation.gui", "yes", "simulation.gui: expected true or false"),
    ("arm.home", [0.0] * 7, "arm.home: needs 9 values"),
    ("camera.fov_deg", float("nan"), "camera.fov_deg: expected a finite number"),
    ("camera.width", 0, "camera.width: must be > 0"),
    ("camera.far", 0.001, "camera.far: must be > near"),
    ("arm.ik_iterations", 0, "arm.ik_iterations: must be in [1, 10000]"),
    ("arm.ik_iterations", 2**63, "arm.ik_iterations: must be in [1, 10000]"),
    ("arm.ik_iterations", 20.5, "arm.ik_iterations: expected an integer"),
    ("arm.ik_rounds", -1, "arm.ik_rounds: must be in [0, 100]"),
    ("arm.self_collision", "no", "arm.self_collision: expected true or false"),
    ("arm.finger_gear", 1, "arm.finger_gear: expected true or false"),
    ("arm.ik_posture", "yes", "arm.ik_posture: expected true or false"),
    ("arm.ik_posture", 0, "arm.ik_posture: expected true or false"),
])
def test_mistyped_values_name_the_key(tmp_path, scene_data, key, value, expected):
    data = copy.deepcopy(scene_data)
    *parents, last = key.split(".")
    node = data
    for part in parents:
        node = node[part]
    node[last] = value
    with pytest.raises(ConfigError, match=expected.replace("[", r"\[").replace(".", "[.]")):
        load_config(write(tmp_path, data))


def test_unknown_key_is_a_typo(tmp_path, scene_data):
    scene_data["scene"]["pick_bin"]["sise"] = [1, 1, 1]
    with pytest.raises(ConfigError, match=r"scene[.]pick_bin[.]sise: unknown key"):
        load_config(write(tmp_path, scene_data))


@pytest.mark.parametrize("where", ["top", "nested"])
def test_a_key_given_twice_is_refused_naming_it_and_its_line(tmp_path, where):
    """PyYAML keeps the last of two equal keys without a word; a scene file that says a value twice is a
    mistake of one of them (issue 53, item 7)."""
    text = default_config().read_text()
    if where == "top":
        text += "\nsimulation:\n  seed: 1\n"
        match = r"line \d+, column 1: the key 'simulation' is given twice"
    else:
        text = text.replace("simulation:\n", "simulation:\n  seed: 1\n  seed: 2\n", 1)
        match = r"line \d+, column 3: the key 'seed' is given twice"
    path = tmp_path / "twice.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=match):
        load_config(path)


def test_unreadable_and_invalid_files(tmp_path):
    with pytest.raises(ConfigError, match="cannot read the scene file"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("scene: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)
    bad.write_text("- a list")
    with pytest.raises(ConfigError, match="top level: expected a mapping"):
        load_config(bad)


def test_controller_option_kinds_match_the_controllers():
    """The scene file's check of `controller.options` (written out in config, below the controllers) knows
    every option of every controller with the kind of its constructor's default: a new option or a changed
    default fails here instead of slipping past the load-time check."""
    from binpick_sim.config import CONTROLLER_OPTIONS, CONTROLLER_TYPES
    from binpick_sim.control.controllers import CONTROLLERS
    from binpick_sim.control.controllers.options import option_kinds

    assert set(CONTROLLER_OPTIONS) == set(CONTROLLERS) == set(CONTROLLER_TYPES) - {"none"}
    for kind in CONTROLLERS:
        assert CONTROLLER_OPTIONS[kind] == option_kinds(kind), kind
