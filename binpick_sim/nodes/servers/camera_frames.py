"""The camera node's frames from a render worker, driven by a thread of their own.

The physics thread only captures the scene's state (well under a millisecond) and hands it over (`offer`); the
thread sends it to the worker, waits for the frame and has it published (conversion included, and the cloud is
built in the worker), so neither a slow renderer nor a large frame stops the physics. The worker is kept one
state ahead (its `ahead` requests at most, render_worker.AHEAD): a state captured while a frame is drawn is
sent at once and waits in the worker's socket, so the worker starts it the moment that frame is done, without
waiting for this thread to take the frame, wake up in a busy process and ask again (0.4-0.5 ms a frame idle on
this 2-core machine; a larger share where a GPU draws a frame in a few ms, not measured yet). While the worker
holds `ahead` states the physics thread captures nothing (at most one more waits here for a moment, until this
thread sends it), so a frame is never more than one frame's drawing older than its tick: it shows the state of
the tick it was captured at and carries that stamp. Drawing also overlaps publishing, the next frame being
drawn while the one before is converted and published. Measured with NVIDIA's EGL (doc/cameras.md), where a
frame is drawn in a few milliseconds and publishing it costs as much: 64 x 64 frames published flat out went
from 118 to 224 per second with that overlap. The thread also keeps the worker alive: one that died (killed,
crashed) is started again and counted (`restarts`, on /diagnostics); after MAX_RESTARTS in a row without a
frame between them the thread gives up (`failed`) and the node renders in place, as it did before workers
existed. When nobody has watched the camera for RELEASE_AFTER seconds the worker is stopped and the memory its
frames took is handed back (`release`); the next subscriber starts a new one. The "worker" is a RenderWorkers:
one process to start with, and one more (up to the camera's `render_workers`) each time the thread finds the
camera behind its rate (`_keep_up`: GROW_WHEN of GROW_WINDOW ticks found the workers holding all they may).
The states go to its workers in turn, the set kept one ahead (one more request than it has workers), and its
frames come back in the order asked.
"""
from __future__ import annotations

import socket
import threading
import time
from multiprocessing.connection import wait as wait_for_any
from typing import Callable

from ...cell.render_process.worker import FrameFailed, RenderedFrame, RenderWorkers, SceneState, WorkerGone

MAX_RESTARTS = 3  # in a row without a frame: a worker that cannot start at all is not tried for ever
RELEASE_AFTER = 3.0  # wall seconds unwatched before the worker is stopped and memory handed back
POLL = 0.1  # seconds between two looks for a frame, a stop or a dead worker
GROW_WINDOW = 20  # camera ticks judged together, once the workers have a frame back since they last changed
GROW_WHEN = 2  # of them found the workers holding all they may (a tenth of the rate lost): one more is started


