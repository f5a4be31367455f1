"""Bin shaking (seed 000 BaseBin.create_constraint): objects spread, the bin keeps its collision and
comes back to its pose, bad parameters are refused (in the core, then over ROS at the end of this file)."""
import math

import numpy as np
import pytest

from binpick_sim.config import MAX_SHAKE_AMPLITUDE as MAX_AMPLITUDE


def heap_in_a_corner(sim):
    """Stack every object of the pick bin in one corner and let them settle: a heap with little spread."""
    c, pick = sim.world.client, sim.scene.pick_bin
    for i, obj in enumerate(sim.scene.objects):
        c.resetBasePositionAndOrientation(obj.body, pick.to_world([0.05, 0.05, 0.02 + 0.03 * i]).tolist(),
                                          [0, 0, 0, 1])
        c.resetBaseVelocity(obj.body, [0, 0, 0], [0, 0, 0])
    sim.world.step(300)


def spread(sim) -> float:
    """Mean horizontal distance between two objects."""
    points = np.array([sim.scene.object_position(o)[:2] for o in sim.scene.objects])
    distances = np.linalg.norm(points[:, None] - points[None], axis=2)
    return float(distances[np.triu_indices(len(points), 1)].mean())


def test_shaking_the_pick_bin_spreads_its_objects_and_returns_the_bin(sim):
    sim.reset(seed=1)
    heap_in_a_corner(sim)
    before = spread(sim)
    c, pick = sim.world.client, sim.scene.pick_bin
    pose = c.getBasePositionAndOrientation(pick.body)
    moved = []
    sim.world.add_step_hooks(after=lambda: moved.append(
        np.linalg.norm(np.subtract(c.getBasePositionAndOrientation(pick.body)[0], pose[0]))))
    start = sim.world.time
    sim.shake_bin("pick_bin", amplitude=0.02, frequency=3.0, duration=1.5)
    assert 1.5 <= sim.world.time - start <= 2.0  # the motion, then the return
    assert max(moved) > 0.01  # the bin really moved
    assert spread(sim) > before + 0.01, "the heap did not spread"
    after = c.getBasePositionAndOrientation(pick.body)
    assert np.allclose(after[0], pose[0], atol=1e-9) and np.allclose(after[1], pose[1], atol=1e-9)
    assert c.getDynamicsInfo(pick.body, -1)[0] == 0.0  # fixed again
    assert not sim.shakers["pick_bin"].shaking
    sim.world.step(100)
    assert np.allclose(c.getBasePositionAndOrientation(pick.body)[0], pose[0], atol=1e-9)  # and stays


def test_a_shake_that_ends_within_a_multi_step_call_leaves_the_other_hooks_running(sim):
    """The shake's hook leaves the world when the bin is fixed again, in the middle of `world.step(n)`:
    every other hook still runs on every one of the n steps, and the bin stays at its pose after."""
    c, drop = sim.world.client, sim.scene.drop_bin
    pose = c.getBasePositionAndOrientation(drop.body)
    sim.shake_bin("drop_bin", 0.01, 2.0, 0.1, wait=False)
    before, after = [], []  # hooked in after the shake's own hook
    sim.world.add_step_hooks(before=lambda: before.append(sim.world.step_count),
                             after=lambda: after.append(sim.world.step_count))
    start = sim.world.step_count
    sim.world.step(200)  # 0.1 s of motion and 0.25 s of return are 84 steps at 240 Hz
    assert not sim.shakers["drop_bin"].shaking
    assert before == list(range(start, start + 200)) and after == list(range(start + 1, start + 201))
    assert np.allclose(c.getBasePositionAndOrientation(drop.body)[0], pose[0], atol=1e-9)


def test_a_shaken_bin_keeps_its_collision(sim):
    """Objects stay inside (none falls through the floor or a wall) and the arm still hits the bin."""
    from binpick_sim.picking.task import PickTask

    sim.reset(seed=2)
    count = sim.scene.object_count
    pick = sim.scene.pick_bin
    lowest = []
    sim.world.add_step_hooks(after=lambda: lowest.append(
        min(pick.to_local(sim.scene.object_position(o))[2] for o in sim.scene.objects)))
    sim.shake_bin("pick_bin", 0.01, 4.0, 1.0)
    assert sim.scene.object_count == count
    assert all(pick.contains(sim.scene.object_position(o)) for o in sim.scene.objects)
    assert min(lowest) > 0.0  # no object ever sank below the bin's underside
    # the arm pushed into the pick bin's wall while it shakes: the task sees the collision
    task = PickTask(sim, sim.config.task)
    sim.shake_bin("pick_bin", 0.01, 2.0, 2.0, wait=False)
    wall = pick.to_world([-0.08, 0.0, 0.02])
    sim.arm.move_to(sim.arm.ik(wall, 0.0))
    assert sim.shakers["pick_bin"].shaking
    assert task.arm_touches_a_bin()
    sim.reset(seed=2)  # a reset ends a running shake and fixes the bin at its pose
    assert not sim.shakers["pick_bin"].shaking
    assert np.allclose(sim.world.client.getBasePositionAndOrientation(pick.body)[0], pick.position)


