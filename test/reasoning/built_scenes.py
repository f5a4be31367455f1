"""Scenes built by hand for the reasoning tests: bodies the scene counts as its objects, placed where the
answers are known (core and services tests alike)."""
from pathlib import Path

import numpy as np
import pybullet_data

from binpick_sim.cell.scene import SceneObject
from binpick_sim.cell.rendering.renderers import spelled

CUBE = Path(pybullet_data.getDataPath()) / "cube_small.urdf"  # a 5 cm cube


def add_body(sim, urdf, position, scale=1.0, orientation=(0, 0, 0, 1)):
    """A body the scene counts as one of its objects (so the queries see it by name)."""
    body = sim.world.client.loadURDF(spelled(urdf, ("scale", scale)), list(position), list(orientation),
                                     globalScaling=scale)  # EGL draws a mesh at its first scale otherwise
    obj = SceneObject(100 + len(sim.scene.objects), body, Path(urdf), scale)
    sim.scene.objects.append(obj)
    return obj


def add_cube(sim, position, size=0.04, mass=0.05):
    obj = add_body(sim, CUBE, position, size / 0.05)
    sim.world.client.changeDynamics(obj.body, -1, mass=mass)
    return obj


def along_the_optical_axis(sim, distance):
    position, rotation = sim.camera.optical_pose()
    return np.asarray(position) + distance * rotation[:, 2]
