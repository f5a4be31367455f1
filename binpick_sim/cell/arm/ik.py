"""Inverse kinematics for the Panda, solved on a private copy of the arm in its own PyBullet client.

PyBullet's solver starts from the body's current joints and stops after one descent, which can leave
centimetres of error for large turns. Solving on a copy lets us restart it from its own answer until
it converges, without ever touching the live arm (so IK never disturbs the world it is asked about).
A single pass with nothing to refine or measure (`PandaIK.pass_on`) may run on the live arm itself:
PyBullet's IK only reads a body's joints, and the arm already stands where the copy would be set.

A solve is up to two kinds of PyBullet pass:

- the **posture pass** (with `arm.ik_posture`) keeps the arm near its home posture: PyBullet's
  null-space method, whose pull toward the rest pose is a fixed 0.1 % of the way per iteration and
  whose target step is damped (0.6^2), so a pass gets only within millimetres;
- **refinement passes** polish that answer, or do the whole job without a posture pass: plain damped
  least squares with a light damping (REFINE_DAMPING instead of PyBullet's default 0.5 per joint,
  which takes ~60 iterations to gain a tenth of a millimetre) and PyBullet's residual threshold at
  TOLERANCE, so a pass stops as soon as the grasp target is within it (2-5 iterations for an env
  step's motion instead of the 100 iterations of a pass without the threshold).

The posture pass's rest pose is placed so that its `iterations` pull the arm as far toward home as
the 100 iterations of the former default did (POSTURE_PULL): a 10-iteration pass keeps the posture
the same at a tenth of the cost.

Every target passes `PandaIK.bound` first: PyBullet's solver never returns for some finite targets
(a grasp target 1e308 m up loops forever on the physics thread, holding the GIL, deaf to signals), so
no caller may hand it a point the arm could not be near anyway.
"""
from __future__ import annotations

import math

import numpy as np
from numpy.core.umath import clip  # np.clip's own ufunc, without its ~1 us of Python dispatch per call

from ..world import connect
from .panda import hulled_panda_urdf

TOLERANCE = 1e-4  # metres of grasp-target error at which refinement stops
ROUNDS = 6  # refinement passes after the first, at most
ITERATIONS = 10  # PyBullet's descent iterations per pass, at most (2.5-4.5 us each here)
POSTURE_GAIN = 0.001  # PyBullet's null-space pull toward the rest pose per iteration (IKTrajectoryHelper)
POSTURE_PULL = 100 * POSTURE_GAIN  # how far one solve pulls toward home: what 100 iterations did
REFINE_DAMPING = 1e-3  # per joint, added to J^T J: near Gauss-Newton, converges in a few iterations
# The Panda reaches 0.855 m from its shoulder (0.333 m above the base), and its grasp target about
# 0.21 m beyond the flange: nothing of it is ever 1.5 m from the base. Targets further away are pulled in
# along the line to the base; IK then stretches the arm toward them and reports the distance left.
REACH = 1.5  # metres


