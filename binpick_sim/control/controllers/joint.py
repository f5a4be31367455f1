"""Joint-space controllers of robosuite's family: position (impedance), velocity and torque."""
from __future__ import annotations

import numpy as np

from .base import Controller, LinearInterpolator, finite, nums2array

IMPEDANCE_MODES = ("fixed", "variable", "variable_kp")


class JointPositionController(Controller):
    """Impedance control toward a goal set relative to the current joint positions.

    Action (by impedance mode): fixed: [dq x7]; variable: [damping_ratio x7, kp x7, dq x7];
    variable_kp: [kp x7, dq x7] (damping ratio 1, critically damped). dq is scaled from
    [input_min, input_max] to [output_min, output_max] (default ±0.05 rad); kp and damping ratio are
    clipped to their limits. Torque = M (kp (goal - q) - kd qd) + gravity compensation,
    kd = 2 sqrt(kp) damping_ratio.
    """

    name = "joint_position"

    def __init__(self, arm, kp=50.0, damping_ratio=1.0, impedance_mode="fixed", kp_limits=(0.0, 300.0),
                 damping_ratio_limits=(0.0, 100.0), qpos_limits=None, **kwargs):
        if impedance_mode not in IMPEDANCE_MODES:
            raise ValueError(f"impedance_mode must be one of {IMPEDANCE_MODES}, got {impedance_mode!r}")
        self.impedance_mode = impedance_mode
        self.kp = nums2array(kp, 7)
        self.damping_ratio = nums2array(damping_ratio, 7)
        self.kp_limits = np.asarray(kp_limits, dtype=float)
        self.damping_ratio_limits = np.asarray(damping_ratio_limits, dtype=float)
        self.qpos_limits = None if qpos_limits is None else np.asarray(qpos_limits, dtype=float)
        super().__init__(arm, **kwargs)
        self.goal = self.state.q.copy()
        self.interpolator = LinearInterpolator(self.goal, self.interpolation_steps) if self.interpolation else None

    @property
    def control_dim(self) -> int:
        return {"fixed": 7, "variable": 21, "variable_kp": 14}[self.impedance_mode]

    @property
    def layout(self) -> str:
        return f"{self.name} ({self.impedance_mode})"

    @property
    def kd(self) -> np.ndarray:
        return 2 * np.sqrt(self.kp) * self.damping_ratio

    @property
    def scaled_dim(self) -> int:
        return 7  # only the joint deltas are scaled; gains are clipped to their limits

    def set_goal(self, action, set_qpos=None) -> None:
        action = self.checked(action)
        if set_qpos is not None:
            set_qpos = finite(set_qpos, "set_qpos")
        self.take_gains(action, 7)
        delta = self.scale_action(action[-7:])
        goal = set_qpos if set_qpos is not None else self.state.q + delta
        if self.qpos_limits is not None:
            goal = self.clip(goal, self.qpos_limits[0], self.qpos_limits[1])
        self.goal = self.clip(goal, self.arm.limits.lower[:7], self.arm.limits.upper[:7])
        if self.interpolator is not None:
            self.interpolator.set_goal(self.goal)

    def reset_goal(self) -> None:
        self.goal = self.state.q.copy()
        if self.interpolator is not None:
            self.interpolator = LinearInterpolator(self.goal, self.interpolation_steps)

    def run_controller(self) -> np.ndarray:
        goal = self.interpolator.next() if self.interpolator is not None else self.goal
        acceleration = self.kp * (goal - self.state.q) - self.kd * self.state.qd
        return self.state.mass_matrix @ acceleration


VELOCITY_LAWS = ("mass_weighted", "robosuite")
VELOCITY_KP = {"mass_weighted": 30.0, "robosuite": 0.25}  # each law's default kp


class _DefaultKp(float):
    """The kp a caller did not give: a number (so the scene file's `kp: high` is refused at load, as for
    every numeric option), and recognisably the default, so that the law picks its own."""


