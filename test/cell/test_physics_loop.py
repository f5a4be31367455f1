"""The physics thread: work handed over runs between steps, periodic work follows sim time."""
import threading
import time

import pytest

from binpick_sim.config import SimulationConfig
from binpick_sim.cell.loop import PhysicsLoop
from binpick_sim.cell.world import World


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
    loop = PhysicsLoop(world, realtime_factor=0)
    calls = []
    loop.every(0.05, lambda: calls.append(round(world.time, 6)))
    loop.every(0.02, lambda: 1 / 0)  # a broken publisher is counted, not fatal
    loop.start()
    try:
        deadline = time.monotonic() + 5
        while world.step_count < 20 and time.monotonic() < deadline:
            time.sleep(0.001)
        stopped_at, seen, failures = loop.run(lambda: (world.step_count, list(calls), loop.failures))
    finally:
        loop.stop()
    assert len(seen) >= 4
    assert seen == [round(0.05 * k, 6) for k in range(1, len(seen) + 1)]  # every 0.05 s of sim time...
    assert abs(len(seen) - stopped_at * 0.01 / 0.05) < 1  # ...and none missed
    assert failures == stopped_at // 2


def test_lockstep_takes_exactly_the_steps_it_is_given_then_settles_once(world):
    loop = PhysicsLoop(world, lockstep=True)
    periodic, settled = [], []
    loop.every(0.01, lambda: periodic.append(world.step_count))
    loop.when_settled(lambda: settled.append(world.step_count))
    loop.start()
    try:
        time.sleep(0.1)
        assert world.step_count == 0  # idle until told
        loop.advance(7)
        loop.advance(0)  # no steps: just settle again (e.g. after a reset)
        loop.advance(3)
        deadline = time.monotonic() + 5
        while len(settled) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)
        assert world.step_count == 10
        assert settled == [7, 7, 10]
        assert periodic == []  # in lock-step, one observation per request instead
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


def test_the_wall_rate_cap_keeps_periodic_work_to_its_rate_in_wall_time_when_faster(world):
    """Faster than real time, capped work runs at most once per period of wall time (it stays due and
    runs at the next step that allows it); uncapped bookkeeping keeps every period of sim time."""
    loop = PhysicsLoop(world, realtime_factor=0, wall_rate_cap=True)
    capped, kept = [], []
    loop.every(0.5, lambda: capped.append(world.time))
    loop.every(0.5, lambda: kept.append(world.time), wall_cap=False)
    started = time.monotonic()
    loop.start()
    try:
        deadline = time.monotonic() + 30
        while world.time < 3.0 and time.monotonic() < deadline:
            time.sleep(0.01)
        seen_capped, seen_kept, sim_time = loop.run(lambda: (list(capped), list(kept), world.time))
        elapsed = time.monotonic() - started
    finally:
        loop.stop()
    assert len(seen_kept) == int(sim_time / 0.5 + 1e-9)  # every 0.5 s of sim time
    assert 1 <= len(seen_capped) <= min(len(seen_kept), elapsed / 0.5 + 1)  # and never more than wall allows


def test_paused_loop_takes_exactly_the_steps_asked_with_its_periodic_work(world):
    loop = PhysicsLoop(world, realtime_factor=0)
    ticks = []
    loop.every(world.timestep, lambda: ticks.append(world.step_count))
    loop.start()
    try:
        paused_at = loop.run(lambda: (setattr(loop, "paused", True), world.step_count)[1])
        time.sleep(0.2)
        assert world.step_count == paused_at  # nothing moves while paused
        assert loop.advance(7).result(10) == paused_at + 7
        assert world.step_count == paused_at + 7 and ticks[-7:] == list(range(paused_at + 1, paused_at + 8))
        loop.run(loop.reset_time)
        assert loop.advance(3).result(10) == 3 and ticks[-3:] == [1, 2, 3]  # periodic work due again from 0
        loop.paused = False
        deadline = time.monotonic() + 10
        while world.step_count < 50 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert world.step_count >= 50  # played again
    finally:
        loop.stop()


def test_steps_still_queued_when_the_loop_stops_fail_instead_of_hanging(world):
    loop = PhysicsLoop(world, lockstep=True)
    loop.start()
    blocked = loop.call(time.sleep, 0.3)  # hold the thread so the next request is still queued
    pending = loop.advance(5)
    loop.stop()
    blocked.result(5)
    assert isinstance(pending.exception(0), RuntimeError)


