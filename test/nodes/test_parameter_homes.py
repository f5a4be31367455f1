"""Every ROS parameter's default and range come from config/ (config/parameters.py's table): read back from
the nodes' own descriptors, as `ros2 param describe` shows them, so a value written a second time in a node
(or missing from the table) fails here."""
from helpers import parameters

from binpick_sim.config import load_config
from binpick_sim.config.parameters import PARAMETERS, Unset, scene_value
from binpick_sim.paths import default_config

ROS_OWN = {"use_sim_time", "start_type_description_service"}  # declared by rclpy itself
TURNED_ON = {"task": True, "reasoning": True, "robot_interface": True}  # every node of the stack built


def test_every_parameter_has_its_default_and_range_from_config(ros_context):
    from binpick_sim.nodes.process.stack import SimStack
    from binpick_sim.nodes.servers import trajectory_actions

    scene = load_config(default_config())
    stack = SimStack(ros_context, {"world": parameters(**TURNED_ON)})
    try:
        tables_seen = set()
        for node in stack.nodes:
            declared = set(node.get_parameters_by_prefix("")) - ROS_OWN
            table_name = getattr(node, "parameter_table", None)
            if table_name is None:
                assert not declared, f"{node.get_name()} declares {sorted(declared)} outside config/parameters.py"
                continue
            tables_seen.add(table_name)
            table = PARAMETERS[table_name]
            assert declared <= set(table), f"{node.get_name()}: not in config/parameters.py: {declared - set(table)}"
            missing = set(table) - declared
            if table_name == "arm" and not trajectory_actions.available():
                missing = {name for name in missing if "." not in name and not name.startswith("allow_")}
            assert not missing, f"{node.get_name()}: in the table but not declared: {sorted(missing)}"
            for name in declared:
                _check(node, name, table[name], scene)
        assert {"world", "arm", "camera", "task", "reasoning", "robot"} <= tables_seen
    finally:
        stack.close()


def _check(node, name, entry, scene) -> None:
    where = f"{node.get_name()}.{name}"
    descriptor = node.describe_parameter(name)
    ranges = list(descriptor.floating_point_range) + list(descriptor.integer_range)
    if entry.low is None:
        assert not ranges, f"{where}: a range the table does not give"
    else:
        assert len(ranges) == 1, f"{where}: no range in its descriptor"
        assert (ranges[0].from_value, ranges[0].to_value) == (entry.low, entry.high), where
    if isinstance(entry.default, Unset):  # a type and no value: rclpy refuses to read it
        from rcl_interfaces.msg import ParameterType

        kinds = {"string_array": ParameterType.PARAMETER_STRING_ARRAY, "double_array": ParameterType.PARAMETER_DOUBLE_ARRAY}
        assert descriptor.type == kinds[entry.default.kind], where
        return
    value = node.get_parameter(name).value
    if node.get_name() == "world" and name in TURNED_ON:
        return  # set by this test
    if entry.given:
        expected = str(default_config())
    elif entry.scene_key is not None:
        expected = scene_value(scene, entry.scene_key)
    else:
        expected = entry.default
    assert value == expected, f"{where}: {value!r}, config/parameters.py says {expected!r}"
