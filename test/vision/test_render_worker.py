"""Rendering in a worker process: the picture of the captured state, and physics that goes on meanwhile."""
import dataclasses
import time
from pathlib import Path

import numpy as np
import pybullet_data
import pytest

from binpick_sim.cell.vision.labels import label_image
from binpick_sim.cell.render_process.worker import RenderWorker, capture
from binpick_sim.cell.bin_picking_sim import BinPickingSim
from binpick_sim.nodes.clients.client import TOPICS, SimClient
from binpick_sim.nodes.common.convert import to_seconds
from binpick_sim.nodes.servers.camera_frames import GROW_WINDOW

from helpers import with_renderer


def test_worker_renders_the_state_it_was_sent(config, renderer):
    """Arm moved, an object removed, the camera refocused: the worker's frame is the live world's own
    render of that state, pixel for pixel, segmentation ids included, with each renderer. A duck (its
    centre of mass 2 cm from its link frame) is where it is from the first frame on."""
    config = with_renderer(config, renderer, width=320, height=240)
    sim = BinPickingSim(config)
    worker = RenderWorker(config, renderer)
    try:
        sim.reset(seed=3)
        c = sim.world.client
        duck = Path(pybullet_data.getDataPath()) / "duck_vhacd.urdf"
        pose = (sim.scene.pick_bin.to_world([0.03, 0.03, 0.08]), np.array([0.0, 0.0, 0.0, 1.0]))
        sim.scene.add_object(c.loadURDF(str(duck), pose[0].tolist(), pose[1].tolist()), duck, "duck", pose)
        assert np.linalg.norm(c.getDynamicsInfo(sim.scene.objects[-1].body, -1)[3]) > 0.01
        for step in range(2):
            if step == 1:
                sim.arm.move_to(sim.arm.home + [0.3, 0.2, 0, 0, 0, 0, 0, 0, 0])
                sim.scene.remove_object(sim.scene.objects[0].name)
                sim.camera.set_view(fov_deg=45.0)
            worker.request(capture(sim, sim.camera, segmentation=True))
            done = worker.wait(timeout=120)
            truth = sim.camera.render(segmentation=True)
            assert done is not None and done.stamp == truth.stamp
            assert np.array_equal(done.rgb, truth.rgb) and np.array_equal(done.depth, truth.depth)
            assert np.array_equal(done.labels, label_image(sim, truth.segmentation))
            assert np.array_equal(done.k, sim.camera.intrinsics())
    finally:
        worker.close()
        sim.close()
    assert not worker.process.is_alive()


def test_frames_travel_through_shared_memory_beside_their_announcement():
    """FrameWriter / FrameReader, as worker and node use them: the arrays arrive equal (dtypes, shapes, a strided
    one in band), not in the pickle; three frames sent before the first is read each arrive whole (the slots
    rotate); a larger frame grows the file while two frames of the old slots are not yet read, and they still
    arrive whole (the old slots' pages are handed back only later); the next plain message still reads."""
    import os
    import socket
    from multiprocessing.connection import Connection

    from binpick_sim.cell.render_process.shared_frames import SLOTS, FrameReader, FrameWriter, InSharedMemory, shared_file
    from binpick_sim.cell.render_process.worker import AHEAD, RenderedFrame

    assert AHEAD < SLOTS  # a frame is written only once the one AHEAD before it was taken: its slot is free
    rng = np.random.default_rng(0)

    def frame(stamp, height, width, step=2):  # a strided cloud goes in band: it must fit the socket's buffer
        return RenderedFrame(stamp, rng.integers(0, 256, (height, width, 3), dtype=np.uint8),
                             rng.random((height, width), dtype=np.float32),
                             rng.integers(-3, 9, (height, width), dtype=np.int32), np.eye(3) * stamp,
                             rng.random((height, width, 4), dtype=np.float32)[:, ::step])

    a, b = socket.socketpair()
    sender, receiver = Connection(a.detach()), Connection(b.detach())
    fd = shared_file()
    writer, reader = FrameWriter(os.dup(fd)), FrameReader(fd)
    frames = [frame(1.5, 48, 64), frame(2.5, 48, 64), frame(3.5, 48, 64), frame(4.5, 480, 640, 1), frame(5.5, 48, 64)]
    assert SLOTS == 3
    try:
        announced = []
        for sent in frames[:3]:
            writer.send(sender, sent)
            announced.append(receiver.recv())
        assert isinstance(announced[0], InSharedMemory)
        assert 48 * 32 * 16 < len(announced[0].pickled) < 48 * 32 * 16 + 2000  # only the strided cloud in band
        assert [size for _, size in announced[0].places] == [48 * 64 * 3, 48 * 64 * 4, 48 * 64 * 4, 9 * 8]
        got = [reader.receive(announced.pop(0))]  # the first read only after all three were written
        writer.send(sender, frames[3])  # 8.3 MB, where a slot held 32 KB: the file grows; 2.5, 3.5 unread
        announced.append(receiver.recv())
        assert announced[-1].places[0][0] >= SLOTS * 4096  # past the first set of slots
        got.append(reader.receive(announced.pop(0)))
        writer.send(sender, frames[4])  # ... into the new set; 3.5 still unread in the old one
        sender.send("next")
        announced.append(receiver.recv())
        got += [reader.receive(one) for one in announced]
        for sent, arrived in zip(frames, got):
            assert arrived.stamp == sent.stamp
            for name in ("rgb", "depth", "labels", "k", "cloud"):
                assert getattr(arrived, name).dtype == getattr(sent, name).dtype
                assert np.array_equal(getattr(arrived, name), getattr(sent, name)), (sent.stamp, name)
        assert receiver.recv() == "next"
    finally:
        for end in (sender, receiver):
            end.close()
        writer.close()
        reader.close()


