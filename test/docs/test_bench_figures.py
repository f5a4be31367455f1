"""The benchmark's figures (bench/figures.py, bench/run.py): a ratio measured in rounds is claimed on the
median of the rounds' ratios, with their spread beside it (issue 33); and the yardsticks and readings the
figures rest on (the in-process floor, the per-thread CPU). No speed is asserted here: made-up numbers, or
what the tools do."""
import json
import os
import subprocess
import sys
import time

import pytest

from bench.figures import Figure, per_round
from bench.run import table


def test_a_ratio_in_rounds_is_their_median_with_min_and_max_beside_it():
    ratios = per_round([90.0, 100.0, 80.0, 99.0, 91.0], [100.0, 100.0, 100.0, 100.0, 100.0])
    figure = Figure("g", "env / raw", 91.0, "steps/s", 100.0, ratios=ratios)
    assert figure.ratio == pytest.approx(0.91)  # the median, not the mean (0.92) nor value / raw by chance
    assert figure.spread == pytest.approx((0.80, 1.00))
    data = json.loads(json.dumps(figure.as_dict()))
    assert (data["ratio_min"], data["ratio"], data["ratio_max"], data["rounds"]) == \
        pytest.approx((0.80, 0.91, 1.00, 5))
    row = table([figure]).splitlines()[-1]
    assert row.endswith("| 0.91 | 0.80-1.00 (5) |")


def test_a_figure_measured_once_keeps_value_over_raw_and_no_spread():
    figure = Figure("g", "once", 50.0, "ms", 200.0)
    assert figure.ratio == 0.25 and figure.spread is None
    assert figure.as_dict()["rounds"] == 0
    assert table([figure]).splitlines()[-1].endswith("| 0.25 |  |")


def test_rounds_are_paired_one_to_one():
    with pytest.raises(ValueError, match="3 rounds against 2"):
        per_round([1.0, 2.0, 3.0], [1.0, 2.0])


def test_the_floor_rows_give_the_gap_and_the_share_of_it_the_floor_is():
    from bench.ros_path import floor_figures

    from bench.ros_path import CHANNEL

    rates = {"direct": ([250.0, 200.0, 250.0, 200.0], 4.0), "ros": ([200.0, 160.0, 200.0, 250.0], 4.6),
             CHANNEL: ([225.0, 180.0, 225.0, 200.0], 4.2),
             "floor": ([5000.0, 4000.0, 10000.0, 4000.0], 0.3),
             "socket floor": ([20000.0, 50000.0, 25000.0, 10000.0], 0.05),
             "floor, working": ([1000 / 5.5, 1000 / 5.4, 1000 / 5.6, 1000 / 5.4], 5.4),
             "socket floor, working": ([1000 / 5.2, 1000 / 5.1, 1000 / 5.3, 1000 / 5.1], 5.1)}
    # gaps 1.0, 1.25, 1.0, -1.0 ms (a busy round); trips 0.2, 0.25, 0.1, 0.25 ms; over the socket 0.05, 0.02,
    # 0.04, 0.1 ms; around 5 ms of work 0.5, 0.4, 0.6, 0.4 and 0.2, 0.1, 0.3, 0.1 ms; the channel's gaps
    # 0.444, 0.556, 0.444, 0.0 ms
    gap, floor, cpu, socket, working, channel_gap, channel_floor = floor_figures("X ros / direct, state", rates,
                                                                               "note")
    assert gap.value == pytest.approx(1.0) and gap.unit == "ms"
    assert floor.value == pytest.approx(0.225) and floor.raw_pybullet == pytest.approx(1.0)
    assert floor.ratio == pytest.approx(0.225)  # of the medians: the busy round's negative gap moves it little
    assert cpu.value == pytest.approx(0.3) and cpu.ratio == pytest.approx(0.5)  # of 4.6 - 4.0 ms
    assert socket.value == pytest.approx(0.045) and socket.raw_pybullet == pytest.approx(0.225)
    assert working.value == pytest.approx(0.45) and working.ratio == pytest.approx(0.45)
    assert channel_gap.value == pytest.approx(0.4444, abs=1e-3)
    assert channel_floor.value == pytest.approx(0.15) and channel_floor.raw_pybullet == pytest.approx(0.4444, abs=1e-3)


