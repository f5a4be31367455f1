"""Reasoning queries on built scenes with known answers, and the live world left exactly as it was."""
from pathlib import Path

import numpy as np
import pybullet_data
import pytest

from binpick_sim.reasoning import ENVIRONMENT, OBJECT, ROBOT, Reasoner
from binpick_sim.cell.scene import SceneObject
from binpick_sim.cell.sim import BinPickingSim
from binpick_sim.cell.rendering import spelled

from conftest import egl_or_skip, with_renderer

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


@pytest.fixture
def empty(sim):
    """The cell with the pick bin emptied, and a reasoner on it."""
    for obj in list(sim.scene.objects):
        sim.scene.remove_object(obj.name)
    reasoner = Reasoner(sim)
    yield sim, reasoner
    reasoner.close()


def test_resting_box_is_stable_and_supported_by_the_ground_a_floating_one_is_not(empty):
    sim, reasoner = empty
    resting = add_cube(sim, [0.3, 0.6, 0.02])
    floating = add_cube(sim, [0.3, 0.8, 0.5])
    sim.world.step(5)  # the floating one has only started to fall
    answer = reasoner.stable()
    assert answer == {resting.name: True, floating.name: False}
    assert ("ground", resting.name) in reasoner.supporting()
    assert not any(floating.name in pair for pair in reasoner.supporting())


def test_stacked_boxes_touch_and_the_lower_supports_the_upper(empty):
    sim, reasoner = empty
    lower = add_cube(sim, [0.3, 0.6, 0.02])
    upper = add_cube(sim, [0.3, 0.6, 0.06])
    sim.world.step(200)
    pairs = reasoner.contacts()
    assert (lower.name, upper.name) in pairs or (upper.name, lower.name) in pairs
    support = reasoner.supporting()
    assert (lower.name, upper.name) in support and (upper.name, lower.name) not in support
    assert reasoner.stable()[upper.name]


def along_the_optical_axis(sim, distance):
    position, rotation = sim.camera.optical_pose()
    return np.asarray(position) + distance * rotation[:, 2]


def test_an_object_behind_another_is_occluded_until_the_occluder_goes(empty):
    sim, reasoner = empty
    behind = add_cube(sim, along_the_optical_axis(sim, 0.55), size=0.03)  # still above the floor
    front = add_cube(sim, along_the_optical_axis(sim, 0.35), size=0.05)
    view = reasoner.default_view()
    answer = reasoner.visibility(view, 320, 240)
    assert answer[behind.name]["occluded_by"] == [front.name]
    assert answer[behind.name]["ratio"] < 0.8 and answer[behind.name]["pixels_alone"] > 0
    assert answer[front.name]["ratio"] > 0.99 and answer[front.name]["occluded_by"] == []
    sim.scene.remove_object(front.name)
    answer = reasoner.visibility(view, 320, 240)
    assert answer[behind.name]["ratio"] > 0.99 and answer[behind.name]["occluded_by"] == []


def test_an_object_outside_the_view_is_not_visible(empty):
    sim, reasoner = empty
    hidden = add_cube(sim, along_the_optical_axis(sim, -0.5))  # behind the camera
    answer = reasoner.visibility(reasoner.default_view(), 160, 120)[hidden.name]
    assert answer["pixels_alone"] == 0 and answer["ratio"] == 0.0


def test_visible_and_occluding_draw_with_the_chosen_renderer_egl_answering_as_tiny(config):
    """The masks come from the scene file's renderer, drawn in the reasoner's render worker (the live world
    holds this process's one EGL client), and the reasoner names what drew them: a fallback to
    TinyRenderer would show. On a scene whose answers are unambiguous, EGL's are TinyRenderer's."""
    egl_or_skip()
    answers = {}
    for renderer in ("tiny", "egl"):
        sim = BinPickingSim(with_renderer(config, renderer))
        try:
            for obj in list(sim.scene.objects):
                sim.scene.remove_object(obj.name)
            add_cube(sim, along_the_optical_axis(sim, 0.55), size=0.03)  # object_100: behind
            add_cube(sim, along_the_optical_axis(sim, 0.35), size=0.05)  # object_101: in front of it
            add_cube(sim, along_the_optical_axis(sim, 0.5) + [0.0, 0.15, 0.0], size=0.03)  # object_102: beside
            add_cube(sim, along_the_optical_axis(sim, -0.5))  # object_103: behind the camera
            reasoner = Reasoner(sim)
            try:
                answers[renderer] = reasoner.visibility(reasoner.default_view(), 320, 240)
                assert reasoner.visibility_renderer == sim.world.renderer.describe()
                assert reasoner.visibility_renderer.startswith(f"{renderer} (")
            finally:
                reasoner.close()
        finally:
            sim.close()
    tiny, egl = answers["tiny"], answers["egl"]
    assert tiny["object_100"]["occluded_by"] == ["object_101"] and tiny["object_100"]["ratio"] < 0.8
    assert tiny["object_102"]["ratio"] == 1.0 and tiny["object_103"]["pixels_alone"] == 0
    for name, answer in tiny.items():
        assert egl[name]["occluded_by"] == answer["occluded_by"], name
        assert (egl[name]["ratio"] >= 0.8) == (answer["ratio"] >= 0.8), name
        assert egl[name]["ratio"] == pytest.approx(answer["ratio"], abs=0.05), name
        # the renderers rasterise edges differently: up to a pixel along the outline (4 sqrt(area) long; a
        # 3 cm cube's 183 px projected: 165 with TinyRenderer, 192 with EGL)
        assert abs(egl[name]["pixels_alone"] - answer["pixels_alone"]) <= 4 * np.sqrt(answer["pixels_alone"]), name


