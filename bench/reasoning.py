"""Reasoning: latency of each query with 20 objects in the pick bin (all objects at once), beside what
the same work costs in plain PyBullet (the 2 s roll-out, one segmentation render, one IK call).
visible + occluding once per renderer available (their masks are drawn by the scene file's renderer in
the reasoner's render worker), and what of it the physics thread waits for (the capture)."""
from __future__ import annotations

import dataclasses
import time

from binpick_sim.cell.rendering.renderers import RendererError, probe_egl
from binpick_sim.config import load_config, with_changes
from binpick_sim.paths import default_config
from binpick_sim.reasoning import Reasoner
from binpick_sim.cell.bin_picking_sim import BinPickingSim

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
    pick = {**dataclasses.asdict(config.scene.pick_bin), "min_objects": OBJECTS, "max_objects": OBJECTS}
    config = with_changes(config, scene={"pick_bin": pick})
    sim = BinPickingSim(config)
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

        raw_ik = timed(lambda: c.calculateInverseKinematics(sim.arm.body, sim.arm.grasp_link, list(targets[names[0]])))
        raw_contacts = timed(lambda: c.getContactPoints())
        figures = [
            ("stable", lambda: reasoner.stable(), timed(raw_rollout, 1), "raw: 2 s roll-out (480 steps)"),
            ("contact", reasoner.contacts, raw_contacts, "raw: getContactPoints() of the whole world"),
            ("supporting", reasoner.supporting, raw_contacts, "raw: getContactPoints() of the whole world"),
            ("reachable", lambda: reasoner.reachable(targets, "panda_grasptarget", 0.001, True), raw_ik,
             "raw: one calculateInverseKinematics call"),
            ("blocking", lambda: reasoner.blocking("panda_grasptarget", True), raw_ik,
             "raw: one calculateInverseKinematics call"),
        ]
        results = [Figure("reasoning", f"{name}, {OBJECTS} objects", timed(fn, 1 if name == "stable" else REPEATS),
                          "ms", raw, note) for name, fn, raw, note in figures]
    finally:
        reasoner.close()
        sim.close()
    return results + visibility(config)


def visibility(config) -> list[Figure]:
    """visible + occluding at 320 x 240 with each renderer available; raw: one segmentation render with
    that renderer in this process. The first query (the worker's start) is left out of the timing."""
    try:
        probe_egl()
        renderers = ["tiny", "egl"]
    except RendererError:
        renderers = ["tiny"]
    figures = []
    for renderer in renderers:
        sim = BinPickingSim(with_changes(config, simulation={"renderer": renderer}))
        sim.reset(seed=0)
        reasoner = Reasoner(sim)
        try:
            c, view = sim.world.client, reasoner.default_view()
            view_matrix = reasoner._view_matrix(view)
            projection = c.computeProjectionMatrixFOV(config.camera.fov_deg, 320 / 240, config.camera.near,
                                                      config.camera.far)
            raw = timed(lambda: c.getCameraImage(320, 240, view_matrix, projection, renderer=sim.world.renderer.flag))
            start = time.perf_counter()
            reasoner.visibility(view, 320, 240)  # starts the render worker
            first = (time.perf_counter() - start) * 1000
            figures += [
                Figure("reasoning", f"visible + occluding, {OBJECTS} objects, {renderer}",
                       timed(lambda: reasoner.visibility(view, 320, 240)), "ms", raw,
                       f"320x240, drawn by {reasoner.visibility_renderer.split(' (')[0]} in the render worker; "
                       f"raw: one segmentation render, {renderer}"),
                Figure("reasoning", f"visible + occluding, {OBJECTS} objects, {renderer}, first query", first, "ms",
                       None, "the render worker's start included"),
                Figure("reasoning", f"visible + occluding, {OBJECTS} objects, {renderer}, physics thread's share",
                       timed(lambda: reasoner.visibility_request(view, 320, 240)), "ms", None,
                       "the live state captured; the worker draws while the physics goes on"),
            ]
        finally:
            reasoner.close()
            sim.close()
    return figures


if __name__ == "__main__":
    for figure in measure():
        print(figure.as_dict())
