"""The objects' Wavefront OBJ files read: their vertices (what the scripted picker plans with) and their
triangle meshes, for planners' collision models (the planning scene embeds them, so a planner on another
machine needs no file of this one)."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np


@lru_cache(maxsize=64)
def obj_mesh(path: str) -> tuple[np.ndarray, np.ndarray]:
    """(vertices N x 3, triangles M x 3 vertex indices) of an OBJ file, unscaled; polygons become fans.
    Read once per file and shared, so read-only."""
    vertices, triangles = [], []
    for line in Path(path).read_text(errors="replace").splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "v":
            vertices.append([float(v) for v in parts[1:4]])
        elif parts[0] == "f":
            # "f a b c", "f a/t/n ...": 1-based, negative counts back from the latest vertex
            corners = [int(p.split("/")[0]) for p in parts[1:]]
            corners = [c - 1 if c > 0 else len(vertices) + c for c in corners]
            triangles += [(corners[0], corners[k], corners[k + 1]) for k in range(1, len(corners) - 1)]
    v, t = np.array(vertices, dtype=float).reshape(-1, 3), np.array(triangles, dtype=np.int64).reshape(-1, 3)
    if len(t) and (t.min() < 0 or t.max() >= len(v)):
        raise ValueError(f"{path}: a face names a vertex that does not exist")
    v.flags.writeable = t.flags.writeable = False
    return v, t


@lru_cache(maxsize=64)
def obj_vertices(path: str) -> np.ndarray:
    """Vertex positions of a Wavefront OBJ file (unscaled)."""
    rows = [line.split()[1:4] for line in Path(path).read_text().splitlines() if line.startswith("v ")]
    return np.array(rows, dtype=float)