def test_a_lockstep_loop_that_serves_requests_itself_is_woken_by_work_handed_over(world, monkeypatch):
    """serve_while_holding: between requests the physics thread waits in `serve` (the ROS layer: an
    executor's spin_once), not on its queue; work another thread hands over must end that wait, or every
    such call would hang until the wait times out. The wait is made an hour long to show it is ended."""
    from binpick_sim.cell import loop as loop_module

    monkeypatch.setattr(loop_module, "HOLD_WAIT", 3600.0)
    woken = threading.Event()
    served = []

    def serve(timeout):
        served.append((threading.current_thread().name, timeout))
        woken.wait(timeout)
        woken.clear()

    loop = PhysicsLoop(world, lockstep=True)
    loop.serve_while_holding(serve, woken.set)
    loop.start()
    try:
        result = []
        caller = threading.Thread(target=lambda: result.append(loop.run(lambda: world.step_count, timeout=10)))
        caller.start()
        caller.join(10)
        assert result == [0]  # answered, not left waiting an hour
        loop.run(lambda: None, timeout=10)
        loop.advance(5).result(timeout=10)  # a request handed over from here: the steps are taken
        assert world.step_count == 5
        assert served and all(name == "physics" for name, _ in served)
    finally:
        loop.stop()
    assert not loop.running  # stop() ends the wait too


def test_a_long_lockstep_request_looks_for_requests_now_and_then(world, monkeypatch):
    """Steps are taken in batches; during a long request the loop serves (without waiting) between
    batches now and then, so a cancel arrives before the request would end."""
    from binpick_sim.cell import loop as loop_module

    monkeypatch.setattr(loop_module, "SERVE_PERIOD", 0.0)
    looks = []
    loop = PhysicsLoop(world, lockstep=True)

    def serve(timeout):
        if timeout == 0.0:
            looks.append(world.step_count)
            if len(looks) == 3:
                loop.cancel_steps()  # what world/cancel_steps does, served on this thread
        else:
            time.sleep(min(timeout, 0.01))

    loop.serve_while_holding(serve, lambda: None)
    loop.start()
    try:
        taken = loop.advance(100_000).result(timeout=30)
    finally:
        loop.stop()
    assert looks[:3] == [loop_module.LOCKSTEP_BATCH * k for k in (1, 2, 3)]  # one look per batch here
    assert taken == world.step_count == 3 * loop_module.LOCKSTEP_BATCH  # cancelled after the third


def test_requests_ended_early_say_why_before_whoever_waits_wakes(world):
    """A thread blocked in `result()` wakes before a Future's done-callbacks run, so what ended a request
    (`why`) and how far it got (`taken`) are on the Future before it resolves: the request being taken and
    one queued behind it, ended by a change of state, and one withdrawn (no reason given)."""
    loop = PhysicsLoop(world, realtime_factor=0)
    loop.start()
    try:
        start = loop.run(lambda: (setattr(loop, "paused", True), world.step_count)[1])
        seen = {}

        def watch(name, done):  # reads the Future the moment result() returns, as a goal's thread does
            done.result(10)
            seen[name] = (done.taken, done.why)
        taking, queued = loop.advance(100_000), loop.advance(5)
        watchers = [threading.Thread(target=watch, args=item) for item in (("taking", taking), ("queued", queued))]
        for watcher in watchers:
            watcher.start()
        deadline = time.monotonic() + 10
        while world.step_count < start + 10 and time.monotonic() < deadline:  # the first is being taken
            time.sleep(0.01)
        assert loop.run(loop.cancel_steps, "the simulation was set STOPPED") > 5
        for watcher in watchers:
            watcher.join(10)
        assert 0 < seen["taking"][0] < 100_000 and seen["taking"][1] == "the simulation was set STOPPED"
        assert seen["queued"] == (0, "the simulation was set STOPPED")
        start = loop.run(lambda: world.step_count)
        withdrawn = loop.advance(100_000)
        while world.step_count < start + 10 and time.monotonic() < deadline + 10:
            time.sleep(0.01)
        loop.run(loop.withdraw, withdrawn)
        assert withdrawn.result(10) and withdrawn.why is None and 0 < withdrawn.taken < 100_000
    finally:
        loop.stop()


def test_a_loop_interrupted_between_making_its_thread_and_starting_it_still_stops(world, monkeypatch):
    """Ctrl-C can land in `start` after the thread object is made and before it runs; `stop` (the stack's
    clean-up) must then stop what there is, not fail on joining a thread that never started."""
    loop = PhysicsLoop(world, realtime_factor=0)

    def interrupted(thread):
        raise KeyboardInterrupt

    monkeypatch.setattr(threading.Thread, "start", interrupted)
    with pytest.raises(KeyboardInterrupt):
        loop.start()
    monkeypatch.undo()
    loop.stop()
    assert not loop.running
    assert loop.run(lambda: world.client.getNumBodies()) >= 0  # the world is this thread's again
