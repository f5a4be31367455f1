"""The camera node's frame thread (nodes/servers/camera_frames.py) with a stand-in worker: which captured state is
drawn, when the worker is asked for it, and that drawing overlaps publishing. No ROS, no renderer."""
import threading
import time

import pytest

from binpick_sim.nodes.servers.camera_frames import FrameThread

DRAW = 0.2  # seconds the stand-in worker takes per frame


class Logger:
    def __init__(self):
        self.errors: list[str] = []

    def error(self, message, **kwargs):
        self.errors.append(message)


class StandInWorker:
    """request / wait as RenderWorker has them: one frame at a time (a second request while one is drawn is a
    protocol error), done DRAW seconds after it was asked for; the "frame" is the state it shows."""

    pid = 0

    def __init__(self):
        self.asked: list[tuple[object, float]] = []
        self.overlapping_requests = 0
        self._due = None

    def request(self, state):
        if self._due is not None:
            self.overlapping_requests += 1
        self.asked.append((state, time.monotonic()))
        self._due = time.monotonic() + DRAW

    def wait(self, timeout):
        if self._due is None:
            return None
        time.sleep(max(0.0, min(timeout, self._due - time.monotonic())))
        if time.monotonic() < self._due:
            return None
        self._due = None
        return self.asked[-1][0]

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
    # asked for "second" when "first" came back, a whole publish before "first" was out
    assert published[0][1] - worker.asked[1][1] > DRAW / 2
    assert worker.overlapping_requests == 0


def test_one_state_waits_at_most_and_nothing_is_captured_meanwhile(frames):
    thread, worker, published, _ = frames
    captured = []

    def capture(name):
        captured.append(name)
        return name

    assert thread.offer(lambda: capture("first"))
    wait_for(lambda: len(worker.asked) == 1)
    assert thread.offer(lambda: capture("waiting"))
    assert not thread.offer(lambda: capture("refused")) and not thread.offer(lambda: capture("refused"))
    wait_for(lambda: len(published) == 2)
    assert captured == ["first", "waiting"] and [state for state, _ in published] == ["first", "waiting"]


def test_offers_from_the_physics_thread_give_frames_back_to_back_in_order(frames):
    thread, worker, published, _ = frames
    thread.publish_seconds[0] = DRAW / 2
    stop, ticks = threading.Event(), []

    def physics():
        while not stop.is_set():
            thread.offer(lambda n=len(ticks): n)
            ticks.append(None)
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
    assert worker.overlapping_requests == 0


def test_a_publisher_that_raises_loses_that_frame_only(frames):
    thread, worker, published, logger = frames
    assert thread.offer(lambda: "broken")
    wait_for(lambda: len(worker.asked) == 1)
    assert thread.offer(lambda: "after")  # asked for before "broken" reaches the publisher
    wait_for(lambda: len(published) == 1)
    assert published[0][0] == "after" and worker.overlapping_requests == 0
    assert any("camera frame not published: RuntimeError: publisher gone" in e for e in logger.errors)
    assert thread.offer(lambda: "later")
    wait_for(lambda: len(published) == 2)
