"""Segmentation ids a user can look up: each pixel of `camera/segmentation/image_raw` names what it shows.

PyBullet's mask holds body ids, which mean nothing outside the simulation and change as objects come
and go. The published image holds instead the id of the object's `world/objects` marker (its `id`, with
the object's name in the marker's `text`), or one of the negative codes below for everything else.
"""
from __future__ import annotations

import numpy as np

NOTHING = -1  # background: nothing within the far plane
ROBOT = -2  # any link of an arm or its gripper
CELL = -3  # the floor, the bins, and any other body that is not an object

CODES = {"nothing": NOTHING, "robot": ROBOT, "cell": CELL}


def label_image(sim, segmentation: np.ndarray) -> np.ndarray:
    """PyBullet body ids per pixel (-1: nothing) to world/objects marker ids, or the codes above (int32)."""
    return relabel(segmentation, {**{arm.body: ROBOT for arm in sim.arms},
                                  **{obj.body: obj.index for obj in sim.scene.objects}})


def relabel(segmentation: np.ndarray, labels: dict[int, int]) -> np.ndarray:
    """Body ids per pixel to `labels[body]`; -1 to NOTHING, any other body to CELL (int32)."""
    size = max([int(segmentation.max(initial=-1)), *labels]) + 2
    table = np.full(size, CELL, dtype=np.int32)  # index body + 1, so that -1 (nothing) is index 0
    table[0] = NOTHING
    for body, label in labels.items():
        table[body + 1] = label
    return table[segmentation + 1]
