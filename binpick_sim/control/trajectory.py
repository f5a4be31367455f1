"""Time-parameterised joint trajectories, followed at the physics rate as ros2_control's joint
trajectory controller does: from where the joints are now to each point at its time_from_start,
linearly between positions-only points, with cubic Hermite segments when velocities are given.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..cell.arm import JOINT_NAMES, FrankaArm, check_joint_names


class BadTrajectory(ValueError):
    """A trajectory that cannot be followed; the message says why."""


@dataclass(frozen=True)
class Trajectory:
    joints: tuple[int, ...]  # indices into the arm's 9 joints
    times: np.ndarray  # (K,) seconds after the start, strictly increasing
    positions: np.ndarray  # (K, J)
    velocities: np.ndarray | None  # (K, J), or None for positions only

    @classmethod
    def parse(cls, names, times, positions, velocities, lower, upper, velocity_limits=None) -> "Trajectory":
        """Check a trajectory as a planner sends it; BadTrajectory says what is wrong.

        With `velocity_limits` (the 9 joints' [rad/s | m/s]), a point's velocity above its joint's limit
        is refused: the cubic segments through such a velocity swing far off the path (100 rad/s on a
        1 s trajectory: 2.6 rad) and 1e308 turned every joint target NaN."""
        names = check_joint_names(names, BadTrajectory)
        if not len(times):
            raise BadTrajectory("no points")
        joints = tuple(JOINT_NAMES.index(n) for n in names)
        try:
            q = np.array([list(p) for p in positions], dtype=float).reshape(len(times), len(names))
        except ValueError:
            raise BadTrajectory(f"every point needs {len(names)} positions") from None
        v = None
        if any(len(p) for p in velocities):
            try:
                v = np.array([list(p) for p in velocities], dtype=float).reshape(len(times), len(names))
            except ValueError:
                raise BadTrajectory(f"velocities: every point needs {len(names)} or none at all") from None
        t = np.asarray(times, dtype=float)
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(t)) and (v is None or np.all(np.isfinite(v)))):
            raise BadTrajectory("positions, velocities and times must be finite numbers")
        if t[0] < 0 or np.any(np.diff(t) <= 0):
            raise BadTrajectory("time_from_start must start at >= 0 and increase strictly from point to point")
        low, high = np.asarray(lower)[list(joints)], np.asarray(upper)[list(joints)]
        outside = np.argwhere((q < low - 1e-9) | (q > high + 1e-9))
        if len(outside):
            point, joint = outside[0]
            raise BadTrajectory(f"point {point}: {names[joint]} = {q[point, joint]:.4f} is outside its limits "
                                f"[{low[joint]:.4f}, {high[joint]:.4f}]")
        if v is not None and velocity_limits is not None:
            limit = np.asarray(velocity_limits)[list(joints)]
            fast = np.argwhere(np.abs(v) > limit + 1e-9)
            if len(fast):
                point, joint = fast[0]
                raise BadTrajectory(f"point {point}: {names[joint]} velocity {v[point, joint]:.4g} is above its "
                                    f"limit {limit[joint]:.4f}")
        return cls(joints, t, q, v)

    @property
    def duration(self) -> float:
        return float(self.times[-1])


class TrajectoryFollower:
    """Installed as the arm's controller: sets the trajectory's joints' position targets every step."""

    def __init__(self, arm: FrankaArm, trajectory: Trajectory, start_time: float):
        self.arm, self.trajectory, self.start_time = arm, trajectory, start_time
        joints = list(trajectory.joints)
        now = arm.joint_states()[0][joints]
        # the implicit first point: where the joints are now, at rest, at time 0
        first = 0 if trajectory.times[0] > 0 else 1
        self.times = np.concatenate([[0.0], trajectory.times[first:]])
        self.positions = np.vstack([now, trajectory.positions[first:]])
        self.velocities = (None if trajectory.velocities is None else
                           np.vstack([np.zeros(len(joints)), trajectory.velocities[first:]]))
        self.done = False

    def sample(self, t: float) -> np.ndarray:
        """Desired positions of the trajectory's joints `t` seconds after the start."""
        if t >= self.times[-1]:
            return self.positions[-1]
        t = max(t, 0.0)
        i = int(np.searchsorted(self.times, t, side="right")) - 1
        t0, t1 = self.times[i], self.times[i + 1]
        q0, q1 = self.positions[i], self.positions[i + 1]
        s = (t - t0) / (t1 - t0)
        if self.velocities is None:
            return q0 + s * (q1 - q0)
        h = t1 - t0
        v0, v1 = self.velocities[i] * h, self.velocities[i + 1] * h
        return ((2 * s**3 - 3 * s**2 + 1) * q0 + (s**3 - 2 * s**2 + s) * v0
                + (-2 * s**3 + 3 * s**2) * q1 + (s**3 - s**2) * v1)

    def __call__(self) -> None:
        world = self.arm.world
        t = world.time + world.timestep - self.start_time  # where the joints should be after this step
        targets = self.arm.position_targets.copy()
        current = self.arm.joint_states()[0]
        targets[np.isnan(targets)] = current[np.isnan(targets)]  # joints in velocity mode hold still
        targets[list(self.trajectory.joints)] = self.sample(t)
        targets = self.arm.limits.clip_position(targets)  # a cubic segment may overshoot a limit between points
        self.arm.command_motors(targets, np.full(len(targets), np.nan))
        if t >= self.times[-1]:
            self.done = True
            self.arm.set_controller(None)  # the last targets stay; nothing left to do each step