class JointVelocityController(Controller):
    """Control on joint velocity, by one of two laws (`law`):

    - `mass_weighted` (the default): torque = M kp (v_goal - v) + gravity compensation, kp 30 [1/s];
    - `robosuite` (robosuite's own): torque = kp e + ki sum(e) + kd mean(de over 5 steps) + gravity
      compensation, e = v_goal - v, kp 0.25 by default, a single kp multiplied by each joint's actuator
      range (2 x its effort limit: 43.5 N m s/rad on the Panda's big joints, 6 on the wrist), ki 0.005 kp,
      kd 0.001 kp, the sum frozen while the torques are clipped (anti-windup).

    The default differs from robosuite's because robosuite's law shakes the wrist at this cell's 240 Hz
    physics (a gain of 6 N m s/rad on a link of about 0.01 kg m^2 overshoots in one 4 ms step; robosuite
    steps at 500 Hz with armature on the joints), while it tracks at 1 kHz (test/control/test_controllers.py shows
    both); weighting by the mass matrix gives every joint the same response time, 1/kp.

    Action: [v x7], absolute joint velocities, scaled from [input_min, input_max] to
    [output_min, output_max] (default ±1 rad/s), then clipped to `velocity_limits` (default the
    URDF's) [rad/s]."""

    name = "joint_velocity"

    def __init__(self, arm, kp=_DefaultKp(VELOCITY_KP["mass_weighted"]), velocity_limits=None, output_max=1.0,
                 output_min=-1.0, law="mass_weighted", **kwargs):
        if law not in VELOCITY_LAWS:
            raise ValueError(f"law must be one of {VELOCITY_LAWS}, got {law!r}")
        self.law = law
        robosuite = law == "robosuite"
        kp = VELOCITY_KP[law] if isinstance(kp, _DefaultKp) else kp
        try:
            scalar, self.kp = np.ndim(kp) == 0, finite(nums2array(kp, 7), "kp")
        except (TypeError, ValueError):
            raise ValueError(f"kp must be a finite number or 7 of them, got {kp!r}") from None
        if self.kp.shape != (7,):
            raise ValueError(f"kp must be a finite number or 7 of them, got {kp!r}")
        if robosuite:
            if scalar:  # robosuite: a single kp is scaled by how wide each joint's actuator range is
                self.kp = self.kp * 2 * arm.limits.effort[:7]
            self.ki, self.kd = 0.005 * self.kp, 0.001 * self.kp
        self.summed_error, self.last_error = np.zeros(7), np.zeros(7)
        self.error_changes: list[np.ndarray] = []  # the last 5 (robosuite: RingBuffer of length 5)
        self.saturated = False
        limit = arm.limits.velocity[:7]
        self.velocity_limits = (np.asarray(velocity_limits, dtype=float) if velocity_limits is not None
                                else np.array([-limit, limit]))
        super().__init__(arm, output_max=output_max, output_min=output_min, **kwargs)
        self.goal = np.zeros(7)
        self.interpolator = LinearInterpolator(self.goal, self.interpolation_steps) if self.interpolation else None

    @property
    def control_dim(self) -> int:
        return 7

    def set_goal(self, velocities) -> None:
        velocities = self.checked(velocities)
        self.goal = self.clip(self.scale_action(velocities), self.velocity_limits[0], self.velocity_limits[1])
        if self.interpolator is not None:
            self.interpolator.set_goal(self.goal)

    def reset_goal(self) -> None:
        self.goal = np.zeros(7)
        self.summed_error, self.last_error, self.error_changes = np.zeros(7), np.zeros(7), []
        if self.interpolator is not None:
            self.interpolator = LinearInterpolator(self.state.qd, self.interpolation_steps)

    def run_controller(self) -> np.ndarray:
        goal = self.interpolator.next() if self.interpolator is not None else self.goal
        error = goal - self.state.qd
        if self.law == "mass_weighted":
            return self.state.mass_matrix @ (self.kp * error)
        self.error_changes = (self.error_changes + [error - self.last_error])[-5:]
        self.last_error = error
        if not self.saturated:
            self.summed_error = self.summed_error + error
        torques = self.kp * error + self.ki * self.summed_error + self.kd * np.mean(self.error_changes, axis=0)
        full = torques + self.torque_compensation
        self.saturated = not np.array_equal(self.clip_torques(full), full)
        return torques


class JointTorqueController(Controller):
    """Torques passed through: action [tau x7] scaled from [input_min, input_max] to
    [output_min, output_max] (robosuite's default ±0.05 N m; pass the effort limits, e.g.
    `output_max: [87, 87, 87, 87, 12, 12, 12]`, for the arm's whole range), the goal clipped to
    `torque_limits` ([low, high], each a number or 7; default none beyond the effort limits), plus
    gravity compensation."""

    name = "joint_torque"

    def __init__(self, arm, output_max=0.05, output_min=-0.05, torque_limits=None, **kwargs):
        self.goal_torque_limits = None
        if torque_limits is not None:
            try:
                low, high = (nums2array(bound, 7) for bound in torque_limits)
            except (TypeError, ValueError):
                raise ValueError(f"torque_limits must be [low, high] (numbers or 7 each), got {torque_limits!r}") from None
            if low.shape != (7,) or high.shape != (7,) or not np.all(low <= high) or np.isnan(low + high).any():
                raise ValueError(f"torque_limits must be [low, high] with low <= high, 7 or one each, got {torque_limits!r}")
            self.goal_torque_limits = (low, high)
        super().__init__(arm, output_max=output_max, output_min=output_min, **kwargs)
        self.goal = np.zeros(7)
        self.interpolator = LinearInterpolator(self.goal, self.interpolation_steps) if self.interpolation else None

    @property
    def control_dim(self) -> int:
        return 7

    def set_goal(self, torques) -> None:
        torques = self.checked(torques)
        self.goal = self.scale_action(torques)
        if self.goal_torque_limits is not None:
            self.goal = self.clip(self.goal, *self.goal_torque_limits)
        if self.interpolator is not None:
            self.interpolator.set_goal(self.goal)

    def reset_goal(self) -> None:
        self.goal = np.zeros(7)
        if self.interpolator is not None:
            self.interpolator = LinearInterpolator(self.goal, self.interpolation_steps)

    def run_controller(self) -> np.ndarray:
        return self.interpolator.next() if self.interpolator is not None else self.goal