def test_a_render_worker_that_dies_fails_one_query_and_the_next_starts_another(empty):
    sim, reasoner = empty
    add_cube(sim, along_the_optical_axis(sim, 0.5))
    first = reasoner.visibility(reasoner.default_view(), 64, 48)
    reasoner.worker.process.kill()
    reasoner.worker.process.join(10)
    with pytest.raises(RuntimeError, match="the render worker stopped"):
        reasoner.visibility(reasoner.default_view(), 64, 48)
    assert reasoner.worker is None
    assert reasoner.visibility(reasoner.default_view(), 64, 48) == first


def test_reachable_inside_the_workspace_and_not_two_metres_away(empty):
    sim, reasoner = empty
    near = add_cube(sim, sim.scene.pick_bin.to_world([0, 0, 0.03]), size=0.02)
    far = add_cube(sim, [2.0, 0.0, 0.02], size=0.02)
    targets = {n: reasoner.object_position(n) for n in (near.name, far.name)}
    answer = reasoner.reachable(targets, "panda_grasptarget", 0.001, top_down=True)
    assert answer[near.name]["reachable"] and answer[near.name]["distance"] < 0.001
    assert not answer[far.name]["reachable"] and answer[far.name]["distance"] > 1.0
    positions = reasoner.reachable({"p": np.array([0.4, 0.0, 0.3])}, "panda_hand", 0.001, top_down=False)
    assert positions["p"]["reachable"]


def test_a_neighbour_in_the_fingers_way_blocks(empty):
    sim, reasoner = empty
    target = add_cube(sim, sim.scene.pick_bin.to_world([0, 0, 0.015]), size=0.02)
    # the fingers open along the gripper's y axis; top-down at yaw 0 that is the world's y axis
    neighbour = add_cube(sim, sim.scene.pick_bin.to_world([0, 0.03, 0.015]), size=0.02)
    loner = add_cube(sim, sim.scene.pick_bin.to_world([-0.05, -0.05, 0.015]), size=0.02)
    answer = reasoner.blocking("panda_grasptarget", top_down=True, names=[target.name])
    assert neighbour.name in answer[target.name]
    assert loner.name not in answer[target.name]
    assert reasoner.types()[neighbour.name] == OBJECT
    assert {reasoner.types()[n] for n in ("ground", "pick_bin", "drop_bin")} == {ENVIRONMENT}
    assert reasoner.types()["panda"] == ROBOT


def test_unknown_objects_are_named_in_the_error(empty):
    sim, reasoner = empty
    with pytest.raises(KeyError, match="unknown object.*object_77"):
        reasoner.stable(["object_77"])


def live_state(sim):
    """Everything that makes the next step what it is, as exact numbers."""
    c, arm = sim.world.client, sim.arm
    parts = [np.array([sim.world.step_count])]
    for body in range(c.getNumBodies()):
        body = c.getBodyUniqueId(body)
        parts += [np.concatenate(c.getBasePositionAndOrientation(body)), np.concatenate(c.getBaseVelocity(body))]
    parts += [np.array([s[0] for s in c.getJointStates(arm.body, arm.joints)]),
              np.array([s[1] for s in c.getJointStates(arm.body, arm.joints)]), np.asarray(arm.targets)]
    return np.concatenate(parts), arm.controller, sim.world.rng.bit_generator.state


def test_queries_leave_the_live_world_exactly_as_it_was(sim):
    sim.arm.set_position_targets(sim.arm.home + [0.2, 0.1, 0, 0, 0, 0, 0, 0, 0])
    sim.world.step(20)  # in motion: velocities are not zero
    reasoner = Reasoner(sim)
    try:
        before = live_state(sim)
        reasoner.stable()
        reasoner.contacts()
        reasoner.supporting()
        reasoner.visibility(reasoner.default_view(), 160, 120)
        targets = {n: reasoner.object_position(n) for n in reasoner.objects()}
        reasoner.reachable(targets, "panda_grasptarget", 0.001, top_down=True)
        reasoner.blocking("panda_grasptarget", top_down=True)
        after = live_state(sim)
    finally:
        reasoner.close()
    assert np.array_equal(before[0], after[0]) and before[1] is after[1] and before[2] == after[2]
