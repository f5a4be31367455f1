"""Inverse kinematics for the Panda, solved on a private copy of the arm in its own PyBullet client.

PyBullet's solver starts from the body's current joints and stops after one descent, which can leave
centimetres of error for large turns. Solving on a copy lets us restart it from its own answer until
it converges, without ever touching the live arm (so IK never disturbs the world it is asked about).
"""
from __future__ import annotations

import numpy as np

from .world import connect

PANDA_URDF = "franka_panda/panda.urdf"
TOLERANCE = 1e-4  # metres of grasp-target error at which refinement stops
ROUNDS = 6  # refinement passes after the first, at most
ITERATIONS = 100  # PyBullet's descent iterations per pass (5-8 us each here)


class PandaIK:
    def __init__(self, base_position, base_orientation, lower, upper, rest, link: int, joints: list[int],
                 rounds: int = ROUNDS, iterations: int = ITERATIONS):
        import pybullet_data

        self.client = connect()
        self.client.setAdditionalSearchPath(pybullet_data.getDataPath())
        self.body = self.client.loadURDF(PANDA_URDF, list(base_position), list(base_orientation), useFixedBase=True)
        self.lower, self.upper, self.rest = np.asarray(lower), np.asarray(upper), np.asarray(rest)
        self.link, self.joints = link, joints
        self.rounds, self.iterations = rounds, iterations  # the scene's `arm.ik_rounds`, `arm.ik_iterations`

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
        pose = [list(position)] + ([list(orientation)] if orientation is not None else [])
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
        return float(np.linalg.norm(np.subtract(reached, position)))

    def close(self) -> None:
        self.client.disconnect()
