"""How FrankaArm's commands reach PyBullet's motors: position and velocity targets, torques with the motors
released, and the bookkeeping that lets one array call do what nine per-joint calls would.

A mixin of FrankaArm (cell/arm/franka.py), kept apart because it is one idea of its own, tuned for the physics
thread (plain floats, one call per mode, each motor's velocity clamp remembered), and nothing else in the arm
needs to know how: the rest sets targets through `set_position_targets` / `set_velocity_targets`.
"""
from __future__ import annotations

import math

import numpy as np

from .panda import JOINT_NAMES

_NO_TARGETS = np.full(len(JOINT_NAMES), np.nan)  # the other mode's half of a motor command (never written to)
_NO_TARGETS.flags.writeable = False


class MotorCommands:
    """FrankaArm's motor side; needs `world`, `body`, `joints`, `limits`, `config` and the motor state that
    FrankaArm.__init__ sets up (`_motor_forces`, `_max_velocities`, `_clamped`, `torque_commands`)."""

    # --- torque control (no stepping) ---------------------------------------------------------
    def release_motors(self, count: int = len(JOINT_NAMES)) -> None:
        """Switch the first `count` joints' motors off (zero-force velocity motors) for torque control."""
        c = self.world.client
        c.setJointMotorControlArray(self.body, self.joints[:count], c.VELOCITY_CONTROL, forces=[0.0] * count)
        self._clamped[:count] = [False] * count  # a velocity command lifts the clamp
        self.torque_commands[:count] = 0.0
        self._torqued = True

    def command_torques(self, torques) -> None:
        """Torques [Nm | N] for the first len(torques) joints during the next step, used as given (clip
        them first; release the motors first). Recorded: `joint_states` reports them as the effort."""
        torques = np.asarray(torques, dtype=float)
        c = self.world.client
        c.setJointMotorControlArray(self.body, self.joints[:len(torques)], c.TORQUE_CONTROL, forces=torques.tolist())
        self._clamped[:len(torques)] = [False] * len(torques)  # known only while position-controlled
        self.torque_commands[:len(torques)] = torques
        self._torqued = True

    # --- motor targets (no stepping) ----------------------------------------------------------
    def set_position_targets(self, q) -> np.ndarray:
        """Hand 9 position targets to the motors, clipped to the joint limits; returns what was set."""
        q = self.limits.clip_position(np.asarray(q, dtype=float))
        self.command_motors(q, _NO_TARGETS)
        return q

    def set_velocity_targets(self, v) -> np.ndarray:
        """Hand 9 velocity targets to the motors, clipped to the velocity limits; returns what was set."""
        v = self.limits.clip_velocity(np.asarray(v, dtype=float))
        self.command_motors(_NO_TARGETS, v)
        return v

    def command_motors(self, positions, velocities) -> None:
        """Per joint: a position target (where `positions` is a number) or a velocity target (where only
        `velocities` is); values are used as given, so clip them first. This pair is the whole motor
        state: `targets` and `velocity_targets` report it back.

        At most one `setJointMotorControlArray` per mode instead of a call per joint. That call cannot
        set a motor's velocity clamp (`maxVelocity`), which PyBullet keeps per motor until a velocity
        command lifts it: a joint whose clamp is not known to be its velocity limit (first position
        target, or after a velocity or torque command, or a reloaded body) gets its own
        `setJointMotorControl2` with `maxVelocity` first, so every motor ends in the same state as
        with nine `setJointMotorControl2` calls."""
        c = self.world.client
        # Plain floats: numpy scalars cost a microsecond per test or argument, and this runs every step.
        position_list = np.asarray(positions, dtype=float).tolist()
        # every joint on a position target (`targets` is not None): NaN is the only non-finite one can have
        self._held = not any(map(math.isnan, position_list))
        if all(self._clamped) and all(map(math.isfinite, position_list)):
            # The usual case: every joint held at a position target, every clamp already set.
            c.setJointMotorControlArray(self.body, self.joints, c.POSITION_CONTROL, targetPositions=position_list,
                                        forces=self._motor_forces)
        elif not any(map(math.isfinite, position_list)):  # every joint on a velocity target: one call
            c.setJointMotorControlArray(self.body, self.joints, c.VELOCITY_CONTROL,
                                        targetVelocities=np.asarray(velocities, dtype=float).tolist(),
                                        forces=self._motor_forces)
            self._clamped[:] = [False] * len(self.joints)  # a velocity command lifts the clamp
        else:
            self._command_each(position_list, np.asarray(velocities, dtype=float).tolist())
        if self._torqued:  # (otherwise torque_commands are all NaN already)
            self.torque_commands[:] = np.nan
            self._torqued = False
        self.position_targets = np.array(positions, dtype=float)
        if velocities is _NO_TARGETS:  # set_position_targets: no joint on a velocity target
            self.velocity_targets = _NO_TARGETS  # shared and read-only: readers copy it (arm node, reasoner)
        else:
            self.velocity_targets = np.where(np.isfinite(self.position_targets), np.nan, velocities)

    def _command_each(self, positions: list[float], velocities: list[float]) -> None:
        """command_motors for a mix of modes or unknown clamps: setJointMotorControl2 with maxVelocity
        where a position-controlled joint's clamp is not known set, one array call per mode for the rest."""
        c = self.world.client
        forces, clamped, joints = self._motor_forces, self._clamped, self.joints
        held, held_targets, held_forces = [], [], []
        moving, moving_targets, moving_forces = [], [], []
        for i, target in enumerate(positions):
            if math.isfinite(target):
                if clamped[i]:
                    held.append(joints[i])
                    held_targets.append(target)
                    held_forces.append(forces[i])
                else:
                    c.setJointMotorControl2(self.body, joints[i], c.POSITION_CONTROL, targetPosition=target,
                                            force=forces[i], maxVelocity=self._max_velocities[i])
                    clamped[i] = True
            else:
                moving.append(joints[i])
                moving_targets.append(velocities[i])
                moving_forces.append(forces[i])
                clamped[i] = False  # a velocity command lifts the clamp
        if held:
            c.setJointMotorControlArray(self.body, held, c.POSITION_CONTROL, targetPositions=held_targets,
                                        forces=held_forces)
        if moving:
            c.setJointMotorControlArray(self.body, moving, c.VELOCITY_CONTROL, targetVelocities=moving_targets,
                                        forces=moving_forces)

    @property
    def targets(self) -> np.ndarray | None:
        """The 9 position targets, or None while any joint runs on a velocity target."""
        return self.position_targets.copy() if self._held else None

    def set_gripper(self, open_: bool) -> None:
        """Open to the configured width or close fully, leaving the seven arm joints' targets alone
        (in velocity mode the arm holds where it is)."""
        q = self.targets.copy() if self.targets is not None else self.joint_states()[0]
        q[7:] = self.config.gripper_open if open_ else self.limits.lower[7:]
        self.gripper_open = open_
        self.set_position_targets(q)
