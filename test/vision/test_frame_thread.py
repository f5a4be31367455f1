"""The camera node's frame thread (nodes/servers/camera_frames.py) with a stand-in worker: which captured state is
drawn, when the worker is asked for it, that the worker is kept one state ahead (no idle gap between frames)
and that drawing overlaps publishing. No ROS, no renderer."""
import os
import select
import threading
import time
from collections import deque

import pytest

from binpick_sim.cell.render_process.worker import AHEAD
from binpick_sim.nodes.servers.camera_frames import GROW_WINDOW, FrameThread

DRAW = 0.2  # seconds the stand-in worker takes per frame
HOP = 0.05  # seconds from a frame drawn to the frame thread having it (the trip back, the thread waking)


class Logger:
    def __init__(self):
        self.errors: list[str] = []

    def error(self, message, **kwargs):
        self.errors.append(message)

    def info(self, message, **kwargs):
        pass


class StandInWorker:
    """request / poll / wait / pending / fileno as RenderWorkers has them: requests are served in order, one at a time,
    each drawn DRAW seconds from when it was asked for or the one before was done, whichever is later; a
    frame can be polled HOP seconds after it was drawn (its fileno is readable then). The "frame" is the state
    it shows."""

    pids = (0,)  # named in the restart log
    ahead = AHEAD  # as one RenderWorker's
    settled = True  # RenderWorkers': a frame came back since the workers last changed
    growth_error = None
    most = 1

    def __init__(self):
        self.draw = DRAW
        self.grown = 0  # `grow` calls: the frame thread found the camera behind its rate
        self.workers = [self]
        self.asked: list[tuple[object, float]] = []
        self.started: list[float] = []  # when each request's drawing began
        self.pending = 0
        self.most_pending = 0
        self._frames: deque = deque()  # (when it can be polled, state)
        self._free_at = 0.0
        self._reader, self._writer = os.pipe()

    def request(self, state):
        now = time.monotonic()
        self.pending += 1
        self.most_pending = max(self.most_pending, self.pending)
        self.asked.append((state, now))
        start = max(now, self._free_at)
        self._free_at = start + self.draw
        self.started.append(start)
        self._frames.append((self._free_at + HOP, state))
        threading.Timer(self._free_at + HOP - now, self._ready).start()

    def _ready(self):
        try:
            os.write(self._writer, b"x")
        except OSError:  # closed meanwhile
            pass

    def fileno(self):
        return self._reader

    def poll(self):
        if not self._frames or not select.select([self._reader], [], [], 0)[0]:
            return None
        os.read(self._reader, 1)
        self.pending -= 1
        return self._frames.popleft()[1]

    def wait(self, timeout):
        """RenderWorker.wait: block until the oldest request's frame can be polled, or `timeout` passes."""
        select.select([self._reader], [], [], timeout)
        return self.poll()

    def grow(self):
        self.grown += 1
        return False  # none started: the worker keeps serving alone

    def close(self):
        pass


@pytest.fixture
def frames():
    """(thread, worker, published, logger); publishing a frame takes `publish_seconds[0]`, and a frame named
    "broken" raises in the publisher."""
    worker, published, logger, publish_seconds = StandInWorker(), [], Logger(), [0.0]

    def publish(done):
        time.sleep(publish_seconds[0])
        if done == "broken":
            raise RuntimeError("publisher gone")
        published.append((done, time.monotonic()))

    thread = FrameThread("test", lambda: worker, publish, lambda: True, lambda: None, logger)
    thread.publish_seconds = publish_seconds
    yield thread, worker, published, logger
    thread.close()


