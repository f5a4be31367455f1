"""After a full reset: a world whose every body is finite, or an error that says it is not.

A NaN that reaches the ground or a bin (a 1e300-scaled mesh can do it through the contact solver) would
stay after every reset, while the reset answered success. Every reset rebuilds the cell in
an emptied world (`BinPickingSim.rebuild`), so a world that is not finite after one means a bug or a
body the reset does not own; this check turns either into an answered failure, never success.
`restore` looks at every body PyBullet holds (base pose, base velocity, joint positions and
velocities); if one is not finite it puts the fixed
environment (ground and bins) back at the poses the scene file gives them, at rest, and looks again.
What is still not finite then is reported (WorldNotSane), so the reset answers failure instead of
success. Called on the physics thread right after `BinPickingSim.reset` / `restart_episode`.
"""
from __future__ import annotations

import numpy as np


class WorldNotSane(RuntimeError):
    """The world could not be brought back to finite numbers; the message names the bodies."""


def _finite(values) -> bool:
    return bool(np.all(np.isfinite(np.asarray(values, dtype=float))))


def unsound_bodies(client) -> list[int]:
    """Ids of the bodies with a non-finite base pose or velocity or joint state."""
    bad = []
    for index in range(client.getNumBodies()):
        body = client.getBodyUniqueId(index)
        position, orientation = client.getBasePositionAndOrientation(body)
        linear, angular = client.getBaseVelocity(body)
        states = client.getJointStates(body, range(client.getNumJoints(body))) if client.getNumJoints(body) else []
        joints = [value for state in states for value in state[:2]]
        if not (_finite(position) and _finite(orientation) and _finite(linear) and _finite(angular) and _finite(joints)):
            bad.append(body)
    return bad


def restore(sim) -> list[str]:
    """Make sure the world just reset is finite; returns the names of the environment bodies put back
    (empty when all was well). WorldNotSane if bodies are still not finite afterwards."""
    client = sim.world.client
    bad = unsound_bodies(client)
    if not bad:
        return []
    scene = sim.scene
    rest = {"ground": (scene.ground, [0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0])}  # plane.urdf loaded at the origin
    rest.update({b.name: (b.body, b.position.tolist(), b.orientation.tolist()) for b in scene.bins})
    put_back = []
    for name, (body, position, orientation) in rest.items():
        if body in bad:
            client.resetBasePositionAndOrientation(body, position, orientation)
            client.resetBaseVelocity(body, [0.0, 0.0, 0.0], [0.0, 0.0, 0.0])
            put_back.append(name)
    still = unsound_bodies(client)
    if still:
        names = {body: name for name, (body, _, _) in rest.items()}
        names.update({arm.body: arm.config.name for arm in sim.arms})
        names.update({obj.body: obj.name for obj in scene.objects})
        listed = ", ".join(names.get(body, f"body {body}") for body in still)
        raise WorldNotSane(f"the world is not finite after the reset ({listed}): restart sim")
    return put_back