class FrameThread:
    def __init__(self, name: str, start_worker: Callable[[], RenderWorkers], publish: Callable[[RenderedFrame], None],
                 watched: Callable[[], bool], release: Callable[[], None], logger):
        self.start_worker, self.publish, self.watched, self.release = start_worker, publish, watched, release
        self.logger = logger
        self.worker: RenderWorkers | None = None
        self.restarts = 0  # workers started again after one died
        self.errors = 0  # frames the worker could not draw
        self.failed = False  # gave up on workers: the node renders in place
        self._in_a_row = 0
        self._offered = self._refused = 0  # camera ticks since the last judgement, and those that drew nothing
        self._waiting: SceneState | None = None  # captured, not yet sent to the worker
        self._lock = threading.Lock()  # between the physics thread's offer and this thread's take
        # The physics thread wakes this one through a socket, so that one wait hears an offer or a frame.
        self._wake_reader, self._waker = socket.socketpair()
        self._waker.setblocking(False)
        self._wake_reader.setblocking(False)
        self._stopping = False
        self._last_watched = time.monotonic()
        self._thread = threading.Thread(target=self._run, name=f"{name}_frames", daemon=True)
        self._thread.start()

    def offer(self, capture: Callable[[], SceneState]) -> bool:
        """Physics thread: capture the state and have it drawn as soon as the worker is free, unless the worker
        holds its `ahead` states already or a state captured earlier still waits (then nothing: those are drawn
        first, and capturing costs this thread)."""
        self._last_watched = time.monotonic()
        worker = self.worker
        behind = self._waiting is not None or (worker is not None and worker.pending >= worker.ahead)
        if worker is not None and worker.settled:
            self._offered += 1
            self._refused += behind
        if self.failed or behind:
            return False
        state = capture()
        with self._lock:
            self._waiting = state
        self._wake()
        return True

    def close(self) -> None:
        self._stopping = True
        self._wake()
        self._thread.join(5.0)
        self._stop_worker()
        self._waker.close()
        self._wake_reader.close()

    def _wake(self) -> None:
        try:
            self._waker.send(b"\0")
        except (BlockingIOError, OSError):  # full of unread wake-ups already (or closed): this one is not needed
            pass

    def _woken(self) -> None:
        """Read the wake-ups that arrived (any number: one look at the state serves them all)."""
        try:
            while self._wake_reader.recv(4096):
                pass
        except (BlockingIOError, OSError):
            pass

    def _take(self) -> SceneState | None:
        with self._lock:
            state, self._waiting = self._waiting, None
        return state

    def _run(self) -> None:
        while not self._stopping:
            state = self._take()  # looked at first: one may have waited since a worker was restarted
            if state is None:
                if wait_for_any([self._wake_reader], POLL):
                    self._woken()
                else:
                    self._release_if_unwatched()
                continue
            if self._stopping:
                break
            try:
                self._draw(state)
            except Exception as exc:  # e.g. a worker that cannot start: the next offer tries again
                self.logger.error(f"camera frame not drawn: {type(exc).__name__}: {exc}", throttle_duration_sec=5.0)

    def _draw(self, state: SceneState) -> None:
        """Have `state` drawn and published, and each state captured meanwhile after it, until the worker holds
        none and none waits. A state that waits is sent as soon as the worker holds fewer than its `ahead`, and
        before a frame that came back is converted and published."""
        if self.worker is None:
            self.worker = self.start_worker()
        worker = self.worker
        worker.request(state)
        while worker.pending and not self._stopping:
            self._send_waiting(worker)
            ready = wait_for_any([worker, self._wake_reader], POLL)
            if self._wake_reader in ready:
                self._woken()
            if worker not in ready:
                continue
            try:
                done = worker.poll()
            except WorkerGone as exc:
                self._restart(str(exc))
                return
            except FrameFailed as exc:
                self.errors += 1
                self.logger.error(f"{exc}; the next frame is asked for as usual", throttle_duration_sec=5.0)
                continue
            if done is None:
                continue
            self._in_a_row = 0
            self._send_waiting(worker)  # drawn while this frame is converted and published
            self._publish(done)
            self._keep_up(worker)

    def _send_waiting(self, worker: RenderWorkers) -> None:
        if worker.pending < worker.ahead:
            following = self._take()
            if following is not None:
                worker.request(following)

    def _keep_up(self, worker: RenderWorkers) -> None:
        """Start one more worker where GROW_WHEN of the last GROW_WINDOW camera ticks found the workers holding
        all they may: the camera draws fewer frames than its rate asks. A camera that keeps its rate has one."""
        if worker.growth_error:
            self.logger.error(worker.growth_error)
            worker.growth_error = None
        if self._offered < GROW_WINDOW:
            return
        behind = self._refused >= GROW_WHEN
        self._offered = self._refused = 0
        if behind and worker.grow():
            self.logger.info(f"behind the camera's rate with {len(worker.workers)} render worker(s): started one more "
                             f"(pid {worker.pids[-1]}; at most {worker.most}, the camera's render_workers)")

    def _publish(self, done: RenderedFrame) -> None:
        try:
            self.publish(done)
        except Exception as exc:  # a broken publisher must not end the camera for good
            self.logger.error(f"camera frame not published: {type(exc).__name__}: {exc}", throttle_duration_sec=5.0)

    def _restart(self, why: str) -> None:
        self._stop_worker()
        self._in_a_row += 1
        if self._in_a_row > MAX_RESTARTS:
            self.failed = True
            self.logger.error(f"{why}; {MAX_RESTARTS} restarts in a row gave no frame: rendering in the physics "
                              "thread from now on")
            return
        self.restarts += 1
        self.worker = self.start_worker()
        pids = ", ".join(map(str, self.worker.pids))
        self.logger.error(f"{why}; started a new one (pid {pids}, restart {self.restarts})")

    def _release_if_unwatched(self) -> None:
        if self.worker is None or time.monotonic() - self._last_watched < RELEASE_AFTER or self.watched():
            return
        self._stop_worker()
        self.release()

    def _stop_worker(self) -> None:
        worker, self.worker = self.worker, None
        self._offered = self._refused = 0  # the next workers' pace is judged afresh
        if worker is not None:
            worker.close()
