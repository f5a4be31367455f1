"""Seed fidelity, third pass (issue 28): each behaviour that differed from a seed without a word, each seed
interface that was missing, and each constraint users hit, pinned by a test of its own."""
import numpy as np
import pytest

from binpick_sim.config import load_config
from binpick_sim.paths import default_config

TWO_ARMS = default_config().parent / "scene_two_arms.yaml"


@pytest.fixture
def two_arm_sim():
    from binpick_sim.cell.sim import BinPickingSim

    sim = BinPickingSim(load_config(TWO_ARMS))
    sim.reset(seed=0)
    yield sim
    sim.close()


# --- 4: supporting never names an arm, however many the scene has (seed 004) ------------------------
def test_supporting_names_no_arm_in_a_two_arm_cell(two_arm_sim):
    from binpick_sim.reasoning import Reasoner

    reasoner = Reasoner(two_arm_sim)
    try:
        arms = {"left", "right"}
        assert {("ground", "left"), ("ground", "right")} <= set(reasoner.contacts())  # both stand on the ground
        support = reasoner.supporting()
        assert not [pair for pair in support if arms & set(pair)], support
        assert ("ground", "pick_bin") in support  # everything else as with one arm
    finally:
        reasoner.close()


# --- 10: the bin is five boxes, not the seed's concave mesh; its walls and floor where the seed's are ----
def test_the_bins_outer_size_inner_walls_and_floor_are_the_seeds_measured_with_rays(sim):
    from binpick_sim.cell.scene import Bin

    assert Bin.default_dimensions == (0.16, 0.16, 0.04)  # seed BaseBin: 160 x 160 x 40 mm
    c = sim.world.client
    for b in sim.scene.bins:
        assert tuple(b.config.size) == Bin.default_dimensions
        shapes = c.getCollisionShapeData(b.body, -1)
        assert len(shapes) == 5 and all(s[2] == c.GEOM_BOX for s in shapes)  # floor + 4 walls, no mesh
    drop = sim.scene.drop_bin  # empty: nothing but the bin in the rays' way
    length, width, height = drop.config.size
    t = drop.config.wall_thickness

    def hit(start, end):
        """Where a ray from `start` to `end` (bin frame) first meets the drop bin, in the bin frame."""
        body, _, _, position, _ = c.rayTest(drop.to_world(start).tolist(), drop.to_world(end).tolist())[0]
        assert body == drop.body, (start, end)
        return drop.to_local(position)

    mid = height / 2
    assert hit([0, 0, 1.0], [0, 0, -0.1])[2] == pytest.approx(t, abs=1e-6)  # the floor's top, inside
    assert hit([0, 0, -0.1], [0, 0, 1.0])[2] == pytest.approx(0.0, abs=1e-6)  # its underside
    for axis, half in ((0, length / 2), (1, width / 2)):
        for sign in (1, -1):
            out = np.zeros(3)
            out[axis], out[2] = sign * (half + 0.02), mid  # 2 cm outside: clear of the other bin
            inside = np.array([0.0, 0.0, mid])
            assert hit(inside, out)[axis] == pytest.approx(sign * (half - t), abs=1e-6)  # inner wall
            assert hit(out, inside)[axis] == pytest.approx(sign * half, abs=1e-6)  # outer wall
            rim = np.zeros(3)
            rim[axis] = sign * (half - t / 2)
            assert hit(rim + [0, 0, 1.0], rim)[2] == pytest.approx(height, abs=1e-6)  # the rim
    low, high = drop.interior()
    np.testing.assert_allclose(low, [-length / 2 + t, -width / 2 + t, t])
    np.testing.assert_allclose(high, [length / 2 - t, width / 2 - t, height])
