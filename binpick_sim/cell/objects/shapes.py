"""An object's visual geometry as `world/objects` carries it: a mesh file or a box, sphere or cylinder
with its size, and the vertices the scripted picker plans with.

The bin's objects are meshes; objects spawned from a user's URDF are often primitives. Both the
in-process views and a ROS client reading the markers turn the same `Geometry` into vertices, so the
picker sees the same object either way.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from .meshes import obj_vertices

MESH, BOX, SPHERE, CYLINDER = "mesh", "box", "sphere", "cylinder"
_PYBULLET_TYPES = {2: SPHERE, 3: BOX, 4: CYLINDER, 5: MESH, 7: CYLINDER}  # GEOM_*; a capsule drawn as its cylinder
_RING = 16  # points around a cylinder's rim


@dataclass(frozen=True)
class ObjectView:
    """An object as the picker sees it: its name, pose and mesh vertices (from the core or from the markers)."""

    name: str
    position: np.ndarray  # world, metres
    orientation: np.ndarray  # xyzw
    vertices: np.ndarray  # N x 3 mesh vertices in the object frame, scaled to metres

    def world_vertices(self) -> np.ndarray:
        from scipy.spatial.transform import Rotation  # here: scipy costs an env that never picks ~26 MB

        return Rotation.from_quat(self.orientation).apply(self.vertices) + self.position


@dataclass(frozen=True)
class Geometry:
    kind: str
    size: tuple[float, float, float]  # full extents in metres (a mesh: its scale factors)
    mesh: str = ""  # file path of a mesh

    @classmethod
    def from_visual_shape(cls, shape) -> "Geometry":
        """From one row of PyBullet's getVisualShapeData (whose dimensions differ per type)."""
        kind = _PYBULLET_TYPES.get(shape[2], BOX)
        dims = [float(v) for v in shape[3]]
        if kind == SPHERE:
            return cls(kind, (2 * dims[0],) * 3)
        if kind == CYLINDER:  # dimensions: length, radius
            return cls(kind, (2 * dims[1], 2 * dims[1], dims[0]))
        # normalised: an object's URDF may be loaded through another spelling of its path (rendering.spelled)
        return cls(kind, tuple(dims), os.path.normpath(shape[4].decode()) if kind == MESH else "")

    def vertices(self) -> np.ndarray:
        """N x 3 points on the surface, in the object's frame, in metres."""
        half = np.asarray(self.size, float) / 2
        if self.kind == MESH:
            if Path(self.mesh).suffix.lower() == ".obj":
                return obj_vertices(self.mesh) * np.asarray(self.size, float)
            return np.zeros((1, 3))  # other mesh formats: known by their position only
        if self.kind == BOX:
            return np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float) * half
        angles = np.linspace(0, 2 * np.pi, _RING, endpoint=False)
        ring = np.stack([np.cos(angles), np.sin(angles)], axis=1) * half[:2]
        if self.kind == CYLINDER:
            return np.array([[x, y, z] for z in (-half[2], half[2]) for x, y in ring])
        return np.concatenate([[[x, y, 0] for x, y in ring], [[0, 0, -half[2]], [0, 0, half[2]]],
                               [[x * 0.7, y * 0.7, z * 0.7] for z in (-half[2], half[2]) for x, y in ring]])


def visual_pose(client, body: int, frames: tuple | None = None) -> tuple[tuple, tuple]:
    """World pose (position, xyzw) of a body's first visual shape, whose vertices `Geometry` gives.
    PyBullet reports a base at its centre of mass, and the shape's own frame relative to the link's.
    `frames`: the body's `visual_frames`, if kept from an earlier call (they never change)."""
    position, orientation = client.getBasePositionAndOrientation(body)
    to_link, to_shape = frames or visual_frames(client, body)
    link = client.multiplyTransforms(position, orientation, *to_link)
    return client.multiplyTransforms(*link, *to_shape)


def visual_frames(client, body: int) -> tuple[tuple, tuple]:
    """What `visual_pose` needs of a body besides its pose: the link frame seen from the centre of mass,
    and the first visual shape's frame in the link's. Fixed for the body's life, so a caller that asks
    every step may keep them (three PyBullet calls fewer per object and step)."""
    inertial = client.getDynamicsInfo(body, -1)[3:5]
    shape = client.getVisualShapeData(body)[0]
    return client.invertTransform(*inertial), (shape[5], shape[6])


@lru_cache(maxsize=64)
def cached_vertices(geometry: Geometry) -> np.ndarray:
    """`geometry.vertices()`, computed once per geometry (a mesh file is read once) and shared, so read-only."""
    vertices = geometry.vertices()
    vertices.flags.writeable = False
    return vertices
