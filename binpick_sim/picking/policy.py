"""A scripted (non-learned) top-down picker: choose an object, approach, descend, close, lift.

It only needs what a ROS client can see: the gripper's pose and, per object, its pose and mesh
(the `world/objects` markers carry both), plus the bin's place and size from the scene file, so the
same code drives the in-process core, the ROS demo and the gym envs.

A grasp is chosen so that the open fingers come down on free floor: inside the bin's walls and
clear of the other objects. Otherwise the fingers land on a rim or a neighbour, which in the reference simulator's
rules ends the episode (arm-bin contact) or leaves the object untouched.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..cell.objects.shapes import ObjectView

APPROACH_HEIGHT = 0.10  # metres above the grasp point before descending
LIFT_HEIGHT = 0.15  # metres above the grasp point when lifting (clear of the bins' rims)
FINGER_REACH = 0.047  # half the open span at the fingers' widest (they flare out above the pads)
FINGER_HALF_WIDTH = 0.013  # a finger pad's half width along the gripper's x axis
WALL_CLEARANCE = 0.003  # metres between a finger and the inside of a wall
NEIGHBOUR_CLEARANCE = 0.004  # metres between a finger and another object


@dataclass(frozen=True)
class BinInterior:
    """The free space inside a bin's walls, seen from above: centre, yaw and half extents [m]."""

    centre: np.ndarray  # world x, y
    yaw: float
    half_extents: np.ndarray  # along the bin's own x, y

    @classmethod
    def from_config(cls, bin_config) -> "BinInterior":
        length, width, _ = bin_config.size
        wall = bin_config.wall_thickness
        return cls(np.asarray(bin_config.position[:2], float), float(np.radians(bin_config.orientation_deg[2])),
                   np.array([length / 2 - wall, width / 2 - wall]))

    def margin(self, points_xy: np.ndarray) -> float:
        """Smallest distance of the points to the walls (negative: some point is outside)."""
        c, s = np.cos(self.yaw), np.sin(self.yaw)
        local = (points_xy - self.centre) @ np.array([[c, -s], [s, c]])
        return float(np.min(self.half_extents - np.abs(local)))


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


def finger_points(centre_xy: np.ndarray, yaw: float) -> np.ndarray:
    """Points outlining the two open fingers, seen from above, for a grasp at centre_xy and yaw."""
    x_axis = np.array([np.cos(yaw), np.sin(yaw)])
    y_axis = np.array([-np.sin(yaw), np.cos(yaw)])
    offsets = [side * reach * y_axis + along * FINGER_HALF_WIDTH * x_axis
               for side in (-1, 1) for reach in (0.022, 0.035, FINGER_REACH) for along in (-1, 0, 1)]
    return centre_xy + np.array(offsets)


ENOUGH_ROOM = 0.006  # m: more room than this around the fingers is no better (then the natural grasp wins)
WALL_WEIGHT = 4.0  # a finger short of the wall counts this much more than one short of a neighbour: touching a
#                    wall ends the episode (the task's bin collision), nudging a neighbour does not
YAW_SWEEP = 12  # other gripper yaws tried, evenly over a half turn, when the object's own ones lack room
SHIFTS = (0.0, -0.006, 0.006, -0.012, 0.012)  # m the grasp point moves along the closing direction (the
#                    fingers open 8 cm, the objects are at most 3 cm: the object stays between them)
YAW_PENALTY = 0.002  # m of room a yaw other than the object's own costs (it closes on a wider side)
SHIFT_PENALTY = 0.1  # m of room per m of shift (an off-centre grasp pushes the object before it holds it)


