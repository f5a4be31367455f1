"""What a controller's options may be, read from its constructor: the scene file's `controller.options`
are checked against it at load time, so `kp: high` names the key instead of failing in numpy later."""
from __future__ import annotations

import inspect

from . import CONTROLLERS


def option_problems(kind: str, options: dict) -> list[tuple[str, str]]:
    """(option, why) for each option whose value cannot be of the kind its default is: a number where the
    controller's default is a number (kp: high), a name where it is a name. Unknown options are left to
    make_controller, which names them."""
    defaults = {}
    for cls in reversed(CONTROLLERS[kind].__mro__) if kind in CONTROLLERS else ():
        if "__init__" in vars(cls):
            defaults.update({n: p.default for n, p in inspect.signature(cls.__init__).parameters.items()
                             if p.default is not inspect.Parameter.empty})
    problems = []
    for name, value in options.items():
        default = defaults.get(name)
        numeric = isinstance(default, (int, float)) and not isinstance(default, bool)
        numbers = numeric or (isinstance(default, (tuple, list)) and default
                              and all(isinstance(v, (int, float)) for v in default))
        if numbers and not _numbers(value):
            problems.append((name, "expected a number or a list of numbers"))
        elif isinstance(default, bool) and not isinstance(value, bool):
            problems.append((name, "expected true or false"))
    return problems


def _numbers(value) -> bool:
    values = value if isinstance(value, (list, tuple)) else [value]
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
