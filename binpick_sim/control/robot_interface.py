"""The time-indexed robot interface of TriFinger's robot_interfaces, for the Panda.

A backend runs at the physics rate (1 kHz by default) and, every step t, takes the desired action for
t (or repeats t-1's if none came, counting `action_repetitions`), records the observation *before*
that action acts, turns the desired action into the applied one through the safety checks, and
applies it as joint torques (plus, by default, the torques that hold the arm up against gravity, which
the Panda's own controller adds below its torque interface too). Frontends append actions and read
any of the last 1000 steps by index; asking for a future step blocks until it happens.

Action = torque + PD(position) per joint (9: seven arm joints [N m], two fingers [N]); a NaN
position switches the PD off for that joint, NaN gains mean the defaults; `Action()` is zero torque.
Gains above MAX_KP / MAX_KD (or below 0) are refused; torques are clipped to the torque limits and
position targets to one joint range past the limits by the safety checks, so no finite action can make the world NaN.
"""
from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass, field

import numpy as np

from ..cell.arm.franka import FrankaArm
from ..cell.arm.panda import JOINT_NAMES
from ..cell.loop import PhysicsLoop
from ..config import SimulationConfig
from ..config.parameters import PARAMETERS, ROBOT_INTERFACE_RATE
from .time_series import TimeSeries

_ROBOT_NODE = PARAMETERS["robot"]  # the robot node's parameters: Robot's own defaults are theirs

N = len(JOINT_NAMES)
DEFAULT_KP = np.array([300.0] * 4 + [100.0] * 3 + [1000.0] * 2)
DEFAULT_KD = np.array([10.0] * 4 + [3.0] * 3 + [20.0] * 2)
SAFETY_KD = np.array([0.5] * 4 + [0.1] * 3 + [2.0] * 2)  # velocity damping of the safety checks
# Largest gains an action may ask for: ten times the defaults (libfranka's examples use kp 600 at most).
# Stiffer than this, a 1 kHz step overshoots and the PD itself shakes the arm apart; 1e308 made it NaN.
MAX_KP, MAX_KD = 10 * DEFAULT_KP, 10 * DEFAULT_KD


def _vector(values, fill: float) -> np.ndarray:
    if values is None:
        return np.full(N, fill)
    values = np.asarray(values, dtype=float)
    if values.shape != (N,):
        raise ValueError(f"expected {N} values (7 arm joints, 2 fingers), got {values.size}")
    return values


@dataclass(frozen=True)
class Action:
    torque: np.ndarray = field(default_factory=lambda: np.zeros(N))
    position: np.ndarray = field(default_factory=lambda: np.full(N, np.nan))
    position_kp: np.ndarray = field(default_factory=lambda: np.full(N, np.nan))
    position_kd: np.ndarray = field(default_factory=lambda: np.full(N, np.nan))

    @classmethod
    def make(cls, torque=None, position=None, position_kp=None, position_kd=None) -> "Action":
        """Checked construction: 9 values each; torque finite; NaN allowed where it means "off"/"default"."""
        action = cls(_vector(torque, 0.0), _vector(position, np.nan), _vector(position_kp, np.nan),
                     _vector(position_kd, np.nan))
        if not np.all(np.isfinite(action.torque)):
            raise ValueError("torque must be finite numbers")
        for name in ("position", "position_kp", "position_kd"):
            if np.any(np.isinf(getattr(action, name))):
                raise ValueError(f"{name} must be numbers or NaN, not infinite")
        for name, high in (("position_kp", MAX_KP), ("position_kd", MAX_KD)):
            gains = getattr(action, name)
            bad = ~np.isnan(gains) & ((gains < 0) | (gains > high))
            if bad.any():
                joint = int(np.argmax(bad))
                raise ValueError(f"{name} of {JOINT_NAMES[joint]} must be NaN (default) or in [0, {high[joint]:g}], "
                                 f"got {gains[joint]:.4g}")
        return action

    def as_array(self) -> np.ndarray:
        """[torque, position, position_kp, position_kd], 36 values (the ROS layout)."""
        return np.concatenate([self.torque, self.position, self.position_kp, self.position_kd])

    @classmethod
    def from_array(cls, values) -> "Action":
        values = np.asarray(values, dtype=float)
        if values.shape != (4 * N,):
            raise ValueError(f"an action has {4 * N} values (torque, position, kp, kd x {N}), got {values.size}")
        return cls.make(*values.reshape(4, N))


@dataclass(frozen=True)
class Observation:
    position: np.ndarray  # [rad, m]
    velocity: np.ndarray  # [rad/s, m/s]
    torque: np.ndarray  # applied [N m, N]
    tip_force: np.ndarray  # 2: squeeze force of each finger [N]


NO_ERROR, DRIVER_ERROR, BACKEND_ERROR = 0, 1, 2


@dataclass(frozen=True)
class Status:
    action_repetitions: int = 0
    error_status: int = NO_ERROR
    error_message: str = ""


