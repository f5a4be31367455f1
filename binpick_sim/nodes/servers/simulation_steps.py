"""The simulation node's state and stepping: get/set simulation state (playing, paused, stopped, quitting),
StepSimulation, the SimulateSteps action, and resets.

A mixin of SimulationNode (simulation_node.py). Step requests hold no executor thread while their steps are
taken (long_requests.py), and every one can be ended within a step: how that is done is this module's one
idea, apart from the entity services (simulation_entities.py).
"""
from __future__ import annotations

import time

from rclpy.action import GoalResponse

from ..common.long_requests import Deferred
from ..common.sim_clock import steady_timer

SCOPE_BITS = 1 | 2 | 4  # ResetSimulation's SCOPE_TIME | SCOPE_STATE | SCOPE_SPAWNED
# s between the last feedback and the result: rclpy's ActionClient forgets a goal's feedback callback
# when it takes the result, so a feedback it takes in the same pass after the result is dropped
FEEDBACK_LEAD = 0.02
CANCEL_POLL = 0.05  # s between a waiting goal's looks at its cancel (one queued behind other requests)


class SimulationSteps:
    """SimulationNode's state and step handlers; use its `msg`, `loop`, `entities`, `max_steps`, `run`, `ok`,
    `fail` and `republish`."""

    def state(self) -> int:
        s = self.msg.SimulationState
        if self.loop.holding:
            return s.STATE_STOPPED if self.stopped else s.STATE_PAUSED
        return s.STATE_PLAYING

    def state_name(self) -> str:
        return {0: "stopped", 1: "playing", 2: "paused"}[self.state()]

    def on_get_simulation_state(self, request, response):
        response.state.state = self.state()
        self.ok(response)

    def on_set_simulation_state(self, request, response):
        s, r = self.msg.SimulationState, type(response)
        target, now = request.state.state, self.state()
        if target == now:
            return self.fail(response, r.ALREADY_IN_TARGET_STATE, f"already {self.state_name()}")
        if target == s.STATE_PLAYING:
            if self.loop.lockstep:
                return self.fail(response, r.STATE_TRANSITION_ERROR, "the world runs in lock-step mode "
                                 "(lockstep:=true): it moves only by the steps asked for")
            self.run(self._play)
        elif target == s.STATE_PAUSED:  # from playing, or from stopped: paused at once, no step taken
            self.run(self._pause)
        elif target == s.STATE_STOPPED:
            self.run(self._pause, "STOPPED")
            self.run(self._reset, SCOPE_BITS)
            self.stopped = True
        elif target == s.STATE_QUITTING:
            self.run(self._pause, "QUITTING")
            self._quit_timer = steady_timer(self, 0.2, self._quit)  # after this answer has gone out (wall time: paused)
        else:
            return self.fail(response, r.INCORRECT_TRANSITION, f"state {target} cannot be set (settable: "
                             "STOPPED 0, PLAYING 1, PAUSED 2, QUITTING 3)")
        self.ok(response)

    def _play(self) -> None:
        self.end_steps("the simulation was set PLAYING")
        self.stopped = False
        self.loop.paused = False

    def _pause(self, target: str | None = None) -> None:
        if target:
            self.end_steps(f"the simulation was set {target}")
        if not self.loop.lockstep:  # lock-step: paused between requests already
            self.loop.paused = True
        self.stopped = False

    def end_steps(self, why: str) -> None:
        """Physics thread: a change of state ends every step request in flight (the one being taken after
        the step in progress, and those queued), each answered with how far it got and `why`."""
        self.loop.cancel_steps(why)

    @staticmethod
    def cut_short(done, steps: int) -> str:
        """Why the step request whose Future is `done` ended after `getattr(done, "taken")` of its `steps`:
        the Future's `why` (PhysicsLoop.cancel_steps), or world/cancel_steps, which gives none."""
        return f"{getattr(done, 'why', None) or 'canceled (world/cancel_steps)'} after {done.taken} of {steps} steps"

    def _quit(self) -> None:
        import rclpy

        self.get_logger().info("quitting, as asked by set_simulation_state")
        self._quit_timer.cancel()
        rclpy.try_shutdown(context=self.context)

    def check_steps(self, steps: int) -> str | None:
        """Why a step request cannot be taken now, or None."""
        if self.state() != self.msg.SimulationState.STATE_PAUSED:
            return f"the simulation is {self.state_name()}: stepping needs it paused"
        if steps > self.max_steps:
            return f"{steps} steps is more than max_steps ({self.max_steps})"
        return None

    def on_step(self, request, response):
        """Answered when the steps are taken (or cut short), holding no thread meanwhile."""
        steps = request.steps
        why = self.check_steps(steps)
        if why:
            return self.fail(response, self.msg.Result.RESULT_OPERATION_FAILED, why)
        later = Deferred()

        def taken(done) -> None:  # on the thread that ended the request: physics, or the one stopping it
            try:
                done.result()
            except Exception as exc:  # the loop stopped (shutdown)
                self.fail(response, self.msg.Result.RESULT_OPERATION_FAILED, str(exc))
            else:
                count = getattr(done, "taken", steps)
                if count < steps:
                    self.fail(response, self.msg.Result.RESULT_OPERATION_FAILED, self.cut_short(done, steps))
                else:
                    self.ok(response)
            later.answer(response)
        self.loop.advance(steps).add_done_callback(taken)
        return later

    def on_goal(self, goal) -> GoalResponse:
        if self.goals.room():
            return GoalResponse.ACCEPT
        self.diagnostics.reject("simulate_steps", f"{self.goals.limit} goals in flight already")
        return GoalResponse.REJECT

    def on_simulate_steps(self, handle):
        """On a thread of its own (long_requests.own_threads): one request to the loop, a feedback per step
        from the physics thread, ended within a step by a cancel or a change of state."""
        result = self.SimulateSteps.Result()
        steps = handle.request.steps
        why = self.check_steps(steps)
        if why:
            self.diagnostics.reject("simulate_steps", why)
            result.result.result, result.result.error_message = self.msg.Result.RESULT_OPERATION_FAILED, why
            handle.abort()
            return result
        progress = {"taken": 0}
        Feedback = self.SimulateSteps.Feedback

        def stepped() -> bool:  # physics thread, after each step but the last: True ends the request
            progress["taken"] += 1
            handle.publish_feedback(Feedback(completed_steps=progress["taken"], remaining_steps=steps - progress["taken"]))
            return handle.is_cancel_requested

        def ended(done) -> None:  # physics thread, as it ends
            if getattr(done, "taken", 0) == steps:  # the last feedback, well before the result goes out
                handle.publish_feedback(Feedback(completed_steps=steps, remaining_steps=0))
        done = self.loop.advance(steps, until=stepped)
        done.add_done_callback(ended)
        while True:
            try:
                done.result(timeout=CANCEL_POLL)
                break
            except TimeoutError:  # still queued behind other requests, or taking its steps
                if handle.is_cancel_requested:
                    self.loop.call(self.loop.withdraw, done)
            except Exception as exc:  # the loop stopped (shutdown)
                result.result.result, result.result.error_message = self.msg.Result.RESULT_OPERATION_FAILED, str(exc)
                handle.abort()
                return result
        taken = getattr(done, "taken", steps)
        if taken == steps:
            time.sleep(FEEDBACK_LEAD)
            handle.succeed()
            result.result.result = self.msg.Result.RESULT_OK
            self.served += 1
        elif getattr(done, "why", None) is None and handle.is_cancel_requested:
            handle.canceled()
            result.result.result = self.msg.Result.RESULT_OK
            result.result.error_message = f"canceled after {taken} of {steps} steps"
        else:
            message = self.cut_short(done, steps)
            handle.abort()
            result.result.result, result.result.error_message = self.msg.Result.RESULT_OPERATION_FAILED, message
        return result

    def on_reset(self, request, response):
        scope = request.scope or request.SCOPE_ALL
        if scope != request.SCOPE_ALL and scope & ~SCOPE_BITS:
            return self.fail(response, self.msg.Result.RESULT_FEATURE_UNSUPPORTED,
                             f"scope {scope}: only TIME 1, STATE 2, SPAWNED 4, their sums, and ALL 255")
        self.run(self._reset, scope & SCOPE_BITS)
        self.ok(response)

    def _reset(self, scope: int) -> None:
        """Physics thread: SPAWNED removes spawned objects; STATE restarts the episode (the bin's
        objects as dropped, the arm home, kept spawned objects at their spawn poses); TIME zeroes sim time."""
        if scope & 2:
            self.entities.restart(keep_spawned=not scope & 4)
        elif scope & 4:
            self.entities.remove_spawned()
        if scope & 1:
            self.loop.reset_time()
        self.republish()