def test_the_socket_echo_answers_each_request_from_another_process():
    """The floor without DDS is a real exchange: a second Python process answers every request's id."""
    from bench.echo import SocketEcho

    echo = SocketEcho()
    try:
        for _ in range(50):
            echo.exchange(timeout=10.0)  # raises if an answer names another request
        start = time.perf_counter()
        echo.exchange(timeout=10.0, work=0.05)  # the server keeps busy 50 ms before it answers
        assert time.perf_counter() - start >= 0.05
        assert echo.request == 52 and echo.process.poll() is None
    finally:
        echo.close()
    assert echo.process.returncode == 0  # it ended when the socket closed


def test_the_image_echo_serves_the_bare_steps_frames_over_rclpy():
    """The image env's floor is a real exchange: another process steps, draws and publishes both frames of each
    request, stamped with its id, and the exchange returns only once both are in hand as arrays."""
    from bench.echo import IMAGE_TOPICS, Echo

    echo = Echo(bare="tiny")
    try:
        for _ in range(3):
            echo.exchange(timeout=30.0)
        client = echo.client
        assert [client.stamp(topic) for topic in IMAGE_TOPICS] == [echo.request] * 2
        rgb, depth = client.rgb(), client.depth()
        assert rgb.shape == (64, 64, 3) and depth.shape == (64, 64)
        assert len({tuple(pixel) for pixel in rgb.reshape(-1, 3).tolist()}) > 10  # a drawn scene, not one colour
        assert 0.0 < depth.min() and depth.max() <= 1.0  # the depth buffer as it comes (not metres)
    finally:
        echo.close()
    assert echo.process.returncode is not None


def test_the_socket_image_echo_sends_the_bare_steps_frame_after_each_reply():
    """The step channel's image floor is a real exchange too: another process steps, replies and draws, and
    the frame of that request follows the reply on the socket, received into arrays."""
    from bench.echo import SocketEcho

    echo = SocketEcho(bare="tiny")
    try:
        for _ in range(3):
            echo.exchange(timeout=30.0)  # raises if the reply or the frame is another request's
        frame = echo.frame
        assert frame["frame"] == echo.request == 4  # (one exchange at the start)
        rgb, depth = frame["arrays"]["rgb"], frame["arrays"]["depth"]
        assert rgb.shape == (64, 64, 3) and depth.shape == (64, 64)
        assert len({tuple(pixel) for pixel in rgb.reshape(-1, 3).tolist()}) > 10  # a drawn scene, not one colour
        assert 0.0 < depth.min() and depth.max() <= 1.0  # the depth buffer as it comes (not metres)
    finally:
        echo.close()
    assert echo.process.returncode == 0  # it ended when the socket closed


def test_like_for_like_rounds_are_the_steps_between_two_marks():
    from bench.like_for_like import Timed

    def made(marks):  # (steps, step_time, physics_time, physics_calls, ik_time, render_time) after each round
        run = Timed.__new__(Timed)
        run.marks = [(0, 0.0, 0.0, 0, 0.0, 0.0), *marks]
        return run

    env = made([(10, 0.010, 0.009, 200, 0.0005, 0.0), (20, 0.030, 0.018, 400, 0.001, 0.0)])
    peer = made([(10, 0.020, 0.015, 200, 0.001, 0.0), (20, 0.040, 0.030, 400, 0.002, 0.0)])
    first, second = env.rounds()
    assert (first.steps, second.steps) == (10, 10)
    assert second.rate == pytest.approx(10 / 0.020) and second.physics_rate == pytest.approx(10 / 0.009)
    assert env.per_round("rate", None, "physics_rate") == pytest.approx([0.9, 0.45])
    assert env.per_round("rate", peer) == pytest.approx([2.0, 1.0])
    assert env.per_round("rate", None, "physics_ik_rate") == pytest.approx([0.95, 0.475])
    # an image env's raw: its stepping and its renders (the second round renders 0.002 s of its 0.020 s)
    images = made([(10, 0.010, 0.006, 200, 0.0, 0.003), (20, 0.030, 0.015, 400, 0.0, 0.005)])
    assert images.per_round("rate", None, "physics_render_rate") == pytest.approx([0.9, 0.55])


def test_an_image_env_is_timed_inside_its_own_steps():
    """The image env's raw reference is read from the env's own stepping and getCameraImage calls: both
    took time, within the env steps' time."""
    from bench.camera_in_process import image_env_timed

    timed = image_env_timed("tiny", rounds=2, turn=3)
    assert timed.steps == 6 and len(timed.rounds()) == 2
    assert timed.physics_time > 0 and timed.render_time > 0
    assert timed.physics_time + timed.render_time < timed.step_time
    assert all(0 < ratio < 1 for ratio in timed.per_round("rate", None, "physics_render_rate"))


