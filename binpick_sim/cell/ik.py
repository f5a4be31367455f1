"""Inverse kinematics for the Panda, solved on a private copy of the arm in its own PyBullet client.

PyBullet's solver starts from the body's current joints and stops after one descent, which can leave
centimetres of error for large turns. Solving on a copy lets us restart it from its own answer until
it converges, without ever touching the live arm (so IK never disturbs the world it is asked about).

Every target passes `PandaIK.bound` first: PyBullet's solver never returns for some finite targets
(a grasp target 1e308 m up loops forever on the physics thread, holding the GIL, deaf to signals), so
no caller may hand it a point the arm could not be near anyway.
"""
from __future__ import annotations

import math

import numpy as np

from .world import connect

PANDA_URDF = "franka_panda/panda.urdf"
TOLERANCE = 1e-4  # metres of grasp-target error at which refinement stops
ROUNDS = 6  # refinement passes after the first, at most
ITERATIONS = 100  # PyBullet's descent iterations per pass (5-8 us each here)
# The Panda reaches 0.855 m from its shoulder (0.333 m above the base), and its grasp target about
# 0.21 m beyond the flange: nothing of it is ever 1.5 m from the base. Targets further away are pulled in
# along the line to the base; IK then stretches the arm toward them and reports the distance left.
REACH = 1.5  # metres


class PandaIK:
    def __init__(self, base_position, base_orientation, lower, upper, rest, link: int, joints: list[int],
                 rounds: int = ROUNDS, iterations: int = ITERATIONS):
        import pybullet_data

        self.client = connect()
        self.client.setAdditionalSearchPath(pybullet_data.getDataPath())
        self.body = self.client.loadURDF(PANDA_URDF, list(base_position), list(base_orientation), useFixedBase=True)
        self.base = np.asarray(base_position, dtype=float)
        self.lower, self.upper, self.rest = np.asarray(lower), np.asarray(upper), np.asarray(rest)
        self.link, self.joints = link, joints
        self.rounds, self.iterations = rounds, iterations  # the scene's `arm.ik_rounds`, `arm.ik_iterations`

    def bound(self, position) -> np.ndarray:
        """`position` pulled in to at most REACH from the arm's base; a ValueError if it is not 3 finite
        numbers. Every Cartesian target goes through here before PyBullet's IK sees it."""
        position = np.asarray(position, dtype=float)
        if position.shape != (3,) or not np.all(np.isfinite(position)):
            raise ValueError(f"an IK target needs 3 finite coordinates, got {position.tolist()}")
        offset = np.clip(position, -1e6, 1e6) - self.base  # no overflow below, whatever the input
        distance = math.hypot(*offset)
        return position if distance <= REACH else self.base + offset * (REACH / distance)

    def solve(self, start, position, orientation=None, link: int | None = None,
              rounds: int | None = None) -> tuple[np.ndarray, float]:
        """Joint positions (9, fingers as in `start`) that put `link` (default: the grasp target) at the
        position (and orientation, if given), and the distance still left [m].

        The first pass keeps the arm near its rest posture (null space); the later passes polish that
        answer without the posture term, which otherwise costs a few millimetres of accuracy.
        `rounds` caps those later passes (default: the solver's own, ROUNDS unless the scene says).
        """
        c = self.client
        link = self.link if link is None else link
        rounds = self.rounds if rounds is None else rounds
        pose = [self.bound(position).tolist()] + ([_unit_quaternion(orientation)] if orientation is not None else [])
        self._set(start)
        q = np.array(c.calculateInverseKinematics(
            self.body, link, *pose, lowerLimits=self.lower.tolist(), upperLimits=self.upper.tolist(),
            jointRanges=(self.upper - self.lower).tolist(), restPoses=self.rest.tolist(),
            maxNumIterations=self.iterations, residualThreshold=1e-6)[:9])
        error = self._set(q, position, link) if rounds else np.inf  # with no refinement, only the end counts
        for _ in range(rounds):
            if error < TOLERANCE:
                break
            q = np.array(c.calculateInverseKinematics(self.body, link, *pose, maxNumIterations=self.iterations,
                                                      residualThreshold=1e-6)[:9])
            error = self._set(q, position, link)
        q = np.clip(q, self.lower, self.upper)
        q[7:] = np.asarray(start)[7:]
        return q, self._set(q, position, link)  # the error of the answer as returned (within limits)

    def _set(self, q, position=None, link: int | None = None) -> float:
        # One call for the nine joints (the same state as nine resetJointState calls, ~10x cheaper).
        self.client.resetJointStatesMultiDof(self.body, self.joints, np.asarray(q, dtype=float).reshape(-1, 1).tolist())
        if position is None:
            return np.inf
        reached = self.client.getLinkState(self.body, self.link if link is None else link,
                                           computeForwardKinematics=True)[4]
        return float(math.hypot(*np.subtract(reached, position)))  # to the target as asked (no overflow)

    def close(self) -> None:
        self.client.disconnect()


def _unit_quaternion(orientation) -> list[float]:
    q = np.asarray(orientation, dtype=float)
    norm = math.hypot(*q) if q.shape == (4,) and np.all(np.isfinite(q)) else 0.0
    if not norm > 1e-9:
        raise ValueError(f"an IK orientation needs a quaternion x y z w of finite numbers, not all zero, "
                         f"got {q.tolist()}")
    return (q / norm).tolist()