def test_the_drop_bin_shakes_too(sim):
    sim.reset(seed=0)
    c, drop = sim.world.client, sim.scene.drop_bin
    cube = c.loadURDF("cube_small.urdf", drop.to_world([0.0, 0.0, 0.03]).tolist())
    sim.world.step(100)
    start = np.array(c.getBasePositionAndOrientation(cube)[0])
    sim.shake_bin("drop_bin", 0.03, 2.0, 1.0)
    end = np.array(c.getBasePositionAndOrientation(cube)[0])
    assert drop.contains(end) and np.linalg.norm(end - start) > 0.005
    c.removeBody(cube)


@pytest.mark.parametrize("amplitude, frequency, duration, problem", [
    (1e308, 1.0, 1.0, "amplitude"), (math.nan, 1.0, 1.0, "amplitude"), (-0.01, 1.0, 1.0, "amplitude"),
    (0.0, 1.0, 1.0, "amplitude"), (MAX_AMPLITUDE * 1.01, 1.0, 1.0, "amplitude"),
    (0.01, math.inf, 1.0, "frequency"), (0.01, -2.0, 1.0, "frequency"), (0.01, 1e308, 1.0, "frequency"),
    (0.01, 1.0, math.nan, "duration"), (0.01, 1.0, -1.0, "duration"), (0.01, 1.0, 2 ** 63, "duration"),
    (0.01, "fast", 1.0, "frequency"), (True, 1.0, 1.0, "amplitude"),
])
def test_bad_shakes_are_refused_and_change_nothing(sim, amplitude, frequency, duration, problem):
    c, pick = sim.world.client, sim.scene.pick_bin
    steps = sim.world.step_count
    with pytest.raises(ValueError, match=problem):
        sim.shake_bin("pick_bin", amplitude, frequency, duration)
    assert sim.world.step_count == steps and not sim.shakers["pick_bin"].shaking
    assert c.getDynamicsInfo(pick.body, -1)[0] == 0.0


def test_unknown_bin_and_a_second_shake_are_refused(sim):
    with pytest.raises(ValueError, match="no bin named 'lid'"):
        sim.shake_bin("lid", 0.01, 1.0, 1.0)
    sim.shake_bin("pick_bin", 0.01, 1.0, 0.5, wait=False)
    with pytest.raises(ValueError, match="already shaking"):
        sim.shake_bin("pick_bin", 0.01, 1.0, 0.5)
    sim.shakers["pick_bin"].stop()


# --- over ROS: world/shake_<bin> with the world's shake_* parameters ----------------------------------

def set_world_parameters(client, **values):
    from rclpy.parameter import Parameter
    from rclpy.parameter_client import AsyncParameterClient

    parameters = AsyncParameterClient(client.node, "world")
    client.spin_until(parameters.services_are_ready, 20, "world's parameter services")
    future = parameters.set_parameters([Parameter(name, value=value) for name, value in values.items()])
    client.spin_until(future.done, 20, "parameters set")
    return future.result().results


@pytest.mark.parametrize("name, value", [("shake_amplitude", 1e308), ("shake_amplitude", math.nan),
                                         ("shake_frequency", -3.0), ("shake_duration", math.inf),
                                         ("shake_duration", 0.0), ("shake_amplitude", "big")])
def test_bad_shake_parameters_are_refused_over_ros(client, stack, name, value):
    before = dict(stack.world.shake)
    (result,) = set_world_parameters(client, **{name: value})
    assert not result.successful and name in result.reason
    assert stack.world.shake == before


def test_world_shake_service_spreads_the_pick_bin(client, stack):
    sim, loop = stack.sim, stack.loop
    loop.run(sim.reset, 1)  # eight objects: a tall heap (the world keeps stepping between these calls)
    loop.run(heap_in_a_corner, sim)
    before = loop.run(spread, sim)
    assert all(r.successful for r in set_world_parameters(client, shake_amplitude=0.03, shake_frequency=3.0,
                                                          shake_duration=2.0))
    answer = client.call("world/shake_pick_bin")
    assert answer.success and "0.03 m at 3 Hz for 2 s" in answer.message
    again = client.call("world/shake_pick_bin")  # one shake at a time
    assert not again.success and "already shaking" in again.message
    client.spin_until(lambda: not loop.run(lambda: sim.shakers["pick_bin"].shaking), 60, "the shake to end")
    assert loop.run(spread, sim) > before + 0.01
    pose = loop.run(lambda: sim.world.client.getBasePositionAndOrientation(sim.scene.pick_bin.body)[0])
    assert np.allclose(pose, sim.scene.pick_bin.position, atol=1e-9)
