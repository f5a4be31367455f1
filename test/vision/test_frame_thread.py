"""The camera node's frame thread (nodes/servers/camera_frames.py) with a stand-in worker: which captured
state gets drawn, and when. The worker stand-in draws each state in a fixed time; no ROS, no renderer."""
import threading
import time

from binpick_sim.nodes.servers.camera_frames import FrameThread

DRAW = 0.3  # seconds the stand-in takes per frame


class Logger:
    def error(self, *args, **kwargs):
        raise AssertionError(args)


class StandInWorker:
    """request/wait as RenderWorker has them: one frame at a time, done DRAW seconds after it was asked for."""

    pid = 0

    def __init__(self):
        self.asked: list[tuple[str, float]] = []
        self._due = None

    def request(self, state):
        self.asked.append((state, time.monotonic()))
        self._due = time.monotonic() + DRAW

    def wait(self, timeout):
        if self._due is None:
            return None
        time.sleep(max(0.0, min(timeout, self._due - time.monotonic())))
        if time.monotonic() < self._due:
            return None
        self._due = None
        return self.asked[-1][0]  # the "frame" is the state it shows

    def close(self):
        pass


def frame_thread():
    worker = StandInWorker()
    published = []
    thread = FrameThread("test", lambda: worker, lambda done: published.append((done, time.monotonic())),
                         lambda: True, lambda: None, Logger())
    return thread, worker, published


def wait_for(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_state_captured_while_a_frame_is_drawn_is_drawn_next_without_waiting_for_another_tick():
    thread, worker, published = frame_thread()
    try:
        thread.offer(lambda: "first")
        wait_for(lambda: len(worker.asked) == 1)
        thread.offer(lambda: "second")  # while "first" is drawn; no offer after it
        wait_for(lambda: len(published) == 2)
        assert [state for state, _ in published] == ["first", "second"]
        # the worker was asked for the second as soon as the first was out, not at a later tick
        assert worker.asked[1][1] - published[0][1] < 0.1
    finally:
        thread.close()


def test_the_newest_state_replaces_one_not_drawn_yet():
    thread, worker, published = frame_thread()
    try:
        thread.offer(lambda: "first")
        wait_for(lambda: len(worker.asked) == 1)
        for state in ("older", "newer", "newest"):
            thread.offer(lambda state=state: state)
        wait_for(lambda: len(published) == 2)
        time.sleep(DRAW * 1.5)
        assert [state for state, _ in published] == ["first", "newest"]
        assert [state for state, _ in worker.asked] == ["first", "newest"]
    finally:
        thread.close()


def test_offers_come_from_another_thread_while_frames_are_drawn():
    """The physics thread offers at its own rate: every frame drawn is one of the states offered, in order."""
    thread, worker, published = frame_thread()
    stop = threading.Event()

    def ticks():
        n = 0
        while not stop.is_set():
            thread.offer(lambda n=n: n)
            n += 1
            time.sleep(0.005)

    ticker = threading.Thread(target=ticks)
    ticker.start()
    try:
        wait_for(lambda: len(published) >= 4)
    finally:
        stop.set()
        ticker.join()
        thread.close()
    drawn = [state for state, _ in published]
    assert drawn == sorted(drawn) and len(set(drawn)) == len(drawn)
    gaps = [b[1] - a[1] for a, b in zip(published, published[1:])]
    assert max(gaps) < DRAW + 0.15, gaps  # back to back: each frame starts when the one before is out