class RobotBackend:
    """Runs on the physics thread, one time index per physics step, once the first action arrived."""

    def __init__(self, arm: FrankaArm, loop: PhysicsLoop, max_action_repetitions: int = 0,
                 gravity_compensation: bool = True):
        """`gravity_compensation`: add the torques that hold the arm up below the interface, as the
        Panda's own controller does (libfranka's commanded torques exclude gravity)."""
        self.arm, self.loop, self.world = arm, loop, arm.world
        self.gravity_compensation = gravity_compensation
        self.torque_limits = np.concatenate([arm.limits.effort[:7], [arm.config.finger_force] * 2])
        self.max_action_repetitions = max_action_repetitions  # 0: any number
        self.desired, self.applied = TimeSeries(), TimeSeries()
        self.observations, self.status, self.timestamps = TimeSeries(), TimeSeries(), TimeSeries()
        self.pending: dict[int, Action] = {}
        self.lock = threading.Lock()
        self.next_t = 0  # the index the next physics step will have
        self.last_appended = -1
        self.error: Status | None = None
        self.started = False
        self.start_time = 0.0
        # Interface time (timestamp_ms) runs on across a time reset (/clock back to 0): each reset starts a new
        # epoch, counted here, whose steps are stamped on from where the last one stopped (doc/time-indexed.md: the
        # time-indexed robot interface).
        self.time_epoch = 0
        self._epoch_start = 0.0  # world time at the epoch's first step
        self._epoch_base_ms = 0.0  # interface time at the epoch's first step
        self._last_stamp: tuple[float, float] | None = None  # world time and timestamp_ms of the last step
        self.on_step: list = []  # callbacks(t) after each step is recorded (the ROS node publishes there)

    # --- frontends (any thread) ---------------------------------------------------------------
    def append(self, action: Action) -> int:
        with self.lock:
            if self.error is not None:
                raise RuntimeError(f"the robot is in error and takes no more actions: {self.error.error_message}")
            t = max(self.next_t, self.last_appended + 1)
            self.pending[t] = action
            self.last_appended = t
            if not self.started:
                self.started = True
                self.loop.call(self._start)
            return t

    def current(self) -> int:
        return self.observations.newest

    # --- the physics thread -------------------------------------------------------------------
    def _start(self) -> None:
        arm = self.arm
        arm.release_motors()  # torque control
        self.start_time = self._epoch_start = self.world.time
        arm.set_controller(self.step)
        self.loop.lockstep = False  # the world waited for the first action; now it runs

    def step(self) -> None:
        """Before a physics step: action t in, observation t out (taken before the action acts).

        The error is decided and latched under the lock that claims t: an append racing this step
        either lands before it (and counts as t's action) or finds the error and is refused. Once in
        error, every later step reports the error and pushes nothing, whatever was queued before."""
        with self.lock:  # claim index t and its action together, or an append racing us could be lost
            t = self.next_t
            action = self.pending.pop(t, None)
            self.next_t = t + 1
            repetitions = 0
            if action is None or self.error is not None:
                action = self.desired.get(t - 1) if t > 0 else Action()
                previous = self.status.get(t - 1) if t > 0 else Status()
                repetitions = previous.action_repetitions + 1
            if self.error is None and self.max_action_repetitions and repetitions > self.max_action_repetitions:
                self.error = Status(repetitions, BACKEND_ERROR, f"no new action for {repetitions} steps "
                                    f"(max_action_repetitions is {self.max_action_repetitions})")
            error = self.error
        observation = self._observe()
        applied = self.safety_checks(action, observation)
        status = Status(repetitions)
        if error is not None:
            status = dataclasses.replace(error, action_repetitions=repetitions)
            applied = Action(torque=np.zeros(N))  # stop pushing; joints coast
        # The limits bound what the joints get, compensation included; applied is what acts beyond it.
        gravity = self.arm.gravity_torques(observation.position) if self.gravity_compensation else np.zeros(N)
        sent = np.clip(applied.torque + gravity, -self.torque_limits, self.torque_limits)
        self.arm.command_torques(sent)
        applied = dataclasses.replace(applied, torque=sent - gravity)
        self.desired.append(t, action)
        self.applied.append(t, applied)
        self.status.append(t, status)
        self.timestamps.append(t, self._timestamp_ms())
        self.observations.append(t, observation)  # last: a reader waiting for t finds all of it
        for callback in self.on_step:
            callback(t)

    def _timestamp_ms(self) -> float:
        """Sim milliseconds since the first action, never going back: when the world's clock was reset
        (`reset_simulation` with scope TIME or ALL) since the last step, this step opens a new epoch, stamped
        one timestep after the last step of the old one."""
        now = self.world.time
        if self._last_stamp is not None and now <= self._last_stamp[0]:
            self.time_epoch += 1
            self._epoch_start, self._epoch_base_ms = now, self._last_stamp[1] + self.world.timestep * 1000.0
        stamp = self._epoch_base_ms + (now - self._epoch_start) * 1000.0
        self._last_stamp = (now, stamp)
        return stamp

    def _observe(self) -> Observation:
        position, velocity, torque = self.arm.joint_states()
        return Observation(position, velocity, torque, self.arm.finger_forces())

    def safety_checks(self, action: Action, observation: Observation) -> Action:
        """Desired -> applied (robot_interfaces): PD added, then velocity damping, position limits, torque limits."""
        kp = np.where(np.isnan(action.position_kp), DEFAULT_KP, action.position_kp)
        kd = np.where(np.isnan(action.position_kd), DEFAULT_KD, action.position_kd)
        lower, upper = self.arm.limits.lower, self.arm.limits.upper
        span = upper - lower  # a target further than one joint range past a limit pulls as if it were there
        target = np.clip(np.nan_to_num(action.position), lower - span, upper + span)
        pd = np.where(np.isnan(action.position), 0.0, kp * (target - observation.position) - kd * observation.velocity)
        torque = action.torque + pd
        torque = torque - SAFETY_KD * observation.velocity  # velocity damping
        torque = np.where((observation.position >= upper) & (torque > 0), 0.0, torque)  # position limits
        torque = np.where((observation.position <= lower) & (torque < 0), 0.0, torque)
        torque = np.clip(np.nan_to_num(torque), -self.torque_limits, self.torque_limits)  # torque limits
        return Action(torque, action.position, kp, kd)


