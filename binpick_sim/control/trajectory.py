"""Time-parameterised joint trajectories, followed at the physics rate as ros2_control's joint
trajectory controller (JTC) does: from where the joints are now to each point at its time_from_start,
linearly between positions-only points, with cubic Hermite segments when velocities are given and
quintic ones when accelerations are given too.

A follower may also watch tolerances as JTC does for a FollowJointTrajectory goal (`Tolerances`): the
path tolerance while the trajectory runs, the goal tolerance after its end, within the goal time. It
checks them every physics step (a poll from another thread would miss a short excursion) and records
the first verdict in `outcome`; a violation holds the joints where they are, as JTC does.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..cell.arm.franka import FrankaArm
from ..cell.arm.panda import JOINT_NAMES, check_joint_names

SUCCEEDED, PATH_TOLERANCE_VIOLATED, GOAL_TOLERANCE_VIOLATED = "succeeded", "path", "goal"


class BadTrajectory(ValueError):
    """A trajectory that cannot be followed; the message says why."""


@dataclass(frozen=True)
class Trajectory:
    joints: tuple[int, ...]  # indices into the arm's 9 joints
    times: np.ndarray  # (K,) seconds after the start, strictly increasing
    positions: np.ndarray  # (K, J)
    velocities: np.ndarray | None  # (K, J), or None for positions only
    accelerations: np.ndarray | None = None  # (K, J), or None; only with velocities

    @classmethod
    def parse(cls, names, times, positions, velocities, lower, upper, velocity_limits=None,
              accelerations=None, acceleration_limits=None) -> "Trajectory":
        """Check a trajectory as a planner sends it; BadTrajectory says what is wrong.

        With `velocity_limits` (the 9 joints' [rad/s | m/s]), a point's velocity above its joint's limit
        is refused: the cubic segments through such a velocity swing far off the path (100 rad/s on a
        1 s trajectory: 2.6 rad) and 1e308 turned every joint target NaN. So is a segment whose mean
        speed (distance over duration) is above the limit: the motors cannot follow it. With
        `acceleration_limits`, a point's acceleration above its joint's limit is refused likewise."""
        names = check_joint_names(names, BadTrajectory)
        if not len(times):
            raise BadTrajectory("no points")
        joints = tuple(JOINT_NAMES.index(n) for n in names)
        try:
            q = np.array([list(p) for p in positions], dtype=float).reshape(len(times), len(names))
        except ValueError:
            raise BadTrajectory(f"every point needs {len(names)} positions") from None
        v = _optional(velocities, len(times), len(names), "velocities")
        a = _optional(accelerations or [() for _ in times], len(times), len(names), "accelerations")
        if a is not None and v is None:
            raise BadTrajectory("accelerations need velocities at every point too")
        t = np.asarray(times, dtype=float)
        if not all(x is None or np.all(np.isfinite(x)) for x in (q, t, v, a)):
            raise BadTrajectory("positions, velocities, accelerations and times must be finite numbers")
        if t[0] < 0 or np.any(np.diff(t) <= 0):
            raise BadTrajectory("time_from_start must start at >= 0 and increase strictly from point to point")
        low, high = np.asarray(lower)[list(joints)], np.asarray(upper)[list(joints)]
        outside = np.argwhere((q < low - 1e-9) | (q > high + 1e-9))
        if len(outside):
            point, joint = outside[0]
            raise BadTrajectory(f"point {point}: {names[joint]} = {q[point, joint]:.4f} is outside its limits "
                                f"[{low[joint]:.4f}, {high[joint]:.4f}]")
        for values, limits, what in ((v, velocity_limits, "velocity"), (a, acceleration_limits, "acceleration")):
            if values is None or limits is None:
                continue
            limit = np.asarray(limits)[list(joints)]
            fast = np.argwhere(np.abs(values) > limit + 1e-9)
            if len(fast):
                point, joint = fast[0]
                raise BadTrajectory(f"point {point}: {names[joint]} {what} {values[point, joint]:.4g} is above its "
                                    f"limit {limit[joint]:.4f}")
        if velocity_limits is not None and len(t) > 1:
            limit = np.asarray(velocity_limits)[list(joints)]
            mean = np.abs(np.diff(q, axis=0)) / np.diff(t)[:, None]
            fast = np.argwhere(mean > limit + 1e-9)
            if len(fast):
                segment, joint = fast[0]
                raise BadTrajectory(f"points {segment} to {segment + 1}: {names[joint]} would need "
                                    f"{mean[segment, joint]:.4g} on average, above its velocity limit "
                                    f"{limit[joint]:.4f}")
        return cls(joints, t, q, v, a)

    @property
    def duration(self) -> float:
        return float(self.times[-1])


def _optional(values, points: int, joints: int, what: str) -> np.ndarray | None:
    """Per-point values that are either given at every point (each of `joints` numbers) or at none."""
    if not any(len(p) for p in values):
        return None
    try:
        return np.array([list(p) for p in values], dtype=float).reshape(points, joints)
    except ValueError:
        raise BadTrajectory(f"{what}: every point needs {joints} or none at all") from None


@dataclass(frozen=True)
class Tolerances:
    """JTC's segment tolerances for the trajectory's joints: 0 = not checked. `path_*`: |desired - actual|
    while the trajectory runs; `goal_*`: after its end (the velocity against the last point's);
    `goal_time`: seconds after the end the goal may take to be within them (0 = as long as it takes)."""
    path_position: np.ndarray
    path_velocity: np.ndarray
    goal_position: np.ndarray
    goal_velocity: np.ndarray
    goal_time: float


@dataclass(frozen=True)
class Outcome:
    """How a watched trajectory ended: SUCCEEDED, PATH_TOLERANCE_VIOLATED or GOAL_TOLERANCE_VIOLATED,
    at sim time `time`, with a sentence for error_string."""
    kind: str
    time: float
    message: str


class TrajectoryFollower:
    """Installed as the arm's controller: sets the trajectory's joints' position targets every step;
    with `tolerances`, also judges them every step (see the module's docstring)."""

    def __init__(self, arm: FrankaArm, trajectory: Trajectory, start_time: float,
                 tolerances: Tolerances | None = None):
        self.arm, self.trajectory, self.start_time, self.tolerances = arm, trajectory, start_time, tolerances
        joints = list(trajectory.joints)
        now = arm.joint_states()[0][joints]
        # the implicit first point: where the joints are now, at rest, at time 0
        first = 0 if trajectory.times[0] > 0 else 1
        self.times = np.concatenate([[0.0], trajectory.times[first:]])
        self.positions = np.vstack([now, trajectory.positions[first:]])
        rest = np.zeros((1, len(joints)))
        self.velocities = (None if trajectory.velocities is None else
                           np.vstack([rest, trajectory.velocities[first:]]))
        self.accelerations = (None if trajectory.accelerations is None else
                              np.vstack([rest, trajectory.accelerations[first:]]))
        self.done = False
        self.outcome: Outcome | None = None
        self.preempted_by: str | None = None  # why another command replaced it, for its goal's result

    def sample(self, t: float) -> np.ndarray:
        """Desired positions of the trajectory's joints `t` seconds after the start."""
        return self.sample_state(t)[0]

    def sample_state(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """Desired positions and velocities `t` seconds after the start: linear, cubic (velocities given)
        or quintic (accelerations too) between points, as JTC interpolates."""
        if t >= self.times[-1]:
            last = self.velocities[-1] if self.velocities is not None else np.zeros(len(self.positions[-1]))
            return self.positions[-1], last
        t = max(t, 0.0)
        i = int(np.searchsorted(self.times, t, side="right")) - 1
        h = self.times[i + 1] - self.times[i]
        q0, q1 = self.positions[i], self.positions[i + 1]
        if self.velocities is None:
            s = (t - self.times[i]) / h
            return q0 + s * (q1 - q0), (q1 - q0) / h
        v0, v1 = self.velocities[i], self.velocities[i + 1]
        if self.accelerations is None:
            a0 = a1 = np.zeros_like(q0)
            c = [q0, v0, (3 * (q1 - q0) - (2 * v0 + v1) * h) / h**2, (2 * (q0 - q1) + (v0 + v1) * h) / h**3,
                 0 * q0, 0 * q0]
        else:
            a0, a1 = self.accelerations[i], self.accelerations[i + 1]
            c = [q0, v0, a0 / 2,
                 (20 * (q1 - q0) - (8 * v1 + 12 * v0) * h - (3 * a0 - a1) * h**2) / (2 * h**3),
                 (30 * (q0 - q1) + (14 * v1 + 16 * v0) * h + (3 * a0 - 2 * a1) * h**2) / (2 * h**4),
                 (12 * (q1 - q0) - 6 * (v1 + v0) * h - (a0 - a1) * h**2) / (2 * h**5)]
        x = t - self.times[i]
        position = c[0] + x * (c[1] + x * (c[2] + x * (c[3] + x * (c[4] + x * c[5]))))
        velocity = c[1] + x * (2 * c[2] + x * (3 * c[3] + x * (4 * c[4] + x * 5 * c[5])))
        return position, velocity

    def __call__(self) -> None:
        world = self.arm.world
        if self.tolerances is not None and self.outcome is None and self._judge(world.time - self.start_time):
            return
        t = world.time + world.timestep - self.start_time  # where the joints should be after this step
        targets = self.arm.position_targets.copy()
        current = self.arm.joint_states()[0]
        targets[np.isnan(targets)] = current[np.isnan(targets)]  # joints in velocity mode hold still
        targets[list(self.trajectory.joints)] = self.sample(t)
        targets = self.arm.limits.clip_position(targets)  # a cubic segment may overshoot a limit between points
        self.arm.command_motors(targets, np.full(len(targets), np.nan))
        if t >= self.times[-1] and (self.tolerances is None or self.outcome is not None):
            self._finish()

    def _finish(self) -> None:
        self.done = True
        self.arm.set_controller(None)  # the last targets stay; nothing left to do each step

    def _judge(self, t: float) -> bool:
        """Check the tolerances `t` s after the start (the state the last step left); True if the
        trajectory ended here: a violation (the joints now held where they are) or the goal reached."""
        if t < 0:  # not started yet (a start stamp in the future)
            return False
        tol, joints = self.tolerances, list(self.trajectory.joints)
        position, velocity, _ = self.arm.joint_states()
        desired, desired_velocity = self.sample_state(t)
        position_error, velocity_error = desired - position[joints], desired_velocity - velocity[joints]
        names = [JOINT_NAMES[j] for j in joints]
        if t < self.times[-1]:
            bad = _outside(position_error, tol.path_position) | _outside(velocity_error, tol.path_velocity)
            if bad.any():
                k = int(np.argmax(bad))
                self._end(PATH_TOLERANCE_VIOLATED, f"path tolerance violated by {names[k]}: position error "
                          f"{position_error[k]:.4g} (tolerance {tol.path_position[k]:g}), velocity error "
                          f"{velocity_error[k]:.4g} (tolerance {tol.path_velocity[k]:g}) {t:.3f} s after the start; "
                          "holding position", hold=position)
                return True
            return False
        bad = _outside(position_error, tol.goal_position) | _outside(velocity_error, tol.goal_velocity)
        if not bad.any():
            self._end(SUCCEEDED, "goal reached")
            return False  # the last targets are set once more by the caller, then it finishes
        late = t - self.times[-1]
        if tol.goal_time > 0 and late > tol.goal_time:
            k = int(np.argmax(bad))
            self._end(GOAL_TOLERANCE_VIOLATED, f"goal tolerance not met {late:.3f} s after the end "
                      f"(goal_time_tolerance {tol.goal_time:g} s): {names[k]} position error {position_error[k]:.4g} "
                      f"(tolerance {tol.goal_position[k]:g}), velocity {-velocity_error[k]:.4g} (tolerance "
                      f"{tol.goal_velocity[k]:g}); holding position", hold=position)
            return True
        return False

    def _end(self, kind: str, message: str, hold: np.ndarray | None = None) -> None:
        self.outcome = Outcome(kind, self.arm.world.time, message)
        if hold is not None:
            targets = self.arm.position_targets.copy()
            targets[np.isnan(targets)] = hold[np.isnan(targets)]
            targets[list(self.trajectory.joints)] = hold[list(self.trajectory.joints)]
            self.arm.command_motors(targets, np.full(len(targets), np.nan))
            self._finish()


def _outside(error: np.ndarray, tolerance: np.ndarray) -> np.ndarray:
    return (tolerance > 0) & (np.abs(error) > tolerance)
