"""visible / occluding's masks (cell/vision/visibility.py) drawn in one client with every renderer: each
object alone with the rest hidden (TinyRenderer: by colour; EGL: parked), objects whose footprints cannot
overlap in one render, and the cell left as it was."""
import dataclasses

import numpy as np
import pytest

from binpick_sim.cell.bin_picking_sim import BinPickingSim
from binpick_sim.cell.vision import visibility
from binpick_sim.cell.world import connect
from binpick_sim.reasoning import Reasoner

from helpers import with_renderer

OBJECTS = 20


@pytest.fixture
def heap(config, renderer):
    """The pick bin filled with 20 objects, seen by the main camera at 320 x 240 (masks: a reasoner's view)."""
    pick_bin = dataclasses.replace(config.scene.pick_bin, min_objects=OBJECTS, max_objects=OBJECTS)
    sim = BinPickingSim(dataclasses.replace(with_renderer(config, renderer),
                                            scene=dataclasses.replace(config.scene, pick_bin=pick_bin)))
    sim.reset(seed=0)
    c = sim.world.client
    reasoner = Reasoner.__new__(Reasoner)  # only for its view matrix: no copy, no worker
    reasoner.sim = sim
    view = visibility.View(tuple(reasoner._view_matrix(reasoner.default_view())),
                           tuple(c.computeProjectionMatrixFOV(60.0, 320 / 240, 0.1, 3.0)), 320, 240)
    yield sim, view, {o.name: o.body for o in sim.scene.objects}
    sim.close()


def poses(sim) -> np.ndarray:
    c = sim.world.client
    return np.array([np.concatenate(c.getBasePositionAndOrientation(c.getBodyUniqueId(i)))
                     for i in range(c.getNumBodies())])


def test_objects_drawn_in_groups_have_the_masks_they_have_one_by_one(heap, monkeypatch):
    sim, view, objects = heap
    c, flag = sim.world.client, sim.world.renderer.flag
    before, picture = poses(sim), sim.camera.render(segmentation=True)
    boxes = {name: visibility.footprint(c, body, view) for name, body in objects.items()}
    groups = visibility._groups(boxes)
    assert len(objects) == OBJECTS and len(groups) < OBJECTS / 2  # fewer renders: the point of grouping
    grouped = visibility.alone_masks(c, flag, view, objects)
    assert poses(sim) == pytest.approx(before, abs=1e-12)  # every body back where it was (a quaternion renormalised)
    after = sim.camera.render(segmentation=True)  # ... and looking as it did
    assert np.array_equal(after.rgb, picture.rgb) and np.array_equal(after.segmentation, picture.segmentation)
    monkeypatch.setattr(visibility, "_groups", lambda boxes: [[name] for name in boxes])
    single = visibility.alone_masks(c, flag, view, objects)
    assert all(np.array_equal(grouped[n], single[n]) for n in objects)
    assert sum(int(m.sum()) > 0 for m in single.values()) >= OBJECTS / 2  # most of them in view
    # and a box that is too small is noticed: that group is drawn again one by one
    monkeypatch.undo()
    monkeypatch.setattr(visibility, "footprint", lambda client, body, view: (0.0, 0.0, 1.0, 1.0)
                        if body == objects["object_0"] else boxes[next(n for n, b in objects.items() if b == body)])
    assert all(np.array_equal(m, single[n]) for n, m in visibility.alone_masks(c, flag, view, objects).items())


@pytest.mark.parametrize("renderer", ["tiny"])  # a second world in this process renders with TinyRenderer only
def test_hidden_bodies_leave_the_masks_an_empty_world_would_give(heap):
    """TinyRenderer allows a second client: there, each object alone in an otherwise empty world."""
    sim, view, objects = heap
    c = sim.world.client
    masks = visibility.alone_masks(c, sim.world.renderer.flag, view, objects)
    empty = connect()
    try:
        for obj in sim.scene.objects:
            body = empty.loadURDF(str(obj.urdf), globalScaling=obj.scale)
            empty.resetBasePositionAndOrientation(body, *c.getBasePositionAndOrientation(obj.body))
            alone = visibility.segmentation(empty, empty.ER_TINY_RENDERER, view) == body
            empty.removeBody(body)
            assert np.array_equal(alone, masks[obj.name]), obj.name
    finally:
        empty.disconnect()
