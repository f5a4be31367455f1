"""The physics thread: work handed over runs between steps, periodic work follows sim time."""
import threading
import time

import pytest

from binpick_sim.config import SimulationConfig
from binpick_sim.loop import PhysicsLoop
from binpick_sim.world import World


@pytest.fixture
def world():
    world = World(SimulationConfig(timestep=0.01))
    yield world
    world.close()


def test_calls_run_on_the_physics_thread_and_return_results(world):
    loop = PhysicsLoop(world, realtime_factor=0)
    loop.start()
    try:
        assert loop.run(lambda: threading.current_thread().name) == "physics"
        with pytest.raises(ZeroDivisionError):
            loop.run(lambda: 1 / 0)
        assert loop.running  # an exception in a call does not stop the physics
    finally:
        loop.stop()
    assert not loop.running
    assert loop.run(lambda: 42) == 42  # stopped: runs in the caller's thread


def test_periodic_work_follows_sim_time(world):
    loop = PhysicsLoop(world, lockstep=True)
    calls = []
    loop.every(0.05, lambda: calls.append(round(world.time, 6)))
    loop.every(0.02, lambda: 1 / 0)  # a broken publisher is counted, not fatal
    loop.start()
    try:
        loop.advance(20)  # 0.2 s of sim time
        loop.run(lambda: None)
        deadline = time.monotonic() + 5
        while world.step_count < 20 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        loop.stop()
    assert calls == [0.05, 0.1, 0.15, 0.2]
    assert loop.failures == 10


def test_lockstep_takes_exactly_the_steps_it_is_given(world):
    loop = PhysicsLoop(world, lockstep=True)
    loop.start()
    try:
        time.sleep(0.1)
        assert world.step_count == 0  # idle until told
        loop.advance(7)
        deadline = time.monotonic() + 5
        while world.step_count < 7 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)
        assert world.step_count == 7
    finally:
        loop.stop()


def test_real_time_is_never_outrun(world):
    """At a real-time factor of 1 the sim clock never runs ahead of the wall clock."""
    loop = PhysicsLoop(world, realtime_factor=1.0)
    start = time.monotonic()
    loop.start()
    try:
        time.sleep(0.3)
        sim_time, wall = loop.run(lambda: world.time), time.monotonic() - start
    finally:
        loop.stop()
    assert 0 < sim_time <= wall + 0.02