@pytest.mark.parametrize("scene", ["one-object", "default"])
def test_the_in_process_floor_makes_the_env_step_s_pybullet_calls_and_moves_the_arm_alike(scene):
    """bench/lean_step.py is a yardstick only while it does what FrankaDelta-v0's step does: the same PyBullet
    calls per step, the same motion from the same state and actions (its IK quaternion is not renormalised, so
    a last bit may differ), the same episode ends, an observation in the env's space. On the default scene its
    IK is the cell's (a posture pass and refinements on the arm's IK copy), whose calls are counted too."""
    import collections

    import gymnasium as gym
    import numpy as np

    from bench.lean_step import LeanDelta
    from bench.like_for_like import ONE_OBJECT
    from binpick_sim.paths import default_config

    scene = ONE_OBJECT if scene == "one-object" else default_config()

    def counting(client, calls):
        for name, function in list(vars(client).items()):
            if not name.startswith("_") and callable(function):
                def counted(*args, _name=name, _function=function, **kwargs):
                    calls[_name] += 1
                    return _function(*args, **kwargs)
                setattr(client, name, counted)

    env = gym.make("binpick_sim/FrankaDelta-v0", backend="direct", observation="state", config_file=scene)
    lean = LeanDelta(scene)
    try:
        env.reset(seed=3)
        lean.reset(seed=3)
        actions = np.random.default_rng(3).uniform(-1, 1, (12, 5)).astype(np.float32)
        for action in actions[:2]:  # every PyBullet function a step uses is bound to the clients by now
            env.step(action)
            lean.step(action)
        sim = env.unwrapped.backend.sim
        mine, floor = collections.Counter(), collections.Counter()
        for client in (sim.world.client, sim.arm.solver.client):  # (the IK copy has a client of its own)
            counting(client, mine)
        for client in (lean.client, lean.copy):
            counting(client, floor)
        for action in actions[2:]:
            observation, _, *ends, _ = env.step(action)
            lean_observation, _, *lean_ends, _ = lean.step(action)
            assert lean_ends == ends
            assert env.observation_space.contains(lean_observation)
            for key in ("joint_positions", "joint_velocities", "ee_position"):
                np.testing.assert_allclose(lean_observation[key], observation[key], rtol=0, atol=1e-6)
            assert lean_observation["gripper_open"] == observation["gripper_open"]
        steps = env.unwrapped.config.task.steps_per_action
        assert floor == mine and mine["stepSimulation"] == 10 * steps
        # the default scene's IK: more than one call a step (posture pass, refinement), on the copy
        assert (mine["calculateInverseKinematics"] > 10) == (scene != ONE_OBJECT)
    finally:
        env.close()
        lean.close()


def test_the_published_camera_rows_take_turns_with_the_raw_call():
    """bench.camera's published rows in rounds: per round the camera streams while watched, then nobody
    watches while the raw call takes its turn, and the next turn's frames come again once it is watched anew;
    each round gives both rates, without and with the mask."""
    from bench.camera import published_in_rounds

    rounds = published_in_rounds(64, 64, renderer="tiny", rounds=2, turn=0.5)
    assert set(rounds) == {False, True}
    for published, raw in rounds.values():
        assert len(published) == len(raw) == 2
        assert all(rate > 0 for rate in published + raw)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="thread names and /proc are Linux's")
