"""The boxes a bin is made of, as pure geometry (no PyBullet), so that the simulation and the robot
description build the same bin, and the description executable never imports PyBullet (which prints
its build time on stderr, and launch's `Command` substitution fails on any stderr output)."""
from __future__ import annotations

from ...config import BinConfig


def bin_boxes(config: BinConfig) -> list[tuple[list[float], list[float]]]:
    """(half extents, centre) of a bin's floor and four walls, in the bin frame (the centre of its
    underside)."""
    length, width, height = config.size
    t = config.wall_thickness
    return [
        ([length / 2, width / 2, t / 2], [0, 0, t / 2]),
        ([t / 2, width / 2, height / 2], [length / 2 - t / 2, 0, height / 2]),
        ([t / 2, width / 2, height / 2], [-length / 2 + t / 2, 0, height / 2]),
        ([length / 2 - t, t / 2, height / 2], [0, width / 2 - t / 2, height / 2]),
        ([length / 2 - t, t / 2, height / 2], [0, -width / 2 + t / 2, height / 2]),
    ]
