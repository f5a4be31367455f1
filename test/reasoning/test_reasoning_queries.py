"""Reasoning queries on built scenes with known answers, and the live world left exactly as it was."""
from pathlib import Path

import numpy as np
import pybullet_data
import pytest

from binpick_sim.config import load_config
from binpick_sim.paths import default_config
from binpick_sim.reasoning import ENVIRONMENT, OBJECT, ROBOT, Reasoner
from binpick_sim.cell.bin_picking_sim import BinPickingSim

from built_scenes import CUBE, add_body, add_cube, along_the_optical_axis
from helpers import egl_or_skip, move_grasp_target_to, with_renderer


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


# --- supporting needs the upper strictly higher; the ground supports, never is supported (issue 13, item 12)
def test_side_by_side_objects_do_not_support_each_other_and_nothing_supports_the_ground(sim, reasoner):
    left = add_body(sim, CUBE, [0.3, 0.6, 0.02], 0.8)
    right = add_body(sim, CUBE, [0.34, 0.6, 0.02], 0.8)  # touching, bases at the same height
    assert (left.name, right.name) in reasoner.contacts()
    support = reasoner.supporting()
    assert not [pair for pair in support if {left.name, right.name} == set(pair)]
    assert not [pair for pair in support if pair[1] == "ground"], support
    assert ("ground", left.name) in support and ("ground", "pick_bin") in support


# --- bodies whose centre of mass is off their link frame are copied where they are (issue 13, item 13)
DUCK = Path(pybullet_data.getDataPath()) / "duck_vhacd.urdf"  # inertial origin 2 cm off its link frame


def test_a_resting_duck_is_stable_and_fully_visible_alone(sim, reasoner):
    from scipy.spatial.transform import Rotation

    from binpick_sim.reasoning import CameraView

    duck = add_body(sim, DUCK, [0.3, 0.6, 0.03], orientation=sim.world.client.getQuaternionFromEuler([1.5708, 0, 0]))
    sim.world.step(round(2.0 / sim.world.timestep))  # settled on the ground
    assert reasoner.stable()[duck.name]
    position = np.array(sim.world.client.getBasePositionAndOrientation(duck.body)[0])
    above = CameraView(position + [0, 0, 0.4], Rotation.from_euler("x", np.pi).as_matrix())
    seen = reasoner.visibility(above, 64, 48, [duck.name])[duck.name]
    assert seen["pixels"] > 20 and seen["ratio"] > 0.99 and not seen["occluded_by"]


# --- the copy follows the running controller, not stale motor targets (issue 13, item 11) ----------
def test_stable_while_a_torque_controller_holds_the_arm_above_a_box(sim, reasoner):
    """The motors' last targets put the closed fingers into the box; the controller that took over
    holds them 10 cm above it. The copy must hold the arm where it is, as the controller does."""
    from binpick_sim.control.controllers import JointPositionController

    arm, spot = sim.arm, np.array([0.45, 0.4, 0.0])
    arm.set_gripper(False)
    move_grasp_target_to(sim, spot + [0, 0, 0.03])  # the motors' targets: fingertips at the box's middle
    controller = JointPositionController(arm)
    controller.engage()
    controller.set_goal(np.zeros(7), set_qpos=arm.ik(spot + [0, 0, 0.15], arm.ee_yaw())[:7])
    sim.world.step(round(1.5 / sim.world.timestep))
    box = add_body(sim, CUBE, spot + [0, 0, 0.02], 0.8)
    sim.world.step(round(0.5 / sim.world.timestep))
    assert arm.ee_pose()[0][2] > 0.12 and not [p for p in arm.contacts() if p[2] != arm.body]
    assert reasoner.stable()[box.name]


def test_the_copy_holds_the_joints_the_robot_interface_drives_where_they_are(sim, robot_backend, reasoner):
    from binpick_sim.control.robot_interface import Action

    sim.arm.set_position_targets(sim.arm.home + [0.5, 0, 0, 0.3, 0, 0, 0, 0, 0])  # stale once the interface starts
    robot_backend.append(Action.make(torque=[3.0] + [0.0] * 8))
    sim.world.step(50)
    reasoner.mirror()
    twin = reasoner.copy.arm
    assert twin.position_targets == pytest.approx(sim.arm.joint_states()[0], abs=1e-12)


# --- supporting never names an arm, however many the scene has (seed 004; issue 28, item 4) ---------
TWO_ARMS = default_config().parent / "scene_two_arms.yaml"


@pytest.fixture
def two_arm_sim():
    from binpick_sim.cell.bin_picking_sim import BinPickingSim

    sim = BinPickingSim(load_config(TWO_ARMS))
    sim.reset(seed=0)
    yield sim
    sim.close()


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
