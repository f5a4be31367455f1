"""Long requests never hold an executor thread, and request queues that do not drop under load.

An action goal that follows a trajectory, or waits for thousands of physics steps, would run its
execute callback on a thread of the node's executor pool (rclpy schedules it there) and hold it to
the end: four such goals, or four StepSimulation requests, took every thread of the 4-thread pool, so
the other services, new goals, result requests and cancels of every node on that pool waited behind
them (cancels answered after 60 s, measured). rclpy's coroutine callbacks do not help here: its executors
resume a waiting coroutine on every pass, so one waiting goal keeps a thread busy. So:

- `own_threads(server)`: each accepted goal's execute callback runs on a thread of its own (one
  per goal in flight, at most MAX_GOALS, after which goals are refused at once); the executor's
  threads only accept goals, answer cancels and hand out results, which take microseconds.
- `Deferred`: a service callback may answer later, from any thread, without holding the executor
  (StepSimulation answers once its steps are taken).
- `SERVICE_QOS`: rclpy's default service queue keeps the last 10 requests per service, so a burst of
  more than 10 requests that arrives while the executor is busy overwrites the oldest, which are then
  never answered; these queues keep every request until it is taken (reliable, KEEP_ALL).
"""
from __future__ import annotations

import threading
from typing import Callable

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

MAX_GOALS = 64  # goals of one action server in flight at once (threads); more are refused
SERVICE_QOS = QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.VOLATILE)
ACTION_QOS = {f"{kind}_service_qos_profile": SERVICE_QOS for kind in ("goal", "result", "cancel")}


class GoalThreads:
    """The goals of one action server, each on a thread of its own (see the module docstring)."""

    def __init__(self, server, limit: int = MAX_GOALS):
        self.server, self.limit = server, limit
        self.running = 0
        self._lock = threading.Lock()
        server.notify_execute = self._execute  # rclpy's ServerGoalHandle.execute() calls this

    def room(self) -> bool:
        """Whether one more goal may start (for the server's goal callback)."""
        return self.running < self.limit

    def _execute(self, goal_handle, execute_callback=None) -> None:
        execute_callback = execute_callback or self.server._execute_callback
        if execute_callback is None:
            return
        with self._lock:
            full = self.running >= self.limit
            self.running += not full
        if full:  # accepted before the count caught up: ended at once, with the reason where it fits
            self._run_to_end(goal_handle, self._refuse)
            return
        threading.Thread(target=self._run, args=(goal_handle, execute_callback), name="goal", daemon=True).start()

    def _run(self, goal_handle, execute_callback) -> None:
        try:
            self._run_to_end(goal_handle, execute_callback)
        finally:
            with self._lock:
                self.running -= 1

    def _run_to_end(self, goal_handle, execute_callback) -> None:
        """rclpy's own goal coroutine (it sets the result the result requests wait for, aborting a goal
        the callback left active), driven to its end here: a plain callback never makes it wait."""
        coroutine = self.server._execute_goal(execute_callback, goal_handle)
        try:
            while True:
                coroutine.send(None)
                threading.Event().wait(0.01)  # an async callback awaiting something: look again soon
        except StopIteration:
            pass

    def _refuse(self, goal_handle):
        goal_handle.abort()
        result = self.server.action_type.Result()
        why = f"{self.limit} goals in flight already"
        for field in ("error_string", "error_message"):  # control_msgs' results, or the standard's result
            if hasattr(result, field):
                setattr(result, field, why)
        if hasattr(result, "result") and hasattr(result.result, "error_message"):
            result.result.error_message = why
        return result


def own_threads(server, limit: int = MAX_GOALS) -> GoalThreads:
    return GoalThreads(server, limit)


class Deferred:
    """A service answer that comes later. The callback returns a Deferred; whoever finishes the work calls
    `answer(response)` from any thread. `serve_deferred(service)` lets the service send it then."""

    def __init__(self):
        self._lock = threading.Lock()
        self._send: Callable | None = None
        self._response = None
        self._then: list[Callable] = []

    def then(self, callback: Callable) -> None:
        """Call `callback(response)` when the answer is given (at once if it was): bookkeeping."""
        with self._lock:
            response = self._response
            if response is None:
                self._then.append(callback)
        if response is not None:
            callback(response)

    def answer(self, response) -> None:
        with self._lock:
            self._response, send, then = response, self._send, self._then
            self._then = []
        for callback in then:
            callback(response)
        if send is not None:
            send(response)

    def _bind(self, send: Callable) -> None:
        with self._lock:
            self._send, response = send, self._response
        if response is not None:
            send(response)


def serve_deferred(service, log: Callable[[str], None]) -> None:
    """Let `service`'s callback return a Deferred: the executor hands over the request's header, and the
    answer goes out whenever `Deferred.answer` is called. A client gone by then is logged, not raised."""
    send_now = service.send_response

    def send(response, header) -> None:
        if not isinstance(response, Deferred):
            return send_now(response, header)

        def later(answer) -> None:
            try:
                send_now(answer, header)
            except Exception as exc:  # the client or the node is gone: nobody to answer
                log(f"{service.srv_name}: the answer could not be sent ({exc})")
        response._bind(later)

    service.send_response = send
