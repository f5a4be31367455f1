"""The top-down actions of the reference simulator's FrankaArm: a delta turned into joint targets (workspace clipping, reach, IK with
the gripper pointing down), and the position, velocity, delta and gripper actions that step the world until
done, plus the shake that tests a grasp.

A mixin of FrankaArm (cell/arm/franka.py): what the reference simulator's API does with the arm, kept apart from what the arm is
(its body, state and motors), so that either can be read without the other.
"""
from __future__ import annotations

import numpy as np

from .ik import clip

TOP_DOWN_ROLL = np.pi  # grasp-target z axis points at the floor
SHAKE_HEIGHT = 0.03  # metres up and back down when verifying a grasp
FINGER_STOPPED = 1e-3  # m/s; below this for 10 steps in a row the gripper has finished moving
FLOOR_CLEARANCE = 0.002  # metres between the fingertips and the bin floor at the workspace's bottom


class TopDownActions:
    """FrankaArm's seed actions; uses its state (`joint_states`, `ee_pose`, `targets`) and motors
    (`set_position_targets`, `set_velocity_targets`, `set_gripper`), its `solver`, `workspace` and `config`."""

    def target_reached(self) -> bool:
        """Whether the arm is where its position targets say (the reference simulator's "until reached" of a position or
        delta action): the 7 arm joints within `position_tolerance`, and each finger within it or at rest
        (a finger that squeezes an object never gets to its target). Never in velocity mode."""
        targets = self.targets
        if targets is None:
            return False
        position, velocity, _ = self.joint_states()
        error = np.abs(position - targets)
        tolerance = self.config.position_tolerance
        fingers = (error[7:] < tolerance) | (np.abs(velocity[7:]) < FINGER_STOPPED)
        return bool(np.all(error[:7] < tolerance) and np.all(fingers))

    def delta_targets(self, delta) -> np.ndarray:
        """Joint targets for the reference simulator's delta action [dx, dy, dz, dyaw, gripper] (m, rad, +1 open / -1 close).

        The new grasp-target position is the current one plus the delta, clipped to the workspace when
        configured (only the commanded motion: a zero delta holds the arm even outside the workspace);
        the gripper stays top-down with its yaw turned by dyaw; IK keeps the arm near its home posture
        (with `arm.ik_posture`). gripper > 0 opens, < 0 closes, 0 keeps the current state.
        """
        delta = np.asarray(delta, dtype=float)
        state = self.world.client.getLinkState(self.body, self.grasp_link, computeForwardKinematics=True)
        position = np.array(state[4])  # ee_pose()'s, with the quaternion kept as PyBullet's tuple
        asked = position + delta[:3]
        target = asked
        if self.config.clip_delta_to_workspace and self.workspace is not None:
            target = self.clip_to_workspace(target, position)
        target = self.solver.bound(target)
        self.delta_clipped = target is not asked and target.tolist() != asked.tolist()  # counted by the arm node
        yaw = float(self.world.client.getEulerFromQuaternion(state[5])[2]) + delta[3]  # as ee_yaw()
        q = self.ik(target, yaw, bounded=True)
        if delta[4] != 0:
            self.gripper_open = bool(delta[4] > 0)
        q[7:] = self.config.gripper_open if self.gripper_open else self.limits.lower[7:]
        return self.limits.clip_position(q)

    def ik(self, position, yaw: float, bounded: bool = False) -> np.ndarray:
        """Joint targets for a top-down grasp at `position` turned by `yaw`; fingers keep their targets.
        `bounded`: `position` came from `self.solver.bound` already."""
        orientation = self.world.client.getQuaternionFromEuler([TOP_DOWN_ROLL, 0.0, yaw])
        targets = self.position_targets
        held = self._held  # as self.targets is not None, without its copy
        if held and not (self.solver.posture or self.solver.rounds):
            # One pass, nothing to refine or measure: on this arm, from where it stands (PandaIK.pass_on)
            q = self.solver.pass_on(self.world.client, self.body, position, orientation, bounded)
            q[7:] = targets[7:]
            return q
        start = self.joint_positions()
        if held:
            start[7:] = targets[7:]
        q, _ = self.solver.solve(start, position, orientation, measure=False)
        return q

    def workspace_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Seed workspace for the grasp target, in the bin frame: inside the walls less a margin,
        high enough that the fingertips stay just clear of the floor, no upper limit (computed once:
        the bin is fixed)."""
        return tuple(bound.copy() for bound in self._bounds())

    def _bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """workspace_bounds, computed at the first call, shared (never write to them)."""
        if self._workspace_bounds is None:
            lower, upper = self.workspace.interior()
            m = self.config.workspace_margin
            floor = lower[2] + self.tip_offset + FLOOR_CLEARANCE
            self._workspace_bounds = (np.array([lower[0] + m, lower[1] + m, floor]),
                                      np.array([upper[0] - m, upper[1] - m, np.inf]))
        return self._workspace_bounds

    def clip_to_workspace(self, point, start=None) -> np.ndarray:
        """`point` clipped to the workspace. With `start` (where a motion to `point` begins) only the
        commanded motion is clipped: per axis, the bounds widen to include `start`, so a motion from
        outside the workspace may go back toward it or hold still, never further out (a zero delta
        holds the arm wherever it is, e.g. at home, which lies outside the pick bin)."""
        lower, upper = self._bounds()
        if start is not None:
            here = self.workspace.to_local(start)
            lower, upper = np.minimum(lower, here), np.maximum(upper, here)
        local = clip(self.workspace.to_local(point), lower, upper)
        return self.workspace.to_world(local)

    # --- seed actions that step the world -----------------------------------------------------
    def move_to(self, q, check_fingers: bool = False) -> list[np.ndarray]:
        """Position action: set targets, step until the arm joints are within tolerance or max_steps.

        Returns the finger force readings of every step (empty when the sensors are off).
        """
        q = self.set_position_targets(q)
        joints = slice(0, 9 if check_fingers else 7)
        readings = []
        for _ in range(self.config.max_steps):
            self.world.step()
            if self.config.finger_force_sensors:
                readings.append(self.finger_forces())
            if np.all(np.abs(self.joint_states()[0][joints] - q[joints]) < self.config.position_tolerance):
                break
        return readings

    def apply_velocity(self, v) -> list[np.ndarray]:
        """Velocity action: set (clipped) velocities and step once."""
        self.set_velocity_targets(v)
        self.world.step()
        return [self.finger_forces()] if self.config.finger_force_sensors else []

    def apply_delta(self, delta) -> list[np.ndarray]:
        """Delta action: move the arm by IK, then open or close the gripper if that changed."""
        was_open = self.gripper_open
        q = self.delta_targets(delta)
        readings = self.move_to(q)
        if self.gripper_open != was_open:
            readings += self.actuate_gripper(self.gripper_open)
        return readings

    def actuate_gripper(self, open_: bool) -> list[np.ndarray]:
        """Open or close and step until the fingers stop (or max_steps when they squeeze an object)."""
        self.set_gripper(open_)
        readings, still = [], 0
        for _ in range(self.config.max_steps):
            self.world.step()
            if self.config.finger_force_sensors:
                readings.append(self.finger_forces())
            still = still + 1 if np.all(np.abs(self.joint_states()[1][7:]) < FINGER_STOPPED) else 0
            if still >= 10:
                break
        return readings

    def shake(self) -> None:
        """Move up a little and back down to where it started, so that a loose grasp loses its object.

        Not a delta action: the pick bin's workspace does not apply (a shake above the drop bin stays
        above it), only the arm's reach; the gripper keeps its yaw and its state."""
        start, yaw = self.ee_pose()[0], self.ee_yaw()
        for target in (start + [0.0, 0.0, SHAKE_HEIGHT], start):
            self.move_to(self.ik(self.solver.bound(target), yaw))  # the fingers keep their targets
