"""Shaking a bin so that its objects spread (the reference simulator's `BaseBin.create_constraint`).

A bin is a fixed body for everything else the cell does, so it becomes movable only while it shakes:
it gets a mass, a fixed constraint holds it at its pose, and the constraint's target traces a
figure eight in the bin's own x-y plane (x = A sin wt, y = A/2 sin 2wt) for the asked duration. The
bin's collision shape is the same body throughout, so objects keep resting in it, the arm still
collides with it and the task still sees those contacts. Afterwards the target goes back to the rest
pose for RETURN_TIME, then the bin is fixed again exactly at its original pose.

The motion runs in a before-step hook of the world, so it advances with whatever steps the world
(a core caller, the ROS physics loop, a lock-step request). The hook is in place only while a shake
runs: an idle bin costs the world's steps nothing.
"""
from __future__ import annotations

import math

import numpy as np

from ...config import MAX_SHAKE_AMPLITUDE, MAX_SHAKE_DURATION, MAX_SHAKE_FREQUENCY
from ..world import World

SHAKE_MASS = 5.0  # kg of the bin while it shakes: 100 objects' worth, so the pile barely drags it
RETURN_TIME = 0.25  # s the constraint pulls the bin back to its pose before it is fixed again


def shake_problem(amplitude, frequency, duration) -> str | None:
    """Why a shake's parameters cannot be used (NaN, infinities, non-positive, too large), or None."""
    for name, value, high, unit in (("amplitude", amplitude, MAX_SHAKE_AMPLITUDE, "m"),
                                    ("frequency", frequency, MAX_SHAKE_FREQUENCY, "Hz"),
                                    ("duration", duration, MAX_SHAKE_DURATION, "s")):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
            return f"{name} must be a number, got {value!r}"
        if not (0 < value <= high):  # also false for NaN
            return f"{name} must be more than 0 and at most {high:g} {unit}, got {value!r}"
    return None


class BinShaker:
    """Shakes one bin (a `scene.Bin`) of a world on request; idle otherwise."""

    def __init__(self, world: World, bin_, ground: int):
        self.world, self.bin, self.ground = world, bin_, ground
        self.constraint: int | None = None
        self.steps_left = 0  # physics steps of motion still to come, then of the return
        self.return_steps = max(1, round(RETURN_TIME / world.timestep))
        self.motion = (0.0, 0.0, 0)  # amplitude, angular frequency, steps of motion
        self.step = 0

    @property
    def shaking(self) -> bool:
        return self.constraint is not None

    @property
    def time_left(self) -> float:
        """Sim seconds until the bin is fixed at its pose again (0 when idle)."""
        return self.steps_left * self.world.timestep if self.shaking else 0.0

    def start(self, amplitude: float, frequency: float, duration: float) -> None:
        """Begin a shake (the world's steps carry it out); raises ValueError on bad parameters or while
        a shake is already running."""
        problem = shake_problem(amplitude, frequency, duration)
        if problem:
            raise ValueError(f"cannot shake {self.bin.name}: {problem}")
        if self.shaking:
            raise ValueError(f"{self.bin.name} is already shaking ({self.time_left:.2f} s left)")
        c, body = self.world.client, self.bin.body
        rest = (self.bin.position.tolist(), self.bin.orientation.tolist())
        # awake, and kept so while it moves (asleep, Bullet would neither move it nor test its contacts)
        c.changeDynamics(body, -1, mass=SHAKE_MASS,
                         activationState=c.ACTIVATION_STATE_WAKE_UP | c.ACTIVATION_STATE_DISABLE_SLEEPING)
        c.setCollisionFilterPair(body, self.ground, -1, -1, 0)  # it stands on the ground: no friction there
        self.constraint = c.createConstraint(body, -1, -1, -1, c.JOINT_FIXED, [0, 0, 0], [0, 0, 0], rest[0],
                                             childFrameOrientation=rest[1])
        omega = 2 * math.pi * float(frequency)
        self.max_force = 10 * SHAKE_MASS * (9.81 + float(amplitude) * omega ** 2)
        c.changeConstraint(self.constraint, maxForce=self.max_force)
        motion_steps = max(1, round(float(duration) / self.world.timestep))
        self.motion = (float(amplitude), omega, motion_steps)
        self.step = 0
        self.steps_left = motion_steps + self.return_steps
        self.world.add_step_hooks(before=self._before_step)

    def stop(self) -> None:
        """End a shake at once: the bin fixed again exactly at its pose, at rest (a reset does this)."""
        if not self.shaking:
            return
        c, body = self.world.client, self.bin.body
        self.world.remove_step_hooks(before=self._before_step)
        c.removeConstraint(self.constraint)
        self.constraint = None
        self.steps_left = 0
        c.changeDynamics(body, -1, mass=0.0, activationState=c.ACTIVATION_STATE_ENABLE_SLEEPING)  # scene.may_sleep
        c.resetBasePositionAndOrientation(body, self.bin.position.tolist(), self.bin.orientation.tolist())
        c.resetBaseVelocity(body, [0, 0, 0], [0, 0, 0])
        c.setCollisionFilterPair(body, self.ground, -1, -1, 1)

    def forget(self) -> None:
        """The world was rebuilt (its bin and the shake's constraint are new or gone): idle, touching
        nothing of the world."""
        if self.shaking:
            self.world.remove_step_hooks(before=self._before_step)
        self.constraint = None
        self.steps_left = 0

    def _before_step(self) -> None:
        if self.steps_left <= 0:
            self.stop()
            return
        amplitude, omega, motion_steps = self.motion
        self.step += 1
        offset = np.zeros(3)
        if self.step <= motion_steps:
            t = self.step * self.world.timestep
            offset[:2] = amplitude * math.sin(omega * t), amplitude / 2 * math.sin(2 * omega * t)
        target = self.bin.to_world(offset)
        self.world.client.changeConstraint(self.constraint, jointChildPivot=target.tolist(),
                                           jointChildFrameOrientation=self.bin.orientation.tolist(),
                                           maxForce=self.max_force)
        self.steps_left -= 1