class PandaIK:
    def __init__(self, base_position, base_orientation, lower, upper, rest, link: int, joints: list[int],
                 rounds: int = ROUNDS, iterations: int = ITERATIONS, posture: bool = True):
        import pybullet_data

        self.client = connect()
        self.client.setAdditionalSearchPath(pybullet_data.getDataPath())
        # Kinematics alone: the copy is never drawn, and the Panda's visual meshes cost ~60 MB per client.
        self.body = self.client.loadURDF(hulled_panda_urdf(), list(base_position), list(base_orientation),
                                         useFixedBase=True, flags=self.client.URDF_IGNORE_VISUAL_SHAPES)
        self.base = np.asarray(base_position, dtype=float)
        self._base = self.base.tolist()
        self.lower, self.upper, self.rest = np.asarray(lower), np.asarray(upper), np.asarray(rest)
        self.link, self.joints = link, joints
        # the scene's `arm.ik_rounds`, `arm.ik_iterations`, `arm.ik_posture`
        self.rounds, self.iterations, self.posture = rounds, iterations, posture
        # What every call passes, as plain lists (made once: PyBullet copies them on every call).
        self._lower, self._upper, self._rest = self.lower.tolist(), self.upper.tolist(), self.rest.tolist()
        self._limits = dict(lowerLimits=self._lower, upperLimits=self._upper,
                            jointRanges=(self.upper - self.lower).tolist())
        self._damping = [REFINE_DAMPING] * len(joints)
        # how far the posture pass's rest pose sits toward home, so that its iterations pull as 100 did
        self._pull = POSTURE_PULL / (POSTURE_GAIN * iterations)

    def bound(self, position) -> np.ndarray:
        """`position` pulled in to at most REACH from the arm's base; a ValueError if it is not 3 finite
        numbers. Every Cartesian target goes through here before PyBullet's IK sees it."""
        position = np.asarray(position, dtype=float)
        # Plain floats below (the same IEEE arithmetic as numpy's, without its per-call cost).
        x, y, z = position.tolist() if position.shape == (3,) else (math.nan,) * 3
        if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
            raise ValueError(f"an IK target needs 3 finite coordinates, got {position.tolist()}")
        bx, by, bz = self._base
        # clipped first: no overflow below, whatever the input
        distance = math.hypot(min(max(x, -1e6), 1e6) - bx, min(max(y, -1e6), 1e6) - by, min(max(z, -1e6), 1e6) - bz)
        if distance <= REACH:
            return position
        offset = np.clip(position, -1e6, 1e6) - self.base
        return self.base + offset * (REACH / distance)

    def solve(self, start, position, orientation=None, link: int | None = None,
              rounds: int | None = None, measure: bool = True) -> tuple[np.ndarray, float | None]:
        """Joint positions (9, within the joint limits, fingers as in `start`) that put `link` (default:
        the grasp target) at the position (and orientation, if given), and the distance still left [m].

        The first pass starts from `start`: the posture pass (see the module) or, without
        `posture`, a refinement pass. Each answer is clipped to the joint limits and measured; while
        it is TOLERANCE or more from the target, a refinement pass starts from it again, at most
        `rounds` times (default: the solver's own, ROUNDS unless the scene says). The error returned
        is that of the answer as returned. `measure=False`: a caller that has no use for the error gets
        None instead, and with no refinement the answer is not measured at all (no FK on the copy).
        """
        c = self.client
        link = self.link if link is None else link
        rounds = self.rounds if rounds is None else rounds
        # Plain floats from here on: the same IEEE arithmetic as numpy's, without its per-call cost (about 5 us
        # of an env step's 115 us solve).
        start = np.asarray(start, dtype=float).tolist()
        pose = [self.bound(position).tolist()] + ([_unit_quaternion(orientation)] if orientation is not None else [])
        asked = np.asarray(position, dtype=float).tolist()  # the error is measured to the target as asked
        self._set(start)
        if self.posture:
            rest = [v + self._pull * (r - v) for v, r in zip(start, self._rest)]
            q = c.calculateInverseKinematics(self.body, link, *pose, restPoses=rest, **self._limits,
                                             maxNumIterations=self.iterations, residualThreshold=1e-6)
        else:
            q = self._refine(link, pose)
        if not (rounds or measure):
            return np.array(self._within(q, start)), None
        q, error = self._answer(q, start, asked, link)
        for _ in range(rounds):
            if error < TOLERANCE:
                break
            q, error = self._answer(self._refine(link, pose), start, asked, link)
        return np.array(q), error

    def pass_on(self, client, body: int, position, orientation, bounded: bool = False) -> np.ndarray:
        """One refinement pass toward the grasp target's `position` and `orientation` on a live arm (its
        `client` and `body`), from that arm's own joints, clipped to the joint limits; fingers as
        PyBullet leaves them (replace them). What `solve(start, ..., measure=False)` answers without a
        posture pass or refinement, `start` being the arm's joints: the fingers do not move the grasp
        target, so the arm joints come out the same, without a copy to set first (panda-gym's way).
        `bounded`: the caller has put `position` through `bound` already (a delta step does, to see
        whether it clipped), so it is not checked twice."""
        pose = [(position if bounded else self.bound(position)).tolist(), _unit_quaternion(orientation)]
        q = client.calculateInverseKinematics(body, self.link, *pose, jointDamping=self._damping,
                                              maxNumIterations=self.iterations, residualThreshold=TOLERANCE)
        return clip(np.array(q[:9]), self.lower, self.upper)

    def _refine(self, link: int, pose: list) -> tuple:
        """One refinement pass from the copy's joints: stops within TOLERANCE (PyBullet's residual is
        the position error before an iteration's step, so the answer is that step closer still)."""
        return self.client.calculateInverseKinematics(self.body, link, *pose, jointDamping=self._damping,
                                                      maxNumIterations=self.iterations,
                                                      residualThreshold=TOLERANCE)

    def _answer(self, q, start: list, asked: list, link: int) -> tuple[list, float]:
        """PyBullet's answer within the joint limits, fingers as in `start`, set on the copy (where the
        next pass starts), and its distance to `asked`."""
        q = self._within(q, start)
        return q, self._set(q, asked, link)

    def _within(self, q, start: list) -> list:
        """PyBullet's answer (one value per joint) clipped to the joint limits, the fingers' taken from `start`
        (they do not move the grasp target: the answer leaves them where they were)."""
        return [min(max(v, low), high) for v, low, high in zip(q[:7], self._lower, self._upper)] + start[7:]

    def _set(self, q, position=None, link: int | None = None) -> float:
        # One call for the nine joints (the same state as nine resetJointState calls, ~10x cheaper).
        values = q if type(q) is list else np.asarray(q, dtype=float).tolist()
        self.client.resetJointStatesMultiDof(self.body, self.joints, [[v] for v in values])
        if position is None:
            return np.inf
        reached = self.client.getLinkState(self.body, self.link if link is None else link,
                                           computeForwardKinematics=True)[4]
        x, y, z = position
        return math.hypot(reached[0] - x, reached[1] - y, reached[2] - z)  # to the target as asked (no overflow)

    def move_base(self, position, orientation) -> None:
        """Stand the copy's base at `position` / `orientation` (xyzw): a controller whose arm's base moved
        (robosuite's update_base_pose) solves from there."""
        self.client.resetBasePositionAndOrientation(self.body, list(position), list(orientation))
        self.base = np.asarray(position, dtype=float)
        self._base = self.base.tolist()

    def close(self) -> None:
        self.client.disconnect()


def _unit_quaternion(orientation) -> list[float]:
    if type(orientation) is tuple and len(orientation) == 4 and all(type(v) is float for v in orientation):
        values = list(orientation)  # PyBullet's own quaternions (a delta step's): no array to make
    else:
        q = np.asarray(orientation, dtype=float)
        values = q.tolist() if q.shape == (4,) else []
    norm = math.hypot(*values) if len(values) == 4 and all(map(math.isfinite, values)) else 0.0
    if not norm > 1e-9:
        raise ValueError(f"an IK orientation needs a quaternion x y z w of finite numbers, not all zero, "
                         f"got {np.asarray(orientation, dtype=float).tolist()}")
    return [v / norm for v in values]
