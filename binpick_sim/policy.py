"""A scripted (non-learned) top-down picker: choose an object, approach, descend, close, lift.

It only needs what a ROS client can see: the gripper's pose and, per object, its pose and mesh
(the `world/objects` markers carry both), so the same code drives the in-process core, the ROS
demo and the gym envs.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

APPROACH_HEIGHT = 0.10  # metres above the grasp point before descending
LIFT_HEIGHT = 0.15  # metres above the grasp point when lifting (clear of the bins' rims)


@dataclass(frozen=True)
class ObjectView:
    name: str
    position: np.ndarray  # world, metres
    orientation: np.ndarray  # xyzw
    vertices: np.ndarray  # N x 3 mesh vertices in the object frame, scaled to metres

    def world_vertices(self) -> np.ndarray:
        return Rotation.from_quat(self.orientation).apply(self.vertices) + self.position


@dataclass(frozen=True)
class Grasp:
    name: str
    position: np.ndarray  # grasp-target point (between the fingertips), world frame
    yaw: float  # gripper yaw so the fingers close across the object's narrow side

    def waypoints(self) -> list[tuple[str, np.ndarray | None, float]]:
        """(phase, target position or None, gripper command) in order: +1 open, -1 close."""
        above = self.position + [0, 0, APPROACH_HEIGHT]
        return [("approach", above, 1.0), ("descend", self.position, 1.0), ("close", None, -1.0),
                ("lift", self.position + [0, 0, LIFT_HEIGHT], -1.0)]


@lru_cache(maxsize=64)
def obj_vertices(path: str) -> np.ndarray:
    """Vertex positions of a Wavefront OBJ file (unscaled)."""
    rows = [line.split()[1:4] for line in Path(path).read_text().splitlines() if line.startswith("v ")]
    return np.array(rows, dtype=float)


def choose_grasp(objects: list[ObjectView], exclude: set[str] = frozenset()) -> Grasp | None:
    """The object with the most free room around it, grasped at its centre across its narrow side."""
    candidates = [o for o in objects if o.name not in exclude]
    if not candidates:
        return None
    centres = {o.name: _footprint_centre(o) for o in objects}

    def clearance(obj: ObjectView) -> float:
        others = [np.linalg.norm(centres[o.name][:2] - centres[obj.name][:2]) for o in objects if o is not obj]
        return min(others, default=np.inf) - 0.5 * centres[obj.name][2]  # prefer free and not stacked

    best = max(candidates, key=clearance)
    return Grasp(best.name, centres[best.name], _narrow_side_yaw(best))


def _footprint_centre(obj: ObjectView) -> np.ndarray:
    points = obj.world_vertices()
    return (points.min(axis=0) + points.max(axis=0)) / 2


def _narrow_side_yaw(obj: ObjectView) -> float:
    """Yaw that lines the gripper's x axis (between the fingers' faces) up with the object's long axis."""
    xy = obj.world_vertices()[:, :2]
    _, vectors = np.linalg.eigh(np.cov((xy - xy.mean(axis=0)).T))
    major = vectors[:, 1]
    return float(np.arctan2(major[1], major[0]))


def yaw_step(current: float, target: float) -> float:
    """Smallest turn from `current` to `target`, knowing the gripper looks the same every half turn."""
    return float((target - current + np.pi / 2) % np.pi - np.pi / 2)
