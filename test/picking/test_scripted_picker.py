"""The scripted picker's choices: across the narrow side, free fingers, inside the walls."""
import numpy as np
import pytest

from binpick_sim.picking.policy import BinInterior, choose_grasp, finger_points, yaw_step
from binpick_sim.cell.objects.shapes import ObjectView

INTERIOR = BinInterior(np.array([0.5, -0.18]), 0.0, np.array([0.075, 0.075]))


def box(name, centre, size, yaw=0.0):
    """A box-shaped ObjectView (its 8 corners), turned by yaw about z."""
    half = np.asarray(size) / 2
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * half
    quaternion = [0, 0, np.sin(yaw / 2), np.cos(yaw / 2)]
    return ObjectView(name, np.asarray(centre, float), np.array(quaternion), corners)


def test_fingers_close_across_a_long_object():
    grasp = choose_grasp([box("stick", [0.5, -0.18, 0.01], [0.03, 0.008, 0.008], yaw=0.6)], interior=INTERIOR)
    assert abs(yaw_step(grasp.yaw, 0.6)) < 1e-6  # gripper x along the stick: fingers close across it
    assert grasp.position == pytest.approx([0.5, -0.18, 0.01])


def test_the_object_with_free_room_is_preferred():
    """(No walls here, so only the neighbours decide.)"""
    crowded = [box("a", [0.45, -0.15, 0.01], [0.02] * 3), box("b", [0.47, -0.15, 0.01], [0.02] * 3)]
    alone = box("c", [0.55, -0.25, 0.01], [0.02] * 3)
    assert choose_grasp(crowded + [alone]).name == "c"
    assert choose_grasp(crowded + [alone], exclude={"c"}).name in {"a", "b"}
    assert choose_grasp([alone], exclude={"c"}) is None


def test_near_a_wall_the_fingers_turn_to_stay_inside():
    """A round object 2.5 cm from the +x wall: fingers along x would hit the wall, so they go along y."""
    grasp = choose_grasp([box("round", [0.55, -0.18, 0.01], [0.02, 0.02, 0.02])], interior=INTERIOR)
    fingers = finger_points(grasp.position[:2], grasp.yaw)
    assert INTERIOR.margin(fingers) > 0
    assert abs(np.cos(grasp.yaw)) > 0.9  # gripper x along the bin's x: fingers spread along y


def test_interior_from_the_scene_file(config):
    interior = BinInterior.from_config(config.scene.pick_bin)
    assert interior.half_extents == pytest.approx([0.075, 0.075])
    assert interior.margin(np.array([[0.5, -0.18]])) == pytest.approx(0.075)
    assert interior.margin(np.array([[0.6, -0.18]])) < 0


def test_yaw_step_takes_the_short_way_round():
    assert yaw_step(0.0, np.pi) == pytest.approx(0.0)
    assert yaw_step(0.1, -0.1) == pytest.approx(-0.2)
    assert abs(yaw_step(0.0, 1.5)) <= np.pi / 2


def test_beside_a_wall_the_grasp_turns_or_moves_to_keep_the_fingers_inside():
    """A long object lying along the +y wall, 2 cm from it: across its narrow side the fingers would
    reach 4.7 cm toward the wall. Another yaw or a grasp point moved along the closing direction keeps
    them inside, with the object still between the open fingers (they open 8 cm)."""
    stick = box("stick", [0.5, -0.18 + 0.075 - 0.02, 0.01], [0.03, 0.008, 0.008])
    grasp = choose_grasp([stick], interior=INTERIOR)
    fingers = finger_points(grasp.position[:2], grasp.yaw)
    assert INTERIOR.margin(fingers) > 0
    assert np.linalg.norm(grasp.position[:2] - stick.position[:2]) < 0.013
