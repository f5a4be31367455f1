"""Reasoning: latency of each query with 20 objects in the pick bin (all objects at once), beside what
the same work costs in plain PyBullet (the 2 s roll-out, one segmentation render, one IK call)."""
from __future__ import annotations

import dataclasses
import time

from binpick_sim.config import load_config
from binpick_sim.paths import default_config
from binpick_sim.reasoning import Reasoner
from binpick_sim.cell.sim import BinPickingSim

from .figures import Figure

OBJECTS = 20
REPEATS = 3


def timed(fn, repeats: int = REPEATS) -> float:
    """Best of `repeats`, in ms (the least disturbed by the rest of the machine)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1000


def measure() -> list[Figure]:
    config = load_config(default_config())
    scene = dataclasses.replace(config.scene, pick_bin=dataclasses.replace(
        config.scene.pick_bin, min_objects=OBJECTS, max_objects=OBJECTS))
    sim = BinPickingSim(dataclasses.replace(config, scene=scene))
    sim.reset(seed=0)
    reasoner = Reasoner(sim)
    try:
        c, view = sim.world.client, reasoner.default_view()
        names = reasoner.objects()
        targets = {n: reasoner.object_position(n) for n in names}
        rollout_state = c.saveState()

        def raw_rollout():
            for _ in range(480):
                c.stepSimulation()
            c.restoreState(rollout_state)

        view_matrix = reasoner._view_matrix(view)
        projection = c.computeProjectionMatrixFOV(config.camera.fov_deg, 320 / 240, config.camera.near,
                                                  config.camera.far)
        raw_render = timed(lambda: c.getCameraImage(320, 240, view_matrix, projection, renderer=c.ER_TINY_RENDERER))
        raw_ik = timed(lambda: c.calculateInverseKinematics(sim.arm.body, sim.arm.grasp_link, list(targets[names[0]])))
        raw_contacts = timed(lambda: c.getContactPoints())
        figures = [
            ("stable", lambda: reasoner.stable(), timed(raw_rollout, 1), "raw: 2 s roll-out (480 steps)"),
            ("contact", reasoner.contacts, raw_contacts, "raw: getContactPoints() of the whole world"),
            ("supporting", reasoner.supporting, raw_contacts, "raw: getContactPoints() of the whole world"),
            ("visible + occluding", lambda: reasoner.visibility(view, 320, 240), raw_render,
             "320x240; raw: one segmentation render"),
            ("reachable", lambda: reasoner.reachable(targets, "panda_grasptarget", 0.001, True), raw_ik,
             "raw: one calculateInverseKinematics call"),
            ("blocking", lambda: reasoner.blocking("panda_grasptarget", True), raw_ik,
             "raw: one calculateInverseKinematics call"),
        ]
        return [Figure("reasoning", f"{name}, {OBJECTS} objects", timed(fn, 1 if name == "stable" else REPEATS),
                       "ms", raw, note) for name, fn, raw, note in figures]
    finally:
        reasoner.close()
        sim.close()


if __name__ == "__main__":
    for figure in measure():
        print(figure.as_dict())
