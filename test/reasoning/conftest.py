"""Fixtures of the reasoning tests."""
import pytest

from binpick_sim.reasoning import Reasoner


@pytest.fixture
def empty(sim):
    """The cell with the pick bin emptied, and a reasoner on it."""
    for obj in list(sim.scene.objects):
        sim.scene.remove_object(obj.name)
    reasoner = Reasoner(sim)
    yield sim, reasoner
    reasoner.close()


@pytest.fixture
def reasoner(empty):
    """The reasoner of `empty`."""
    return empty[1]