class RobotFrontend:
    """robot_interfaces' frontend API over a backend: in-process here; the ROS frontend hands it a stand-in
    with the same series, filled from topics, and its own `append`."""

    def __init__(self, backend, timeout: float | None = 30.0):
        self.backend, self.timeout = backend, timeout

    def append_desired_action(self, action: Action) -> int:
        return self.backend.append(action)

    def get_robot_observation(self, t: int) -> Observation:
        return self.backend.observations.get(t, self.timeout)

    def get_desired_action(self, t: int) -> Action:
        return self._after(t, self.backend.desired)

    def get_applied_action(self, t: int) -> Action:
        return self._after(t, self.backend.applied)

    def get_timestamp_ms(self, t: int) -> float:
        return self._after(t, self.backend.timestamps)

    def get_robot_status(self, t: int) -> Status:
        return self._after(t, self.backend.status)

    def get_current_timeindex(self) -> int:
        return self.backend.current()

    def get_camera_observation(self, t: int):
        """The camera frame of time index t, i.e. the first one captured at or after t
        (camera_series.CameraObservation; its `t` says which). Blocks if there is none yet; TimeIndexError
        if t is too old; RuntimeError if this robot records no camera (Robot(camera_rate=...))."""
        series = getattr(self.backend, "camera_series", None)
        if series is None:
            raise RuntimeError("this robot records no camera frames: make it with Robot(camera_rate=...)")
        return series.get(t, self.timeout)

    def wait_until_timeindex(self, t: int) -> None:
        self.backend.observations.wait_for(t, self.timeout)

    def _after(self, t: int, series: TimeSeries):
        self.get_robot_observation(t)  # every series of step t is written by then
        return series.get(t, self.timeout)


class Robot:
    """An in-process robot: the cell at `rate` Hz physics, its backend and a frontend.

        with Robot() as robot:
            t = robot.frontend.append_desired_action(Action())   # zero torque starts the backend
            print(robot.frontend.get_robot_observation(t).position)
    """

    def __init__(self, config=None, rate: float = ROBOT_INTERFACE_RATE,
                 realtime_factor: float = SimulationConfig.realtime_factor, seed: int = 0,
                 max_action_repetitions: int = _ROBOT_NODE["max_action_repetitions"].default,
                 gravity_compensation: bool = _ROBOT_NODE["gravity_compensation"].default,
                 camera_rate: float = _ROBOT_NODE["camera_rate"].default):
        """`camera_rate`: frames per second of sim time of the scene file's camera for
        `get_camera_observation` (at most that: a frame is drawn while the robot runs on); 0: none."""
        if not (np.isfinite(camera_rate) and 0.0 <= camera_rate <= rate):
            raise ValueError(f"camera_rate must be from 0 (no camera) to the physics rate {rate:g} Hz, got {camera_rate}")

        from ..config import load_config, with_changes
        from ..paths import default_config
        from ..cell.bin_picking_sim import BinPickingSim

        config = config or load_config(default_config())
        config = with_changes(config, simulation={"timestep": 1.0 / rate, "realtime_factor": realtime_factor})
        self.sim = BinPickingSim(config)
        self.sim.reset(seed=seed)
        self.loop = PhysicsLoop(self.sim.world, config.simulation.realtime_factor, lockstep=True)  # idle until the first action
        self.backend = RobotBackend(self.sim.arm, self.loop, max_action_repetitions, gravity_compensation)
        self.frontend = RobotFrontend(self.backend)
        if camera_rate > 0:
            from .camera_series import CameraSeries

            self.backend.camera_series = CameraSeries(self.sim, self.backend, round(rate / camera_rate))
            self.backend.on_step.append(self.backend.camera_series.on_step)
        self.loop.start()

    def close(self) -> None:
        self.loop.stop()
        series = getattr(self.backend, "camera_series", None)
        if series is not None:
            series.close()
        self.sim.close()

    def __enter__(self) -> "Robot":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
