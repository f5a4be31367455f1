"""Declared parameters with descriptions, so `ros2 param describe` tells a user what each one does."""
from __future__ import annotations

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node
from rclpy.parameter import Parameter


def declare(node: Node, name: str, default, description: str, read_only: bool = False):
    """Declare a parameter and return its value (the override from the command line or launch, if any).

    A `Parameter.Type` as the default declares the type only: the value stays unset (None) until given,
    which is how an array parameter says "none" (rclpy cannot tell the type of an empty list).
    """
    if isinstance(default, Parameter.Type):
        descriptor = ParameterDescriptor(description=description, read_only=read_only)
        return node.declare_parameter(name, default, descriptor).value
    # Floats accept integers too (`-p realtime_factor:=0`), as a user typing on a command line expects.
    is_float = isinstance(default, float)
    descriptor = ParameterDescriptor(description=description, read_only=read_only, dynamic_typing=is_float)
    value = node.declare_parameter(name, default, descriptor).value
    if is_float and not (isinstance(value, (int, float)) and not isinstance(value, bool)):
        raise ValueError(f"parameter {name!r} must be a number, got {value!r}")
    return float(value) if is_float else value
