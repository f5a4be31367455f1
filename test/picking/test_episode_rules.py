"""The seed's episode rules: what counts as a grab, a bin collision, the reward and the end."""
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from binpick_sim.cell.scene import SceneObject
from binpick_sim.cell.bin_picking_sim import BinPickingSim
from binpick_sim.picking.task import PickTask


def make_task(config, **changes):
    sim = BinPickingSim(dataclasses.replace(config, task=dataclasses.replace(config.task, **changes)))
    sim.reset(seed=0)
    return sim, PickTask(sim, sim.config.task)


@pytest.fixture
def task(config):
    sim, task = make_task(config)
    yield sim, task
    sim.close()


def hold_above(sim, height):
    """A 2 cm box added to the scene's objects, squeezed by the gripper at `height` above the pick bin."""
    c, arm = sim.world.client, sim.arm
    arm.move_to(arm.ik(sim.scene.pick_bin.to_world([0, 0, height]), arm.ee_yaw()))
    arm.actuate_gripper(True)
    position, _ = arm.ee_pose()
    half = [0.01] * 3
    box = c.createMultiBody(0.05, c.createCollisionShape(c.GEOM_BOX, halfExtents=half),
                            c.createVisualShape(c.GEOM_BOX, halfExtents=half), position.tolist())
    pin = c.createConstraint(box, -1, -1, -1, c.JOINT_FIXED, [0, 0, 0], [0, 0, 0], position.tolist())
    arm.actuate_gripper(False)
    c.removeConstraint(pin)
    sim.world.step(30)
    obj = SceneObject(len(sim.scene.objects) + 100, box, Path("box"), 1.0)
    sim.scene.objects.append(obj)
    return obj


def test_an_object_held_high_enough_is_a_grab(task):
    sim, task = task
    obj = hold_above(sim, 0.25)
    count = sim.scene.object_count
    assert sim.arm.touching(obj.body)
    status = task.update()
    assert status.grabbed == (obj.name,) and status.grabs == 1
    assert status.reward == pytest.approx(task.config.grab_reward)
    assert status.grab_limit_reached and status.terminated
    assert sim.scene.object_count == count - 1  # the grabbed object is removed
    assert task.update().grabbed == ()  # and counted once


def test_held_below_the_lift_height_is_not_yet_a_grab(task):
    sim, task = task
    lift = task.lift_height() - sim.scene.pick_bin.to_world([0, 0, 0])[2]
    obj = hold_above(sim, lift - 0.03)
    assert sim.arm.touching(obj.body)
    status = task.update()
    assert status.grabs == 0 and not status.terminated
    assert obj.name in [o.name for o in sim.scene.objects]  # held, so not removed though outside the bin


def test_with_count_grabs_off_an_object_held_high_is_neither_counted_nor_taken_away(config):
    """The goal envs' rule (FrankaPickPlace carries an object over the rims): the seed's grab rule off."""
    sim, task = make_task(config, count_grabs=False)
    try:
        obj = hold_above(sim, 0.25)
        assert sim.arm.touching(obj.body) and sim.scene.object_position(obj)[2] > task.lift_height()
        for _ in range(2):
            status = task.update()
            assert status.grabs == 0 and status.grabbed == () and not status.terminated and status.reward == 0.0
        assert obj.name in [o.name for o in sim.scene.objects]
    finally:
        sim.close()


def test_touching_a_bin_ends_the_episode_unless_disabled_and_is_reported_either_way(config):
    """Seed check_termination: the diagnostic info says the arm touches a bin whether or not that ends the
    episode (issue 28 item 5); only a collision that ends it costs collision_reward."""
    for enabled in (True, False):
        sim, task = make_task(config, terminate_on_bin_collision=enabled)
        try:
            c, arm = sim.world.client, sim.arm
            wall = sim.scene.pick_bin.to_world([0.08, 0, 0.06])
            arm.move_to(arm.ik(wall, arm.ee_yaw()))
            arm.move_to(arm.ik(wall - [0, 0, 0.06], arm.ee_yaw()))  # down onto the rim
            assert any(c.getContactPoints(arm.body, sim.scene.pick_bin.body))
            status = task.update()
            assert status.bin_collision and status.terminated == enabled
            assert status.as_dict()["bin_collision"] and status.arm_bin_collisions == ("arm",)
            assert status.reward == pytest.approx(task.config.collision_reward if enabled else 0.0)
        finally:
            sim.close()


def test_grab_limit_never_exceeds_the_objects_present(config):
    sim, task = make_task(config, grabs_to_terminate=50)
    try:
        assert task.grab_limit == sim.scene.object_count
    finally:
        sim.close()


def test_objects_that_fall_out_are_removed_and_reported(task):
    sim, task = task
    obj = sim.scene.objects[-1]
    sim.world.client.resetBasePositionAndOrientation(obj.body, [1.5, 1.5, 0.02], [0, 0, 0, 1])
    status = task.update()
    assert status.removed_outside == (obj.name,)
    assert status.objects_left == sim.scene.object_count
    assert status.grabs == 0 and status.reward == 0.0


def test_shaking_verifies_a_firm_grab(config):
    sim, task = make_task(config, verify_grab_by_shaking=True)
    try:
        hold_above(sim, 0.25)
        steps = sim.world.step_count
        assert task.update().grabs == 1
        assert sim.world.step_count > steps  # the arm moved up and down before the grab counted
        assert np.linalg.norm(sim.arm.ee_pose()[0] - sim.scene.pick_bin.to_world([0, 0, 0.25])) < 0.01
    finally:
        sim.close()


def test_one_contact_reading_says_what_the_per_pair_queries_say(task):
    """update() reads the arm's contacts once (one PyBullet call) instead of two queries per object and
    one per bin; for every body, holding an object and pressed onto a bin's rim, the answers agree."""
    sim, task = task
    c, arm = sim.world.client, sim.arm

    def per_pair_bin_contact():
        return any(point[8] < task.config.collision_threshold
                   for b in sim.scene.bins for point in c.getContactPoints(arm.body, b.body))

    obj = hold_above(sim, 0.10)  # clear of the pile: squeezed among its objects, how the box sits in the grip,
    # and so whether the box or the fingers meet the rim below, came down to the pile's last contacts
    bodies = [c.getBodyUniqueId(i) for i in range(c.getNumBodies())]
    assert arm.gripped_bodies() == {b for b in bodies if arm.touching(b)} == {obj.body}
    assert task.arm_touches_a_bin() == per_pair_bin_contact()
    wall = sim.scene.pick_bin.to_world([0.08, 0, 0.06])
    arm.move_to(arm.ik(wall, arm.ee_yaw()))
    arm.move_to(arm.ik(wall - [0, 0, 0.06], arm.ee_yaw()))  # down onto the rim
    assert per_pair_bin_contact()
    assert task.arm_touches_a_bin()
    assert arm.gripped_bodies() == {b for b in bodies if arm.touching(b)}


def test_the_rules_are_computed_from_fixed_bins_once(task):
    sim, task = task
    bins = sim.scene.bins
    assert task.lift_height() == max(b.top for b in bins) + max(b.config.size[2] for b in bins)
    assert task.lift_height() == task.lift_height()