def test_physics_goes_on_while_a_frame_renders(ros_context, tmp_path):
    """A frame big enough to take TinyRenderer seconds: while the worker draws it, the world keeps stepping,
    so the frame goes out stamped with the (older) sim time of the state it shows. Rendered on the physics
    thread, a frame's age when it goes out is exactly 0: nothing steps meanwhile."""
    from rclpy.parameter import Parameter

    from binpick_sim.config import load_config, save_config
    from binpick_sim.nodes.process.stack import SimStack
    from binpick_sim.paths import default_config

    config = load_config(default_config())
    path = save_config(dataclasses.replace(config, camera=dataclasses.replace(config.camera, width=2048,
                                                                              height=1536)), tmp_path / "big.yaml")
    world = [Parameter("realtime_factor", value=0.0), Parameter("config", value=str(path))]
    with SimStack(ros_context, {"world": world}) as stack:
        camera = next(n for n in stack.nodes if n.get_name() == "camera")
        assert camera.use_worker and camera.worker is None  # nobody watches yet: no process started
        watcher = SimClient("big_watcher", context=ros_context,
                            topics={"camera/depth/image_raw": TOPICS["camera/image_raw"]})
        try:
            watcher.wait_for_topics(["camera/depth/image_raw"], timeout=240)
            now = stack.sim.world.time  # read as the frame arrives (the physics runs on meanwhile)
            assert camera.worker is not None and camera.worker.workers[0].process.is_alive()
            frame = watcher.latest["camera/depth/image_raw"]
            assert frame.width == 2048
            # Drawing it took TinyRenderer a second or more, during which the world, as fast as it goes,
            # took hundreds of steps at least; a frame drawn between two steps would be a few steps old.
            assert now - to_seconds(frame.header.stamp) > 100 * stack.sim.world.timestep, stack.loop.rates()
        finally:
            watcher.close()


@pytest.mark.serial
def test_without_the_worker_a_frame_stops_physics_while_it_renders(ros_context):
    """The reference: render_process false, each frame is rendered between two steps (age 0)."""
    from rclpy.parameter import Parameter

    from binpick_sim.nodes.process.stack import SimStack

    with SimStack(ros_context, {"world": [Parameter("realtime_factor", value=0.0)],
                                "camera": [Parameter("render_process", value=False)]}) as stack:
        camera = next(n for n in stack.nodes if n.get_name() == "camera")
        watcher = SimClient("plain_watcher", context=ros_context,
                            topics={"camera/depth/image_raw": TOPICS["camera/image_raw"]})
        try:
            watcher.wait_for_new("camera/depth/image_raw", count=2, timeout=120)
            # the node counts a frame once all its topics are out: the depth image can arrive before that
            watcher.spin_until(lambda: camera.frames >= 2, 30, "the node to count its second frame")
            assert camera.frame_age == 0.0 and camera.worker is None
        finally:
            watcher.close()


