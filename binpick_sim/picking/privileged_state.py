"""The cell's privileged state: what the simulator knows and a camera would have to infer.

Learning agents need the objects' poses to learn to pick (the gym envs' `state` observation holds the
robot only). This reads them from the physics world as plain numbers, so the direct gym backend and the
task node (which sends them as JSON, whose floats come back exact) hand the env the same values; the env
lays them out in fixed-shape arrays (envs/privileged_observation.py).
"""
from __future__ import annotations

import numpy as np

from ..cell.objects.shapes import BOX, CYLINDER, MESH, SPHERE, cached_vertices
from .task import lift_height

KINDS = (BOX, CYLINDER, SPHERE, MESH)  # the one-hot order of an object's type


def privileged_state(sim) -> dict:
    """JSON-ready: `objects`, one [index k of object_k, position, xyzw, linear velocity, angular velocity,
    kind, size] per bin object in play (its base frame, the one the task's rules use; spawned objects are
    left out: the gym envs' episodes have none), `bins` one [name, position, xyzw] per bin sorted by name,
    and `lift_height`, the height a grab needs (task.lift_height). `size`: full extents in metres (a
    mesh: its scaled vertices' extents in its own frame)."""
    c = sim.world.client
    objects = []
    for obj in sim.scene.objects:
        if obj.spawned:
            continue
        position, orientation = c.getBasePositionAndOrientation(obj.body)
        linear, angular = c.getBaseVelocity(obj.body)
        geometry = sim.object_geometry(obj)
        if geometry.kind == MESH:
            size = np.ptp(cached_vertices(geometry), axis=0).tolist()
        else:
            size = [float(v) for v in geometry.size]
        objects.append([obj.index, list(position), list(orientation), list(linear), list(angular), geometry.kind,
                        size])
    bins = sorted(sim.scene.bins, key=lambda b: b.name)
    return {"objects": objects,
            "bins": [[b.name, *map(list, c.getBasePositionAndOrientation(b.body))] for b in bins],
            "lift_height": lift_height(bins)}