@pytest.mark.parametrize("named", [True, False])
def test_profile_published_reads_each_thread_s_cpu_by_the_name_the_trace_gives_it(named):
    """`bench.profile_published --threads`: a process started with bench/trace on its PYTHONPATH and
    BINPICK_THREAD_NAMES set names its Python threads for the OS, and thread_cpu / thread_rows book a busy
    one's CPU to that name; without the variable the thread keeps its process's name."""
    from bench.profile_published import thread_cpu, thread_rows
    from bench.profile_ros import TRACE

    program = ("import threading, time\n"
               "done = threading.Event()\n"
               "def spin():\n"
               "    end = time.thread_time() + 0.3\n"
               "    while time.thread_time() < end: pass\n"
               "    print('spun', flush=True); done.wait()\n"
               "thread = threading.Thread(target=spin, name='physics'); thread.start()\n"
               "input(); done.set(); thread.join()\n")
    env = {**os.environ, "PYTHONPATH": str(TRACE)}
    env.pop("BINPICK_THREAD_NAMES", None)
    if named:
        env["BINPICK_THREAD_NAMES"] = "1"
    child = subprocess.Popen([sys.executable, "-c", program], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout.readline().strip() == "spun"
        rows = thread_rows({}, thread_cpu(child.pid), 1.0, 10)  # each thread's CPU since it started
    finally:
        child.communicate("\n", timeout=10)
    assert child.returncode == 0
    busiest, cores, ms = rows[0]
    assert cores >= 0.25 and ms == pytest.approx(100 * cores)  # 0.3 s of CPU; per frame: of 10 frames in 1 s
    assert (busiest == "physics") == named and "(main)" not in busiest


def test_the_default_cell_rows_keep_a_resets_settling_out_of_the_steps_own_stepping(monkeypatch):
    """bench.default_cell: an episode's first rate includes its reset, the second its steps alone, the third the
    steps' own World.step calls alone (the reset's settling, which also steps the world, stays out of it)."""
    from bench import default_cell

    ticks = iter(range(10_000))
    monkeypatch.setattr(default_cell, "clock", lambda: float(next(ticks)))

    class World:
        def step(self, n):
            next(ticks)  # a physics call costs one tick of the fake clock

    class Env:
        action_space = type("Space", (), {"seed": lambda self, seed: None, "sample": lambda self: 0})()

        def __init__(self, world):
            self.world = world

        def reset(self, seed):
            for _ in range(10):  # the settle: ten physics calls
                self.world.step(24)

        def step(self, action):
            self.world.step(24)
            return None, 0.0, False, False, {}

    world = World()
    episodes = default_cell.Episodes(Env(world), world)
    whole, steps, stepping = episodes.episode(seed=0, steps=5)
    assert stepping == 5 / 10  # 5 steps, each timed as 2 ticks (its call, and the timer's own read): the
    # reset's 10 calls (20 ticks more) are not counted
    assert steps < stepping and whole < steps  # the steps' own rate counts more than their stepping


def test_the_default_cell_growth_scenes_hold_the_objects_asked_for(tmp_path):
    """bench.default_cell's growth rows step scene files with k objects in the pick bin: each written file loads
    back with exactly k (a config change the checked path refused stopped the whole group once)."""
    from bench.default_cell import scene_with
    from binpick_sim.config import load_config

    for objects in (0, 20):
        pick = load_config(scene_with(objects, tmp_path)).scene.pick_bin
        assert (pick.min_objects, pick.max_objects) == (objects, objects)


def test_the_bench_writes_the_bytecode_before_it_times_anything(monkeypatch, tmp_path):
    """bench.run writes the package's .pyc before any group runs: on a machine with PYTHONDONTWRITEBYTECODE
    every `sim` process a ROS row starts compiled the checkout from source (+0.3 s a start) otherwise."""
    import importlib.util

    import binpick_sim.paths
    from bench import run

    cached = importlib.util.cache_from_source(binpick_sim.paths.__file__)
    if os.path.exists(cached):
        os.remove(cached)  # as a fresh clone has it (another process importing meanwhile compiles in memory)
    seen = []
    monkeypatch.setattr(run, "require", lambda *names: None)  # the bench extras need not be installed
    monkeypatch.setattr(run, "collect", lambda names, skipped: seen.append(os.path.exists(cached)) or [])
    monkeypatch.setenv("BENCH_OUT", str(tmp_path / "bench.json"))
    assert run.main(["default_cell"]) == 0
    assert seen == [True]


def test_a_group_that_cannot_run_here_says_so_under_the_table_and_in_the_json(monkeypatch, tmp_path, capsys):
    """bench.standard needs simulation_interfaces: without it `make bench` printed nothing for the group."""
    import json

    from bench import run
    from binpick_sim.nodes.servers import simulation_node

    monkeypatch.setattr(run, "require", lambda *names: None)
    monkeypatch.setattr(run, "write_bytecode", lambda: None)
    monkeypatch.setattr(simulation_node, "available", lambda: False)
    monkeypatch.setenv("BENCH_OUT", str(tmp_path / "bench.json"))
    assert run.main(["standard"]) == 0
    assert "Skipped: standard: needs simulation_interfaces" in capsys.readouterr().out
    assert json.loads((tmp_path / "bench.json").read_text())["skipped"]["standard"].startswith("needs")
