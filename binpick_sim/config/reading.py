"""From a scene file to the typed config and back: the file read within bounds (size, UTF-8, no YAML
aliases, nesting), each value converted to its field's type and checked, and a config written out again.
"""
from __future__ import annotations

import dataclasses
import re
import typing
from pathlib import Path
from typing import Literal

import yaml

from .bounds import ConfigError, _check, _check_bounds, _describe, _finite, _short
from .schema import MAX_ARMS, Config

MAX_FILE_BYTES = 1 << 20  # 1 MiB; the default scene file is 3 kB
MAX_DEPTH = 32  # nesting of mappings and lists


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
    """PyYAML's safe loader, refusing aliases and nesting deeper than MAX_DEPTH before building anything, and a
    key given twice in one mapping (PyYAML keeps the last one silently: `seed: 1` then `seed: 2` gave 2)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
            except TypeError:  # a key that cannot be a scene file's key (a list): the build names it
                continue
            if duplicate:
                raise ConfigError(f"{_where(key_node.start_mark, self)}: the key {_short(repr(key), 40)} is given "
                                  "twice in one mapping")
            seen.add(key)
        return super().construct_mapping(node, deep)

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


def with_changes(config: Config, **sections: dict) -> Config:
    """`config` with fields of its sections changed, each section as `replaced` changes it:
    `with_changes(config, camera={"width": 64, "height": 64}, simulation={"renderer": "egl"})`. The one checked
    way from a gym env's arguments, a camera preset or a node's parameters to a config, as from a scene file:
    ConfigError naming the key (a 100000 x 100000 camera went through dataclasses.replace unchecked, issue 53)."""
    return dataclasses.replace(config, **{name: replaced(getattr(config, name), f"{name}.", **changes)
                                          for name, changes in sections.items()})


def required_keys(cls=Config, prefix: str = "") -> list[str]:
    """Dotted paths of every key a scene file must contain (used by tests and doc/scene.md)."""
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