def wait_for(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_the_next_frame_is_drawn_while_the_one_before_is_published(frames):
    thread, worker, published, _ = frames
    thread.publish_seconds[0] = DRAW
    assert thread.offer(lambda: "first")
    wait_for(lambda: len(worker.asked) == 1)
    assert thread.offer(lambda: "second")  # captured while "first" is drawn
    wait_for(lambda: len(published) == 2)
    assert [state for state, _ in published] == ["first", "second"]
    # "second" was asked for a whole publish before "first" was out
    assert published[0][1] - worker.asked[1][1] > DRAW / 2
    assert worker.most_pending <= AHEAD


def test_a_state_captured_while_a_frame_is_drawn_is_started_the_moment_that_frame_is_done(frames):
    thread, worker, published, _ = frames
    assert thread.offer(lambda: "first")
    wait_for(lambda: len(worker.asked) == 1)
    assert thread.offer(lambda: "second")
    wait_for(lambda: len(published) == 2)
    # sent while "first" was drawn, so the worker did not wait for "first" to make its way back (HOP)
    assert worker.asked[1][1] < worker.started[0] + DRAW
    assert worker.started[1] - (worker.started[0] + DRAW) < HOP / 2


def test_the_worker_holds_ahead_states_at_most_and_nothing_more_is_captured_meanwhile(frames):
    thread, worker, published, _ = frames
    captured = []

    def capture(name):
        captured.append(name)
        return name

    assert thread.offer(lambda: capture("first"))
    wait_for(lambda: len(worker.asked) == 1)
    assert thread.offer(lambda: capture("queued"))
    assert not thread.offer(lambda: capture("refused")) and not thread.offer(lambda: capture("refused"))
    wait_for(lambda: len(published) == 1)
    assert thread.offer(lambda: capture("after the first"))  # the worker holds one again
    wait_for(lambda: len(published) == 3)
    assert captured == ["first", "queued", "after the first"]
    assert [state for state, _ in published] == captured and worker.most_pending == AHEAD


def test_offers_from_the_physics_thread_give_frames_back_to_back_in_order(frames):
    thread, worker, published, _ = frames
    thread.publish_seconds[0] = DRAW / 2
    stop, captured_at = threading.Event(), []

    def physics():
        while not stop.is_set():
            thread.offer(lambda n=len(captured_at): n)
            captured_at.append(time.monotonic())  # tick n's time (a capture, if the offer took one)
            time.sleep(0.004)

    ticker = threading.Thread(target=physics)
    ticker.start()
    try:
        wait_for(lambda: len(published) >= 5)
    finally:
        stop.set()
        ticker.join()
    drawn = [state for state, _ in published]
    assert drawn == sorted(drawn) and len(set(drawn)) == len(drawn)
    gaps = [b[1] - a[1] for a, b in zip(published, published[1:])]
    # one frame per DRAW: publishing (DRAW / 2) hides behind the next frame's drawing
    assert max(gaps) < DRAW + DRAW / 4, gaps
    assert worker.most_pending <= AHEAD
    # no frame is drawn more than one frame's drawing after its tick (a deeper queue would make it two)
    ages = [start - captured_at[state] for (state, _), start in zip(worker.asked, worker.started)]
    assert max(ages) < DRAW + DRAW / 4, ages


def test_a_publisher_that_raises_loses_that_frame_only(frames):
    thread, worker, published, logger = frames
    assert thread.offer(lambda: "broken")
    wait_for(lambda: len(worker.asked) == 1)
    assert thread.offer(lambda: "after")  # asked for before "broken" reaches the publisher
    wait_for(lambda: len(published) == 1)
    assert published[0][0] == "after" and worker.most_pending <= AHEAD
    assert any("camera frame not published: RuntimeError: publisher gone" in e for e in logger.errors)
    assert thread.offer(lambda: "later")
    wait_for(lambda: len(published) == 2)


def tick(thread, every, count):
    """`count` camera ticks `every` seconds apart, as the physics thread offers them."""
    for n in range(count):
        thread.offer(lambda n=n: n)
        time.sleep(every)


def test_a_camera_behind_its_rate_asks_for_one_more_worker(frames):
    """Ticks four times as often as the worker draws: most find it holding all it may, and the thread asks the
    workers to grow (GROW_WHEN of GROW_WINDOW ticks behind)."""
    thread, worker, published, _ = frames
    tick(thread, DRAW / 4, GROW_WINDOW + 8)
    wait_for(lambda: worker.grown >= 1)
    assert published and worker.most_pending <= AHEAD


def test_a_camera_that_keeps_its_rate_asks_for_no_other(frames):
    """Ticks slower than the worker's frames (drawn in 0.01 s, back HOP later): none finds it holding all it
    may (two of its frames would have to be late), so the thread judges the camera on time and never asks the
    workers to grow."""
    thread, worker, published, _ = frames
    worker.draw = 0.01
    tick(thread, 3 * HOP, GROW_WINDOW + 4)
    wait_for(lambda: len(published) >= GROW_WINDOW + 4)
    assert worker.grown == 0


def test_why_a_new_worker_did_not_join_is_logged_once(frames):
    thread, worker, published, logger = frames
    worker.growth_error = "the render worker failed: no such renderer; the camera goes on with 1 render worker(s)"
    assert thread.offer(lambda: "first")
    wait_for(lambda: len(published) == 1)
    assert thread.offer(lambda: "second")
    wait_for(lambda: len(published) == 2)
    assert len([e for e in logger.errors if "goes on with 1 render worker(s)" in e]) == 1
    assert worker.growth_error is None
