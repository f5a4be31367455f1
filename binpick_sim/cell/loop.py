"""The physics thread: steps one world in (scaled) real time and runs periodic work in sim time.

The thread owns the PyBullet client while it runs. Other threads never touch the client; they hand
it work with `call` (or `run`, which waits for the result), and that work runs between two steps.
Publishers register with `every` and are called at their period of *sim* time, so rates hold in
slow motion and fast forward. In lock-step mode the world only moves when told (`advance(n)`), and
instead of the periodic work, `when_settled` callbacks run once each time the steps are done: one
observation per request, stamped after it.

Paused (`paused = True`), a freely running loop also takes only the steps it is asked for (`advance`),
with its periodic work after each, so `/clock` advances by exactly the steps taken; `advance`'s
Future resolves with the step count once they are done (the standard's StepSimulation), and its
`taken` attribute says how many of the steps asked for were taken (fewer when cut short: `withdraw`,
`cancel_steps`, `until`).
"""
from __future__ import annotations

import collections
import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Callable

from ..config import SimulationConfig
from .world import World

MAX_LAG = 0.25  # wall seconds the loop may fall behind before it stops trying to catch up
# Lock-step requests are taken this many physics steps per call of World.step (no periodic work runs
# between them, so nothing needs the loop in between): the loop's own bookkeeping, a few microseconds a
# step, is paid once per batch. Work handed over (a cancel, a stop) still waits at most one batch.
LOCKSTEP_BATCH = 32
HOLD_WAIT = 0.1  # s: longest wait for work before the loop looks at its stop flag again
SERVE_PERIOD = 0.02  # s of wall time between two looks for requests while a long lock-step request runs


@dataclass
class _Periodic:
    period: float
    callback: Callable[[], None]
    due: float  # sim time
    wall_cap: bool = True  # bookkeeping that must keep its sim-time rate says False
    wall_due: float = 0.0  # wall time (monotonic), when the rate is capped in wall time too