def test_worker_mirrors_every_arm_and_labels_each_as_robot():
    """Two arms, the second moved and the pick bin displaced (as a shake moves it): the worker's frame is
    the live render of that state, and both arms' pixels carry the robot code."""
    from binpick_sim.cell.vision.labels import ROBOT
    from binpick_sim.config import load_config
    from binpick_sim.paths import share_dir

    config = load_config(share_dir() / "config" / "scene_two_arms.yaml")
    config = dataclasses.replace(config, camera=dataclasses.replace(config.camera, width=160, height=120))
    sim = BinPickingSim(config)
    worker = RenderWorker(config, "tiny")
    try:
        sim.reset(seed=1)
        left, right = sim.arms
        right.move_to(right.home + [0.6, 0.3, 0, 0, 0, 0, 0, 0, 0])
        c, bin_body = sim.world.client, sim.scene.pick_bin.body
        position, orientation = c.getBasePositionAndOrientation(bin_body)
        c.resetBasePositionAndOrientation(bin_body, np.add(position, [0.0, 0.02, 0.0]), orientation)
        worker.request(capture(sim, sim.camera, segmentation=True))
        done = worker.wait(timeout=120)
        truth = sim.camera.render(segmentation=True)
        assert done is not None
        assert np.array_equal(done.rgb, truth.rgb) and np.array_equal(done.depth, truth.depth)
        labels = label_image(sim, truth.segmentation)
        assert np.array_equal(done.labels, labels)
        for arm in (left, right):
            assert np.any(truth.segmentation == arm.body), "both arms are in view"
            assert np.all(labels[truth.segmentation == arm.body] == ROBOT)
    finally:
        worker.close()
        sim.close()


@pytest.mark.serial
def test_real_time_holds_while_the_camera_is_watched_at_640x480(ros_context, tmp_path):
    """`sim` as a user runs it (its own process, realtime_factor 1, the default 640x480 camera at 10 Hz)
    with camera/image_raw watched: the world keeps real time while the worker renders, frames keep
    coming (no gap of 2 s), and each is stamped with a sim time no later than the clock it arrives at."""
    import time

    from rosgraph_msgs.msg import Clock

    from binpick_sim.nodes.process.spawn import SimProcess

    process = SimProcess({"realtime_factor": 1.0}, log=tmp_path / "sim.log")
    watcher = SimClient("realtime_watcher", context=ros_context,
                        topics={"/clock": Clock, "camera/image_raw": TOPICS["camera/image_raw"]})

    def seconds(stamp) -> float:
        return stamp.sec + stamp.nanosec * 1e-9

    try:
        watcher.wait_for_topics(["/clock", "camera/image_raw"], timeout=120)
        watcher.spin_for(2.0)  # the worker process is up and drawing
        sim_start, start = seconds(watcher.latest["/clock"].clock), time.perf_counter()
        counts, stale = [watcher.counts["camera/image_raw"]], []
        while time.perf_counter() - start < 8.0:
            process.check_alive()
            watcher.spin_for(0.5)
            counts.append(watcher.counts["camera/image_raw"])
            image_time = seconds(watcher.latest["camera/image_raw"].header.stamp)
            if image_time > seconds(watcher.latest["/clock"].clock) + 1e-9:
                stale.append(image_time)
        factor = (seconds(watcher.latest["/clock"].clock) - sim_start) / (time.perf_counter() - start)
        assert factor > 0.9, f"real-time factor {factor:.2f} with the camera watched"
        gaps = [later - earlier for earlier, later in zip(counts, counts[4:])]  # frames per 2 s window
        assert min(gaps) > 0, f"no frame for 2 s (frames counted every 0.5 s: {counts})"
        assert not stale, f"frames stamped after the clock they arrived at: {stale}"
    finally:
        watcher.close()
        process.stop()


# --- Reasoner.visibility from a plain script, without a __main__ guard (issue 28, item 9) ---------------
PLAIN_SCRIPT = """
from binpick_sim.cell.bin_picking_sim import BinPickingSim
from binpick_sim.config import load_config
from binpick_sim.paths import default_config
from binpick_sim.reasoning import Reasoner

print("script body runs", flush=True)
sim = BinPickingSim(load_config(default_config()))
sim.reset(seed=0)
reasoner = Reasoner(sim)
answer = reasoner.visibility(reasoner.default_view(), 64, 48)
print("seen:", sorted(name for name, a in answer.items() if a["pixels"] > 0), flush=True)
reasoner.close()
sim.close()
"""


@pytest.mark.slow
def test_visibility_works_from_a_plain_script_without_a_main_guard(tmp_path):
    """The render worker is a fresh `python -m` process: it does not run the user's script again (with
    multiprocessing's spawn it did, and the script's second run failed starting a worker of its own)."""
    import subprocess
    import sys

    script = tmp_path / "plain.py"
    script.write_text(PLAIN_SCRIPT)
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=240,
                            cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.count("script body runs") == 1, result.stdout  # the worker did not run it again
    assert "seen: [" in result.stdout and "object_" in result.stdout, result.stdout


