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
