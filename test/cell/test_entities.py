"""The cell as named entities (core, no ROS): spawned URDFs join the objects, the reasoning and the
task; refused requests change nothing; the episode restarts as it began."""
import numpy as np
import pytest

from binpick_sim.cell.entities.registry import Entities, State
from binpick_sim.cell.entities.errors import INVALID_POSE, NAME_NOT_UNIQUE, NOT_FOUND, OPERATION_FAILED, EntityError
from binpick_sim.cell.entities.errors import MISSING_ASSETS
from binpick_sim.reasoning import Reasoner
from binpick_sim.picking.task import PickTask

CUBE = """<robot name="cube"><link name="base">
  <inertial><origin xyz="0.005 0 0"/><mass value="0.02"/>
    <inertia ixx="2e-6" iyy="2e-6" izz="2e-6" ixy="0" ixz="0" iyz="0"/></inertial>
  <visual><geometry><box size="0.02 0.02 0.02"/></geometry></visual>
  <collision><geometry><box size="0.02 0.02 0.02"/></geometry></collision>
</link></robot>"""


@pytest.fixture
def entities(sim):
    e = Entities(sim)
    yield e
    e.close()


def test_spawned_object_joins_the_scene_and_lands_in_the_bin(sim, entities):
    above = {p.name: p for p in entities.named_poses()}["above_pick_bin"]
    name = entities.spawn("", False, "", CUBE, "world", above.position, above.orientation)
    assert name == "cube" and sim.scene.object_named("cube").spawned
    assert np.allclose(entities.state("cube").position, above.position)  # the link frame, not the centre of mass
    sim.world.step(480)
    assert sim.scene.pick_bin.contains(entities.state("cube").position)
    view = [v for v in sim.object_views() if v.name == "cube"][0]
    assert np.allclose(np.ptp(view.vertices, axis=0), 0.02)  # a box's corners for the picker
    assert np.allclose(view.position, entities.state("cube").position)  # the box, not its centre of mass
    reasoner = Reasoner(sim)
    try:
        assert "cube" in reasoner.objects() and reasoner.types()["cube"] == "object"
    finally:
        reasoner.close()
    task = PickTask(sim, sim.config.task)
    entities.set_state("cube", State([2.0, 2.0, 0.01], [0, 0, 0, 1]))  # out of the bins: the task removes it
    assert "cube" in task.update().removed_outside


def test_refusals_change_nothing(sim, entities):
    before = [(e.name, entities.state(e.name).position.tolist()) for e in entities.all()]
    for args, code in [(("panda", False, "", CUBE, "", [0, 0, 1], [0, 0, 0, 1]), NAME_NOT_UNIQUE),
                       (("x", False, "", CUBE, "", [np.nan, 0, 1], [0, 0, 0, 1]), INVALID_POSE),
                       (("x", False, "", CUBE, "nowhere", [0, 0, 1], [0, 0, 0, 1]), NOT_FOUND),
                       (("x", False, "", CUBE.replace("<box size=\"0.02 0.02 0.02\"/></geometry></visual>",
                                                      "<mesh filename=\"gone.obj\"/></geometry></visual>"),
                         "", [0, 0, 1], [0, 0, 0, 1]), MISSING_ASSETS)]:
        with pytest.raises(EntityError) as refused:
            entities.spawn(*args)
        assert refused.value.code == code
    with pytest.raises(EntityError) as refused:
        entities.set_state("drop_bin", State([0.5, 0.18, 0], [0, 0, 0, 1], angular=[0, 0, 1]))
    assert refused.value.code == OPERATION_FAILED
    with pytest.raises(EntityError):
        entities.delete("ground")
    assert [(e.name, entities.state(e.name).position.tolist()) for e in entities.all()] == before


def test_restart_brings_the_episode_back_and_keeps_spawned_objects_at_their_spawn_pose(sim, entities):
    start = {o.name: sim.scene.object_position(o) for o in sim.scene.objects}
    episode_type = sim.scene.object_urdf
    entities.spawn("cube", False, "", CUBE, "drop_bin", [0, 0, 0.1], [0, 0, 0, 1])
    entities.delete("object_0")
    sim.world.step(240)
    entities.restart(keep_spawned=True)
    assert sim.scene.object_urdf == episode_type
    assert [o.name for o in sim.scene.objects] == list(start) + ["cube"]
    for name, position in start.items():
        assert np.linalg.norm(entities.state(name).position - position) < 0.01
    assert np.allclose(entities.state("cube").position, np.add(sim.config.scene.drop_bin.position, [0, 0, 0.1]))
    entities.restart(keep_spawned=False)
    assert "cube" not in entities.names()


@pytest.mark.parametrize("geometry, extent", [('<sphere radius="0.01"/>', [0.02, 0.02, 0.02]),
                                              ('<cylinder radius="0.01" length="0.03"/>', [0.02, 0.02, 0.03]),
                                              ('<box size="0.01 0.02 0.03"/>', [0.01, 0.02, 0.03])])
def test_primitive_shapes_give_the_picker_their_extent(sim, entities, geometry, extent):
    urdf = CUBE.replace('<box size="0.02 0.02 0.02"/>', geometry)
    entities.spawn("shape", False, "", urdf, "", [0.5, 0.18, 0.1], [0, 0, 0, 1])
    view = [v for v in sim.object_views() if v.name == "shape"][0]
    assert np.allclose(np.ptp(view.vertices, axis=0), extent, atol=1e-6)
