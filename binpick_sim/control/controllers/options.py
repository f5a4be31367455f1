"""What a controller's options may be, read from its constructor's defaults: a number (or a list of numbers),
or true/false. The scene file's check (config.CONTROLLER_OPTIONS) is written out below the controllers, which
import the config; test_config compares it with these, so a new option cannot be missed by the check."""
from __future__ import annotations

import inspect

from . import CONTROLLERS


def option_kinds(kind: str) -> tuple[frozenset, frozenset]:
    """(options whose default is a number or a list of numbers, options whose default is true/false)."""
    defaults = {}
    for cls in reversed(CONTROLLERS[kind].__mro__) if kind in CONTROLLERS else ():
        if "__init__" in vars(cls):
            defaults.update({n: p.default for n, p in inspect.signature(cls.__init__).parameters.items()
                             if p.default is not inspect.Parameter.empty})
    numbers, flags = set(), set()
    for name, default in defaults.items():
        numeric = isinstance(default, (int, float)) and not isinstance(default, bool)
        if numeric or (isinstance(default, (tuple, list)) and default
                       and all(isinstance(v, (int, float)) for v in default)):
            numbers.add(name)
        elif isinstance(default, bool):
            flags.add(name)
    return frozenset(numbers), frozenset(flags)
