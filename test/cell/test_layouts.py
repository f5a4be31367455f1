"""Remembered layouts (cell/layouts.py): a reset to a layout seen before places its settled pile without settling it
again, and gives the world a first reset of that layout gives, bit for bit, in this sim and in a fresh one."""
import dataclasses

import numpy as np
import pybullet
import pytest

from binpick_sim.cell.bin_picking_sim import BinPickingSim
from binpick_sim.cell.scene import SETTLE_LOOK


def sweeping(sim, steps: int = 16) -> list:
    """The closed gripper lowered beside the first object and swept through it along x: after each of `steps`
    env-sized steps (24 physics steps) every object's pose and velocity and the arm's joints."""
    arm, c = sim.arm, sim.world.client
    arm.set_gripper(False)
    start = sim.scene.object_position(sim.scene.objects[0]) + [-0.04, 0.0, 0.03]
    arm.move_to(arm.ik(start, arm.ee_yaw()))
    seen = []
    for _ in range(steps):
        arm.set_position_targets(arm.delta_targets([0.01, 0.0, -0.005, 0.0, 0.0]))
        sim.world.step(24)
        seen.append(([(c.getBasePositionAndOrientation(o.body), c.getBaseVelocity(o.body)) for o in sim.scene.objects],
                     [s[:2] for s in c.getJointStates(arm.body, range(9))]))
    return seen


def settles(sim, monkeypatch) -> list:
    calls = []
    settle = sim.scene._settled_layout
    monkeypatch.setattr(sim.scene, "_settled_layout",
                        lambda settler, kept: calls.append(kept) or settle(settler, kept))
    return calls


def test_a_layout_seen_before_is_placed_without_a_settle_and_gives_the_same_episode(sim, config, monkeypatch):
    calls = settles(sim, monkeypatch)
    sim.reset(seed=11)
    drawn = sim.world.rng.bit_generator.state  # what the episode draws next (a goal env's goal) starts here
    rest = [sim.scene.object_position(o) for o in sim.scene.objects]
    first = sweeping(sim)
    moved = max(np.linalg.norm(np.subtract(pose[0][0], p)) for pose, p in zip(first[-1][0], rest))
    assert moved > 0.002, "the gripper moved no object: the episode would show nothing"
    sim.reset(seed=12)
    sim.reset(seed=11)
    assert len(calls) == 2  # 11 and 12 settled once each; 11 again came from memory
    assert sim.world.rng.bit_generator.state == drawn
    assert sweeping(sim) == first  # bit for bit

    fresh = BinPickingSim(config)  # remembers nothing: its layout is settled now
    try:
        fresh.reset(seed=11)
        assert sweeping(fresh) == first
    finally:
        fresh.close()


def test_the_clock_runs_on_by_the_settle_whether_the_layout_is_remembered_or_not(sim):
    def clock_run_by_a_reset() -> int:
        before = sim.world.step_count
        sim.reset(seed=21)
        return sim.world.step_count - before

    settled, remembered = clock_run_by_a_reset(), clock_run_by_a_reset()
    assert settled == remembered
    assert 2 * SETTLE_LOOK <= settled <= sim.config.scene.settle_steps  # two looks at the pile at least


def test_keep_object_type_is_part_of_what_is_remembered(sim):
    """From one RNG state, a reset that draws its type and one that keeps the type it has are two layouts."""
    sim.reset(seed=31)
    state = sim.world.rng.bit_generator.state
    sim.reset()
    drawn = sim.scene.object_urdf
    sim.reset(seed=32)
    kept = sim.scene.object_urdf
    sim.world.rng.bit_generator.state = state
    sim.reset(keep_object_type=True)
    assert sim.scene.object_urdf == kept != drawn


def test_a_replaced_scene_configuration_is_settled_anew(sim, monkeypatch):
    """A layout is remembered for the configuration it was drawn under: objects of another size are
    settled, not the remembered pile placed."""
    sim.reset(seed=41)
    size = sim.scene.object_scale
    calls = settles(sim, monkeypatch)
    sim.scene.config = dataclasses.replace(sim.scene.config, object_size_range=(0.012, 0.0121))
    sim.reset(seed=41)
    assert calls and sim.scene.object_scale != pytest.approx(size)
    assert len(sim.scene.layouts) == 1


def test_closing_the_sim_closes_the_settlers_world(config):
    sim = BinPickingSim(config)
    sim.reset(seed=1)
    settler = sim.scene._settler.world.client
    sim.close()
    with pytest.raises(pybullet.error, match="Not connected"):
        settler.getNumBodies()