class PhysicsLoop:
    def __init__(self, world: World, realtime_factor: float = SimulationConfig.realtime_factor, lockstep: bool = False,
                 wall_rate_cap: bool = False):
        """`wall_rate_cap`: running faster than real time (realtime_factor 0 or > 1), periodic work runs
        at its period of sim time *or* of wall time, whichever is longer: nobody can use a topic
        faster than its rate in wall time, and every message costs the physics thread."""
        self.world = world
        self.realtime_factor = realtime_factor
        self.lockstep = lockstep
        self.wall_rate_cap = wall_rate_cap
        self._calls: queue.SimpleQueue = queue.SimpleQueue()
        self._periodic: list[_Periodic] = []
        self._settled: list[Callable[[], None]] = []
        self.paused = False
        self._budget = 0  # steps left of the request being taken
        self._done: Future | None = None  # resolved when the request being taken is done
        self._taken = 0  # steps of the request being taken so far
        self._until: Callable[[], bool] | None = None  # ends the request being taken early when true
        self._requests: collections.deque[tuple] = collections.deque()  # (steps, Future, until) still to take
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._recent = collections.deque(maxlen=2000)  # (wall time, step count) samples for rates
        self.failures = 0
        self._serve: Callable[[float], None] | None = None  # see serve_while_holding
        self._wake: Callable[[], None] | None = None
        self._served = 0.0  # wall time of the last serve between two batches of a long request

    # --- other threads ------------------------------------------------------------------------
    def call(self, fn: Callable, *args) -> Future:
        """Run fn(*args) on the physics thread between two steps; the Future holds its result."""
        future: Future = Future()
        if self.on_physics_thread() or not self.running:
            _resolve(future, fn, args)
        else:
            self._calls.put((future, fn, args))
            if self._wake is not None:
                self._wake()
        return future

    def serve_while_holding(self, serve: Callable[[float], None], wake: Callable[[], None]) -> None:
        """Lock-step mode: let the physics thread itself serve requests between two of them, instead of a
        thread of their own handing each one over (a wake-up and a GIL hand-off less per request).
        `serve(timeout)` waits up to `timeout` seconds for something to serve and serves it (the ROS
        layer: one executor `spin_once`); `wake()`, from any thread, makes a waiting `serve` return.
        During a long request `serve(0)` also runs every SERVE_PERIOD, so a cancel is heard. Call before
        `start`."""
        self._serve, self._wake = serve, wake

    def run(self, fn: Callable, *args, timeout: float | None = 30.0):
        """Like `call`, but wait for and return the result (re-raising its exception)."""
        return self.call(fn, *args).result(timeout)

    def advance(self, steps: int, until: Callable[[], bool] | None = None) -> Future:
        """Take `steps` more physics steps, then (lock-step mode) run the `when_settled` callbacks, at
        once if `steps` is 0. For a lock-step or paused loop; the Future resolves with the step count
        after them (or fails if the loop stops first). `until`: checked on the physics thread after each
        of these steps; the first time it is true the request ends there (the reference simulator's "step until the
        target is reached", `steps` its bound). The Future's `taken` then says how many were taken."""
        done: Future = Future()
        self.call(self._add_budget, steps, done, until)
        return done

    def idle(self) -> bool:
        """Whether no steps are owed: no request is being taken or waits its turn."""
        return self._budget <= 0 and not self._requests

    @property
    def holding(self) -> bool:
        """Whether the loop steps only when asked (lock-step or paused)."""
        return self.lockstep or self.paused

    def reset_time(self) -> None:
        """Physics thread: sim time back to 0, the periodic work due again from the next step."""
        self.world.step_count = 0
        self._recent.clear()  # rates restart rather than read a jump back as negative steps
        for task in self._periodic:
            task.due = 0.0

    def cancel_steps(self, why: str | None = None) -> int:
        """Lock-step mode, on the physics thread: drop the steps still owed (the request being taken and
        those queued); the `when_settled` callbacks run once if a request was cut short. Returns how many
        steps were dropped. `why`: what ended them, each request's Future's `why` (see `_finish`)."""
        dropped = max(self._budget, 0) + sum(steps for steps, _, _ in self._requests)
        queued = list(self._requests)
        self._requests.clear()
        for _, done, _ in queued:  # whoever waits for a dropped request hears at once
            self._resolve_untaken(done, why)
        if self._budget > 0:
            self._budget = 0
            self._finish(why)
        return dropped

    def withdraw(self, done: Future) -> None:
        """On the physics thread: end the one `advance` request whose Future is `done`, whether it is being
        taken (it ends after the step in progress; lock-step: its `when_settled` callbacks run) or still
        queued behind others (it never starts). Nothing happens if it is over already."""
        if done is self._done and self._budget > 0:
            self._budget = 0
            self._finish()
            return
        for request in list(self._requests):
            if request[1] is done:
                self._requests.remove(request)
                self._resolve_untaken(done)

    def _resolve_untaken(self, done: Future, why: str | None = None) -> None:
        if not done.done():
            done.taken, done.why = 0, why
            done.set_result(self.world.step_count)

    def when_settled(self, callback: Callable[[], None], first: bool = False) -> None:
        """Lock-step mode: call `callback` on the physics thread after each `advance` has been taken
        (`first`: before the callbacks registered so far, e.g. task bookkeeping before publishers)."""
        self._settled.insert(0, callback) if first else self._settled.append(callback)

    def every(self, period: float, callback: Callable[[], None], wall_cap: bool = True) -> None:
        """Call `callback` on the physics thread once per `period` seconds of sim time (and, with
        `wall_cap` and the loop's `wall_rate_cap`, not more often than once per `period` wall seconds)."""
        if period <= 0:
            raise ValueError(f"period must be > 0 s, got {period}")
        self._periodic.append(_Periodic(period, callback, self.world.time + period, wall_cap))

    def on_physics_thread(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def rates(self) -> tuple[float, float]:
        """(physics steps per wall second, real-time factor) over the last few seconds."""
        samples = list(self._recent)
        if len(samples) < 2 or samples[-1][0] <= samples[0][0]:
            return 0.0, 0.0
        (t0, n0), (t1, n1) = samples[0], samples[-1]
        steps_per_second = (n1 - n0) / (t1 - t0)
        return steps_per_second, steps_per_second * self.world.timestep

    # --- lifecycle ----------------------------------------------------------------------------
    def start(self) -> None:
        self._stop.clear()
        self.world.renderer.release()  # the physics thread renders from now on (rendering.EglContext)
        self._thread = threading.Thread(target=self._run, name="physics", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        self._calls.put(None)  # wake the thread if it waits for work
        if self._wake is not None:
            self._wake()
        if self._thread is not None:
            if self._thread.ident is not None:  # started: a Ctrl-C can come between making it and starting it
                self._thread.join(timeout)
            if not self._thread.is_alive():
                self.world.renderer.claim()  # the client is this thread's again
        self._thread = None
        self._drain(block_until=None)  # fail nothing silently: run what was still queued
        for done in [d for _, d, _ in self._requests] + [self._done] * (self._done is not None):
            if not done.done():
                done.set_exception(RuntimeError("the physics loop stopped before the steps were taken"))
        self._requests.clear()
        self._done, self._budget = None, 0

    # --- the thread ---------------------------------------------------------------------------
    def _run(self) -> None:
        self.world.renderer.claim()
        try:
            self._loop()
        finally:
            self.world.renderer.release()

    def _loop(self) -> None:
        deadline = time.monotonic()
        while not self._stop.is_set():
            if self._budget <= 0 and self._requests:
                self._budget, self._done, self._until = self._requests.popleft()
                self._taken = 0
                if self._budget <= 0:
                    self._finish()
                continue
            if self.holding and self._budget <= 0:
                if not self.lockstep:
                    self._run_periodic(capped=False)  # what the wall-rate cap held back: the paused state
                if self._serve is not None and self.lockstep:
                    self._drain(block_until=None)
                    if not self._requests and not self._stop.is_set():
                        self._serve(HOLD_WAIT)
                else:
                    self._drain(block_until=time.monotonic() + HOLD_WAIT, stop_after_work=True)
                deadline = time.monotonic()  # real time restarts from here when played again
                continue
            self._drain(block_until=None)
            if self.holding and self._budget <= 0:  # paused by the work just drained
                continue
            self._step()
            if self.realtime_factor > 0 and not self.holding:
                deadline += self.world.timestep / self.realtime_factor
                now = time.monotonic()
                if deadline < now - MAX_LAG:
                    deadline = now
                self._drain(block_until=deadline)

    def _step(self) -> None:
        batch = min(self._budget, LOCKSTEP_BATCH) if self.lockstep and self._until is None else 1
        self.world.step(max(batch, 1))
        self._recent.append((time.monotonic(), self.world.step_count))
        if not self.lockstep:
            self._run_periodic()
        if self._budget > 0:
            self._budget -= batch
            self._taken += batch
            if self._until is not None and self._budget > 0 and self._until():
                self._budget = 0
            if self._budget == 0:
                self._finish()
            elif self._serve is not None and self.lockstep and time.monotonic() - self._served > SERVE_PERIOD:
                self._served = time.monotonic()
                self._serve(0.0)  # a long request: hear a cancel (or a parameter change) now and then

    def _run_periodic(self, capped: bool = True) -> None:
        """The periodic work that is due. Steps asked for while paused are each published (/clock exact
        per step, as the simulation standard's stepping promises): the wall-rate cap is for free running,
        and what it held back runs once the loop is paused."""
        now, wall = self.world.time, None
        capped = capped and self.wall_rate_cap and not self.paused and not 0 < self.realtime_factor <= 1
        for task in self._periodic:
            if now + 1e-9 >= task.due:
                if capped and task.wall_cap:
                    wall = time.monotonic() if wall is None else wall
                    if wall < task.wall_due:
                        continue  # due in sim time, not yet in wall time: stays due
                    task.wall_due = wall + task.period
                task.due = max(task.due + task.period, now)
                self._guarded(task.callback)

    def _finish(self, why: str | None = None) -> None:
        """A request's steps are taken: settle (lock-step), then tell whoever asked. The Future carries
        `taken` (steps taken for it) and `why` (what cut it short, if anything said) from before it
        resolves: a thread waiting on `result()` wakes before the Future's done-callbacks run, so what
        it reads must not be left to one of them."""
        if self.lockstep:
            for callback in self._settled:
                self._guarded(callback)
        done, self._done = self._done, None
        if done is not None and not done.done():
            done.taken, done.why = self._taken, why
            done.set_result(self.world.step_count)

    def _guarded(self, callback: Callable[[], None]) -> None:
        try:
            callback()
        except Exception:  # a broken publisher must not stop the physics
            self.failures += 1

    def _drain(self, block_until: float | None, stop_after_work: bool = False) -> None:
        """Run queued calls; if block_until is given, keep waiting for more until that wall time
        (or, with stop_after_work, only until some work arrived and ran)."""
        while True:
            timeout = None if block_until is None else block_until - time.monotonic()
            if (timeout is None or timeout <= 0) and self._calls.empty():
                return  # the common case between two free-running steps: no exception raised and caught
            try:
                item = self._calls.get_nowait() if timeout is None or timeout <= 0 else self._calls.get(timeout=timeout)
            except queue.Empty:
                return
            if item is None:
                if self._stop.is_set():
                    return
                continue
            _resolve(*item)
            if stop_after_work:
                block_until = None

    def _add_budget(self, steps: int, done: Future, until: Callable[[], bool] | None = None) -> None:
        self._requests.append((steps, done, until))


def _resolve(future: Future, fn: Callable, args) -> None:
    if not future.set_running_or_notify_cancel():
        return
    try:
        future.set_result(fn(*args))
    except BaseException as exc:  # handed to the caller, who re-raises it
        future.set_exception(exc)
