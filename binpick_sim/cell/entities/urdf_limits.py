"""Bounds on every number of a client's URDF, checked before PyBullet sees the file, and on the body
PyBullet made of it, checked before the world takes a step with it.

One spawned mesh with `scale="1e300 1e300 1e300"` turns the ground's pose NaN for good (through
the broad phase and the contact solver, so deleting the object and resetting did not help), and NaN or
1e308 in an inertial, a size or a mass made NaN objects. PyBullet checks none of these numbers, so each
one is checked here: finite, of the right count, and within the bounds of NUMBERS (an attribute the
table does not name, such as PyBullet's `<contact>` extensions, within ±OTHER_LIMIT). A mesh's own
units are unknown until it is loaded, so the loaded body is checked too: every link's box finite and at
most MAX_EXTENT on a side, every mass and inertia finite. Messages say where (the element's path, by
position) and which bound; they quote the document's values only where the client sent its text.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass

import numpy as np

MAX_EXTENT = 2.0  # m: a spawned link's box on any side (the cell's bins are 0.3-0.5 m)
OTHER_LIMIT = 1e8  # any other number
MAX_DEPTH = 32  # elements nested in a URDF


@dataclass(frozen=True)
class Bound:
    count: int  # how many numbers the attribute holds (0: any number of them)
    low: float
    high: float
    nonzero: bool = False  # |value| must also be at least `low_magnitude` (a zero scale collapses a mesh)
    low_magnitude: float = 0.0


LENGTH = Bound(1, 0.0, MAX_EXTENT)
# (element, attribute): what each number must be. Lengths in m, angles in rad, masses in kg.
NUMBERS = {
    ("origin", "xyz"): Bound(3, -10.0, 10.0),
    ("origin", "rpy"): Bound(3, -10.0, 10.0),
    ("axis", "xyz"): Bound(3, -1e3, 1e3),
    ("mass", "value"): Bound(1, 0.0, 1000.0),
    **{("inertia", k): Bound(1, 0.0, 1000.0) for k in ("ixx", "iyy", "izz")},
    **{("inertia", k): Bound(1, -1000.0, 1000.0) for k in ("ixy", "ixz", "iyz")},
    ("box", "size"): Bound(3, 0.0, MAX_EXTENT),
    ("cylinder", "radius"): LENGTH, ("cylinder", "length"): LENGTH,
    ("capsule", "radius"): LENGTH, ("capsule", "length"): LENGTH,
    ("sphere", "radius"): LENGTH,
    ("mesh", "scale"): Bound(3, -1000.0, 1000.0, nonzero=True, low_magnitude=1e-6),
    ("limit", "lower"): Bound(1, -1e4, 1e4), ("limit", "upper"): Bound(1, -1e4, 1e4),
    ("limit", "effort"): Bound(1, 0.0, 1e6), ("limit", "velocity"): Bound(1, 0.0, 1e4),
    ("dynamics", "damping"): Bound(1, 0.0, 1e4), ("dynamics", "friction"): Bound(1, 0.0, 1e4),
    ("color", "rgba"): Bound(4, 0.0, 1.0),
}
MIN_MASS = 1e-6  # kg: a mass is 0 (PyBullet: fixed in place) or at least this (1e-300 kg floats in mid-air)
# attributes that hold names or files, never numbers (a link named "1e5" is a name)
TEXT = {"name", "filename", "link", "joint", "type", "parent", "child", "version"}


class NumberError(ValueError):
    """A number of the document outside its bound; the message says where and why."""


def _where(path: list[str]) -> str:
    return "/".join(path)


def check_numbers(root: ElementTree.Element, echo: bool) -> None:
    """Raise NumberError for the first number out of bounds (document order) or for elements nested
    deeper than MAX_DEPTH (a URDF needs 5; serialising a deeper tree recurses); `echo` quotes values.
    Iterative: no recursion limit to hit, whatever the document."""
    pending = [(root, [root.tag])]
    while pending:
        element, path = pending.pop()
        if len(path) > MAX_DEPTH:
            raise NumberError(f"elements nested more than {MAX_DEPTH} deep")
        for key, text in element.attrib.items():
            bound = NUMBERS.get((element.tag, key))
            if bound is None and key in TEXT:
                continue
            _check(element, key, text, bound, path, echo)
        counts: dict[str, int] = {}
        children = []
        for child in element:
            counts[child.tag] = counts.get(child.tag, 0) + 1
            children.append((child, path + [f"{str(child.tag)[:50]}[{counts[child.tag]}]"]))
        pending += reversed(children)


def _check(element, key, text, bound: Bound | None, path, echo) -> None:
    where = f"{_where(path)} {key}"
    shown = f" {text[:80]!r}" if echo else ""
    try:
        values = [float(v) for v in text.split()]
    except ValueError:
        if bound is None:
            return  # not a number: an attribute this check does not know
        raise NumberError(f"{where}:{shown} is not {bound.count} number(s)") from None
    if bound is None:
        if values and not all(math.isfinite(v) and abs(v) <= OTHER_LIMIT for v in values):
            raise NumberError(f"{where}:{shown} must be finite and within ±{OTHER_LIMIT:g}")
        return
    if bound.count and len(values) != bound.count:
        raise NumberError(f"{where}:{shown} holds {len(values)} number(s), not {bound.count}")
    for v in values:
        if not math.isfinite(v):
            raise NumberError(f"{where}:{shown} is not finite")
        if not bound.low <= v <= bound.high:
            raise NumberError(f"{where}:{shown} must lie in {bound.low:g} … {bound.high:g}")
        if bound.nonzero and abs(v) < bound.low_magnitude:
            raise NumberError(f"{where}:{shown} must be at least {bound.low_magnitude:g} in magnitude")
        if (element.tag, key) == ("mass", "value") and 0 < v < MIN_MASS:
            raise NumberError(f"{where}:{shown} must be 0 (fixed) or at least {MIN_MASS:g} kg")


def body_problem(client, body: int) -> str | None:
    """Why a freshly loaded body must not join the world (not finite, or a link larger than MAX_EXTENT),
    or None."""
    for link in range(-1, client.getNumJoints(body)):
        low, high = (np.asarray(corner, float) for corner in client.getAABB(body, link))
        if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
            return f"link {link + 1}'s box as loaded is not finite"
        if np.any(high - low > MAX_EXTENT + 0.1):  # + PyBullet's contact margins
            return f"link {link + 1} as loaded is {np.max(high - low):.3g} m across: at most {MAX_EXTENT:g} m"
        dynamics = client.getDynamicsInfo(body, link)
        if not (math.isfinite(dynamics[0]) and np.all(np.isfinite(dynamics[2]))):
            return f"link {link + 1}'s mass or inertia as loaded is not finite"
    return None
