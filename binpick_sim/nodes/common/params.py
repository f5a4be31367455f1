"""Declared parameters with descriptions and ranges, checked the same way at start-up and at run time.

Every parameter is declared through `declare`, by its name: its default and range come from
`config/parameters.py`'s table (the node's `parameter_table` names its part), which puts the range into
the descriptor (`FloatingPointRange` / `IntegerRange`), so that `ros2 param describe` shows it, and
records its check (type, range, and any extra rule). One on-set callback per node runs those checks for
every value a parameter ever gets: the override from the command line or a launch file (rclpy runs the
callback when a parameter is declared, so a bad one stops start-up with the parameter's name and the
reason) and every later `ros2 param set`. A value that passes is handed to the parameter's `on_change`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, SetParametersResult
from rclpy.node import Node
from rclpy.parameter import Parameter

from ...config.parameters import PARAMETERS, NodeParameter, Unset, scene_value

_UNSET_TYPES = {"string_array": Parameter.Type.STRING_ARRAY, "double_array": Parameter.Type.DOUBLE_ARRAY}


@dataclass(frozen=True)
class _Rule:
    kind: type | None  # float, int, bool, str, or None for a typed-only (array) parameter
    low: float | None
    high: float | None
    check: Callable[[object], str | None] | None
    on_change: Callable[[object], None] | None

    def problem(self, value) -> str | None:
        """Why `value` cannot be used, or None."""
        if self.kind is float:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                return f"needs a finite number, got {_quote(value)}"
        elif self.kind is int:
            if isinstance(value, bool) or not isinstance(value, int):
                return f"needs an integer, got {_quote(value)}"
        elif self.kind is bool and not isinstance(value, bool):
            return f"needs true or false, got {_quote(value)}"
        elif self.kind is str and not isinstance(value, str):
            return f"needs a string, got {_quote(value)}"
        if self.low is not None and self.high is not None and not self.low <= value <= self.high:
            return f"needs a value from {self.low:g} to {self.high:g}, got {_quote(value)}"
        return self.check(value) if self.check is not None and value is not None else None


def spec(node: Node, name: str) -> NodeParameter:
    """The table's entry for one of `node`'s parameters (config/parameters.py, the part `node.parameter_table`)."""
    return PARAMETERS[node.parameter_table][name]


def declare(node: Node, name: str, description: str, read_only: bool = False,
            check: Callable[[object], str | None] | None = None,
            on_change: Callable[[object], None] | None = None, scene=None, default=None):
    """Declare a parameter and return its value (the override from the command line or launch, if any).

    Its default and its range (inclusive, shown in the descriptor) are the table's (`spec`); `scene`: the
    config (or the section) whose value a scene-file parameter starts from; `default`: the value where the
    table says the node gives it. `check(value)`: any further rule, returning why a value is wrong or None;
    `on_change(value)`: called with each accepted run-time value. A parameter whose default is Unset has
    its type only: the value stays unset (None) until given, which is how an array parameter says "none".
    Floats accept integers too (`-p realtime_factor:=0`), as a user typing on a command line expects.
    """
    entry = spec(node, name)
    low, high = entry.low, entry.high
    if entry.given:
        value = default
    elif entry.scene_key is not None:
        value = scene_value(scene, entry.scene_key)
    elif isinstance(entry.default, Unset):
        value = _UNSET_TYPES[entry.default.kind]
    else:
        value = list(entry.default) if isinstance(entry.default, list) else entry.default
    return _declare(node, name, value, description, read_only, low, high, check, on_change)


def _declare(node: Node, name: str, default, description: str, read_only: bool, low, high, check, on_change):
    rules = _rules(node)
    typed_only = isinstance(default, Parameter.Type)
    kind = None if typed_only else next(t for t in (bool, int, float, str, object) if isinstance(default, t))
    kind = None if kind is object else kind
    is_float = kind is float
    descriptor = ParameterDescriptor(description=description + _range_text(low, high), read_only=read_only,
                                     dynamic_typing=is_float)
    if low is not None and high is not None:
        if is_float:
            descriptor.floating_point_range = [FloatingPointRange(from_value=float(low), to_value=float(high),
                                                                  step=0.0)]
        elif kind is int:
            descriptor.integer_range = [IntegerRange(from_value=int(low), to_value=int(high), step=1)]
    rules[name] = _Rule(kind, low, high, check, None)  # on_change only after the declared value is in
    value = node.declare_parameter(name, default, descriptor).value
    rules[name] = _Rule(kind, low, high, check, on_change)
    return float(value) if is_float else value


@dataclass(frozen=True)
class _Group:
    names: frozenset
    check: Callable[[dict], str | None]
    on_change: Callable[[dict], None]


def group(node: Node, names, check: Callable[[dict], str | None], on_change: Callable[[dict], None]) -> None:
    """Declared parameters that only mean something together (a camera's size, lens and mount): once each
    value passes its own rules, `check({name: value})` gets every one of them set in the same call of the
    on-set callback and says why they cannot be used together with the rest (or None), and `on_change` gets
    them once, so that `near` and `far` set in one atomic request (rclpy calls the callback once per
    parameter for a plain `set_parameters`) are judged as a pair, not one by one against the old other."""
    _rules(node)
    node._binpick_parameter_groups.append(_Group(frozenset(names), check, on_change))


def _rules(node: Node) -> dict[str, _Rule]:
    rules = getattr(node, "_binpick_parameter_rules", None)
    if rules is None:
        rules = node._binpick_parameter_rules = {}
        groups = node._binpick_parameter_groups = []
        node.add_on_set_parameters_callback(lambda parameters: _validate(rules, parameters, groups))
    return rules


def _validate(rules: dict[str, _Rule], parameters: list[Parameter], groups=()) -> SetParametersResult:
    for p in parameters:
        rule = rules.get(p.name)
        problem = rule.problem(p.value) if rule is not None else None
        if problem:
            return SetParametersResult(successful=False, reason=f"{p.name}: {problem}")

    def value(p: Parameter):
        rule = rules.get(p.name)
        return float(p.value) if rule is not None and rule.kind is float else p.value

    together = [(g, {p.name: value(p) for p in parameters if p.name in g.names}) for g in groups]
    together = [(g, values) for g, values in together if values]
    for g, values in together:
        problem = g.check(values)
        if problem:
            return SetParametersResult(successful=False, reason=f"{', '.join(values)}: {problem}")
    for p in parameters:
        rule = rules.get(p.name)
        if rule is not None and rule.on_change is not None:
            rule.on_change(value(p))
    for g, values in together:
        g.on_change(values)
    return SetParametersResult(successful=True)


def _range_text(low, high) -> str:
    return "" if low is None or high is None else f" Range: {low:g} to {high:g}."


def _quote(value, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"