def settle(workers, timeout=120.0):
    """Look at a RenderWorkers until the worker `grow` started has joined (or failed)."""
    deadline = time.monotonic() + timeout
    while workers.warming is not None:
        assert time.monotonic() < deadline, "the new worker never drew its first frame"
        workers.poll()
        time.sleep(0.02)


def test_workers_drawing_in_turn_answer_in_the_order_asked(config):
    """RenderWorkers (a camera's workers): one to start with; `grow` starts one more, which draws the newest state
    first (thrown away) and takes no turn until then, so the frames asked for meanwhile come from the first;
    then requests go to the workers in turn and the frames come back in the order they were asked for, even
    when a later one is done first (a small frame asked after a large one, on the other worker); a FrameFailed
    answers its request and the order goes on. No more than `most` are started."""
    from binpick_sim.cell.render_process.worker import FrameFailed, RenderWorkers

    config = with_renderer(config, "tiny", width=64, height=48)
    sim = BinPickingSim(config)
    workers = RenderWorkers(lambda: RenderWorker(config, "tiny"), most=2)
    try:
        assert workers.ahead == 2 and len(workers.pids) == 1 and not workers.settled
        assert not workers.grow()  # nothing asked for yet: nothing a new worker could draw first
        sim.reset(seed=1)
        first = capture(sim, sim.camera, segmentation=False)
        workers.request(first)
        assert workers.wait(timeout=120).stamp == first.stamp and workers.settled
        assert workers.grow() and not workers.grow()  # one is starting: no other meanwhile
        assert len(set(workers.pids)) == 2 and workers.ahead == 2 and not workers.settled
        meanwhile = []
        for _ in range(2):
            sim.world.step(5)
            meanwhile.append(capture(sim, sim.camera, segmentation=False))
            workers.request(meanwhile[-1])
        assert [workers.wait(timeout=120).stamp for _ in meanwhile] == [s.stamp for s in meanwhile]
        settle(workers)
        assert len(workers.workers) == 2 and workers.ahead == 3 and workers.growth_error is None
        assert not workers.grow()  # `most` are there
        large = dataclasses.replace(sim.camera.config, width=1024, height=768)  # about a second with tiny
        states = []
        for camera in (large, sim.camera.config, sim.camera.config):
            sim.world.step(5)
            states.append(dataclasses.replace(capture(sim, sim.camera, segmentation=False), camera=camera))
            workers.request(states[-1])
        assert workers.pending == 3
        # the second (small, on the other worker) is drawn long before the first: it waits its turn
        assert workers.workers[1].connection.poll(30) and workers.poll() is None
        frames = [workers.wait(timeout=120) for _ in states]
        assert [f.stamp for f in frames] == [s.stamp for s in states] and workers.pending == 0
        assert frames[0].rgb.shape == (768, 1024, 3) and frames[1].rgb.shape == (48, 64, 3)
        ghost = ("ghost", 99, str(Path("/nonexistent/ghost.urdf")), 1.0, (0.0, 0.0, 0.5), (0.0, 0.0, 0.0, 1.0))
        broken = dataclasses.replace(states[0], camera=sim.camera.config, objects=(ghost,))  # cannot be loaded
        workers.request(broken)
        workers.request(states[1])
        with pytest.raises(FrameFailed):
            for _ in range(2):
                workers.wait(timeout=60)
        assert workers.wait(timeout=60).stamp == states[1].stamp and workers.pending == 0
    finally:
        workers.close()
        sim.close()
    assert not any(worker.process.is_alive() for worker in workers.workers)
    with pytest.raises(ValueError, match="one render worker at least"):
        RenderWorkers(lambda: RenderWorker(config, "tiny"), most=0)


def test_a_worker_that_cannot_join_is_reported_and_not_tried_again(config):
    """A worker `grow` started that cannot draw (here: a renderer name its cell refuses) leaves the first one
    serving, says why once (`growth_error`, which the frame thread logs), and no other is tried."""
    from binpick_sim.cell.render_process.worker import RenderWorkers

    config = with_renderer(config, "tiny", width=64, height=48)
    sim = BinPickingSim(config)
    renderers = iter(["tiny", "no_such_renderer", "tiny"])
    workers = RenderWorkers(lambda: RenderWorker(config, next(renderers)), most=3)
    try:
        state = capture(sim, sim.camera, segmentation=False)
        workers.request(state)
        assert workers.wait(timeout=120).stamp == state.stamp
        assert workers.grow()
        settle(workers)
        assert len(workers.workers) == 1 and workers.most == 1 and not workers.grow()
        assert "the camera goes on with 1 render worker(s)" in workers.growth_error
        workers.request(state)
        assert workers.wait(timeout=120).stamp == state.stamp
    finally:
        workers.close()
        sim.close()