def choose_grasp(objects: list[ObjectView], exclude: set[str] = frozenset(),
                 interior: BinInterior | None = None) -> Grasp | None:
    """The grasp whose open fingers have room enough: across the object's narrow side (or turned a
    quarter for a roundish object), inside the bin's walls, away from the other objects. Where that
    leaves too little room (an object beside a wall), other yaws and a grasp point moved along the
    closing direction are tried, each at a small cost, the walls' clearance weighing most."""
    candidates = [o for o in objects if o.name not in exclude]
    if not candidates:
        return None
    points = {o.name: o.world_vertices() for o in objects}
    outlines = {name: _outline(p[:, :2]) for name, p in points.items()}  # seen from above: enough for the gaps
    best, best_score = None, -np.inf
    for obj in candidates:
        mine = points[obj.name]
        centre = (mine.min(axis=0) + mine.max(axis=0)) / 2
        others = np.concatenate([outlines[o.name] for o in objects if o is not obj] or [np.empty((0, 2))])
        flat = 0.3 * (centre[2] - mine[:, 2].min())  # prefer lying flat
        own = _yaw_choices(mine)
        yaws = own + [own[0] + np.pi * k / YAW_SWEEP for k in range(1, YAW_SWEEP)]
        tries = [(yaw, shift, (0.0 if i < len(own) else YAW_PENALTY) + SHIFT_PENALTY * abs(shift))
                 for i, yaw in enumerate(yaws) for shift in SHIFTS]
        yaw = np.array([t[0] for t in tries])
        shift = np.array([t[1] for t in tries])
        across = np.stack([-np.sin(yaw), np.cos(yaw)], axis=1)  # the fingers close along the gripper's y
        spots = centre[:2] + shift[:, None] * across
        rooms = _rooms(np.stack([finger_points(p, y) for p, y in zip(spots, yaw)]), others, interior)
        scores = np.minimum(rooms, ENOUGH_ROOM) + 0.01 * rooms - np.array([t[2] for t in tries]) - flat
        k = int(np.argmax(scores))  # the first of equals: the object's own yaw, unshifted
        if scores[k] > best_score:
            best, best_score = Grasp(obj.name, np.array([*spots[k], centre[2]]), float(yaw[k])), float(scores[k])
    return best


def _outline(xy: np.ndarray) -> np.ndarray:
    """The corners of the convex outline of points seen from above (all of them if they are too few)."""
    from scipy.spatial import ConvexHull, QhullError

    try:
        return xy[ConvexHull(xy).vertices]
    except (QhullError, ValueError):
        return xy


def _rooms(fingers: np.ndarray, others: np.ndarray, interior: BinInterior | None) -> np.ndarray:
    """Free space around each of K finger placements (K × points × 2): the tighter of the wall and
    neighbour clearances [m], a wall's shortfall weighted by WALL_WEIGHT."""
    count = len(fingers)
    wall = (np.array([interior.margin(f) for f in fingers]) - WALL_CLEARANCE if interior is not None
            else np.full(count, np.inf))
    wall = np.where(wall >= 0, wall, WALL_WEIGHT * wall)
    if len(others):
        flat = fingers.reshape(-1, 2)
        gaps = np.linalg.norm(others[None, :, :] - flat[:, None, :], axis=2).min(axis=1)
        neighbour = gaps.reshape(count, -1).min(axis=1) - NEIGHBOUR_CLEARANCE
    else:
        neighbour = np.full(count, np.inf)
    return np.minimum(np.minimum(wall, neighbour), 1.0)


def _yaw_choices(points: np.ndarray) -> list[float]:
    """Gripper yaws that close the fingers across the object: its long axis along the gripper's x
    (between the finger faces), and a quarter turn for objects nearly as wide as they are long."""
    xy = points[:, :2] - points[:, :2].mean(axis=0)
    values, vectors = np.linalg.eigh(np.cov(xy.T))
    major = vectors[:, 1]
    yaw = float(np.arctan2(major[1], major[0]))
    elongation = np.sqrt(values[1] / max(values[0], 1e-12))
    return [yaw, yaw + np.pi / 2] if elongation < 1.5 else [yaw]


def yaw_step(current: float, target: float) -> float:
    """Smallest turn from `current` to `target`, knowing the gripper looks the same every half turn."""
    return float((target - current + np.pi / 2) % np.pi - np.pi / 2)