def test_a_camera_behind_its_rate_starts_a_second_worker_and_publishes_in_time_order(ros_context):
    """A camera asked for a frame every physics step of a world as fast as it goes: its one worker falls behind,
    so it starts a second (`render_workers`, default 2, is the most); the two draw the frames in turn, the camera
    publishes each frame once, stamps rising, and /diagnostics names both. rclpy's own parameter client (what
    `ros2 param describe` / `set` use) sees the parameter as an integer of 1 ... 8, read-only, and a run-time set
    is refused."""
    from rcl_interfaces.msg import ParameterType
    from rclpy.parameter import Parameter
    from rclpy.parameter_client import AsyncParameterClient

    from binpick_sim.nodes.process.stack import SimStack

    parameters = {"world": [Parameter("realtime_factor", value=0.0)], "camera": [Parameter("rate", value=240.0)]}
    with SimStack(ros_context, parameters) as stack:
        camera = next(n for n in stack.nodes if n.get_name() == "camera")
        assert camera.render_workers == 2
        stamps = []
        watcher = SimClient("pair_watcher", context=ros_context,
                            topics={"camera/image_raw": TOPICS["camera/image_raw"]})
        watcher.node.create_subscription(TOPICS["camera/image_raw"], "camera/image_raw",
                                         lambda msg: stamps.append(to_seconds(msg.header.stamp)), 10)
        try:
            watcher.spin_until(lambda: camera.worker is not None and len(camera.worker.workers) == 2, 120,
                               "a second worker taking turns")
            joined = len(stamps)
            watcher.spin_until(lambda: len(stamps) >= joined + 8, 120, "eight frames more")
            pids = camera.worker.pids
            assert len(set(pids)) == 2 and all(pid is not None for pid in pids)
            assert all(worker.process.is_alive() for worker in camera.worker.workers)
            assert camera.worker_state() == f"running (pid {pids[0]}, {pids[1]})"
            assert all(a < b for a, b in zip(stamps, stamps[1:])), stamps
            assert camera.frame_thread.errors == 0 and camera.frame_thread.restarts == 0
            remote = AsyncParameterClient(watcher.node, "camera")
            watcher.spin_until(remote.services_are_ready, 30, "the camera's parameter services")
            described = remote.describe_parameters(["render_workers"])
            watcher.spin_until(described.done, 30, "describe answered")
            descriptor = described.result().descriptors[0]
            assert descriptor.type == ParameterType.PARAMETER_INTEGER and descriptor.read_only
            assert [(r.from_value, r.to_value) for r in descriptor.integer_range] == [(1, 8)]
            changed = remote.set_parameters([Parameter("render_workers", value=3)])
            watcher.spin_until(changed.done, 30, "set answered")
            assert not changed.result().results[0].successful and camera.render_workers == 2
        finally:
            watcher.close()


@pytest.mark.serial
def test_a_camera_that_keeps_its_rate_keeps_one_worker(ros_context):
    """64 x 48 frames at 10 Hz, the world at real time: the one worker draws each in a few tens of milliseconds,
    so no tick finds it behind (a frame would have to take two ticks, 200 ms), and over 30 ticks (a judgement of
    the camera's pace: GROW_WINDOW) no second process is started: a second copy of the cell costs 150-250 MB.
    Serial: another test's load could make a frame that slow."""
    from rclpy.parameter import Parameter

    from binpick_sim.nodes.process.stack import SimStack

    parameters = {"world": [Parameter("realtime_factor", value=1.0)],
                  "camera": [Parameter("rate", value=10.0), Parameter("width", value=64), Parameter("height", value=48)]}
    with SimStack(ros_context, parameters) as stack:
        camera = next(n for n in stack.nodes if n.get_name() == "camera")
        watcher = SimClient("steady_watcher", context=ros_context,
                            topics={"camera/image_raw": TOPICS["camera/image_raw"]})
        try:
            watcher.wait_for_new("camera/image_raw", count=2, timeout=120)
            first = camera.frames
            watcher.spin_for(3.0)  # 30 ticks at real time
            assert camera.frames - first >= GROW_WINDOW, camera.frames - first  # a judgement's worth at least
            assert len(camera.worker.workers) == 1 and camera.worker.warming is None and camera.render_workers == 2
        finally:
            watcher.close()
