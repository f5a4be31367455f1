"""What every controller of the robosuite family shares: the arm's state and dynamics read from
PyBullet, input/output scaling with clipping, torque limits, gravity compensation, goal reset, and
policy frequency vs control frequency with optional linear interpolation between policy steps, and the
robosuite's state surface (`update(force=)`, `update_base_pose`, `update_initial_joints`, `actuator_limits`).

A controller acts on the seven arm joints with torques, at the physics rate, with PyBullet's own
joint motors off; the fingers stay on their position motors. Install it with `engage()` (which puts it
in the arm's controller slot); any command on the arm's fixed topics takes over and switches the
motors back on.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation, Slerp

ARM = slice(0, 7)


def nums2array(nums, dim: int) -> np.ndarray:
    """A scalar broadcast to `dim` values, or a sequence as an array (robosuite: `nums2array`)."""
    values = np.asarray(nums, dtype=float)
    return np.full(dim, float(values)) if values.ndim == 0 else values.astype(float)


def finite(values, what: str) -> np.ndarray:
    """`values` as floats, or a ValueError saying that `what` must be finite numbers."""
    values = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{what} must be finite numbers, got {values.tolist()!r}")
    return values


def base_pose(base_pos, base_ori) -> tuple[np.ndarray, np.ndarray]:
    """A base position (3) and unit quaternion x y z w, or a ValueError naming what is wrong."""
    position = finite(base_pos, "base_pos")
    orientation = finite(base_ori, "base_ori")
    if position.shape != (3,) or orientation.shape != (4,) or not np.linalg.norm(orientation) > 1e-9:
        raise ValueError(f"a base pose is a position (3 values) and a quaternion x y z w (4, not all zero), "
                         f"got {position.tolist()} and {orientation.tolist()}")
    return position, orientation / np.linalg.norm(orientation)


@dataclass
class ArmState:
    q: np.ndarray  # 7 joint positions
    qd: np.ndarray  # 7 joint velocities
    ee_position: np.ndarray
    ee_rotation: np.ndarray  # 3x3
    ee_velocity: np.ndarray  # 6: linear, angular
    jacobian: np.ndarray  # 6x7 at the grasp target
    mass_matrix: np.ndarray  # 7x7
    bias: np.ndarray  # 7: gravity + Coriolis torques (inverse dynamics at zero acceleration)


class Controller:
    name = "controller"

    def __init__(self, arm, input_max=1.0, input_min=-1.0, output_max=0.05, output_min=-0.05,
                 policy_freq: float = 20.0, interpolation: str | None = None):
        if interpolation not in (None, "linear"):
            raise ValueError(f"interpolation must be None or 'linear', got {interpolation!r}")
        self.arm = arm
        self.world = arm.world
        dim = self.scaled_dim
        self.input_max, self.input_min = nums2array(input_max, dim), nums2array(input_min, dim)
        self.output_max, self.output_min = nums2array(output_max, dim), nums2array(output_min, dim)
        self.torque_limits = arm.limits.effort[ARM]
        self.policy_freq = float(policy_freq)
        self.interpolation = interpolation
        self.torques = np.zeros(7)
        self.clipped = False  # whether the last action was clipped anywhere (the arm node counts it)
        self.state = self.read_state()
        self.new_update = False  # robosuite: whether `update()` must read the arm again (set after each step)
        self.initial_joints = self.state.q.copy()  # robosuite: the posture a nullspace term pulls toward (OSC)

    # --- what subclasses define ---------------------------------------------------------------
    @property
    def control_dim(self) -> int:
        raise NotImplementedError

    def set_goal(self, action) -> None:
        raise NotImplementedError

    def reset_goal(self) -> None:
        raise NotImplementedError

    def run_controller(self) -> np.ndarray:
        """Torques for this physics step, before gravity compensation and clipping."""
        raise NotImplementedError

    # --- shared -------------------------------------------------------------------------------
    @property
    def scaled_dim(self) -> int:
        """How many action values `scale_action` maps (all of them, unless a controller says otherwise)."""
        return self.control_dim

    @property
    def control_limits(self) -> tuple[np.ndarray, np.ndarray]:
        """Low and high per action value, in the action's order (robosuite: control_limits): with variable
        impedance the damping ratios' and kps' limits first, then the scaled values' input range."""
        mode = getattr(self, "impedance_mode", "fixed")
        gains = self.control_dim - self.scaled_dim
        dof = gains // 2 if mode == "variable" else gains
        low, high = [], []
        if mode == "variable":
            low.append(np.full(dof, self.damping_ratio_limits[0]))
            high.append(np.full(dof, self.damping_ratio_limits[1]))
        if mode in ("variable", "variable_kp"):
            low.append(np.full(dof, self.kp_limits[0]))
            high.append(np.full(dof, self.kp_limits[1]))
        return np.concatenate(low + [self.input_min]), np.concatenate(high + [self.input_max])

    @property
    def control_freq(self) -> float:
        return 1.0 / self.world.timestep

    @property
    def interpolation_steps(self) -> int:
        """Physics steps over which a new goal is reached when interpolating (one policy step)."""
        return max(1, round(self.control_freq / self.policy_freq))

    @property
    def layout(self) -> str:
        """What decides the action's length, for error messages."""
        return self.name

    def checked(self, action) -> np.ndarray:
        """The action as control_dim finite floats, or a ValueError that names the expected layout
        (NaN or inf would poison the goal, and through it the torques: refused before anything changes)."""
        action = np.asarray(action, dtype=float)
        if action.shape != (self.control_dim,):
            raise ValueError(f"{self.layout} takes {self.control_dim} values, got {action.size}")
        finite(action, f"a {self.layout} action")
        self.clipped = False
        self.update()  # the goal is relative to the arm as it is now (robosuite: set_goal updates first)
        return action

    def clip(self, values, low, high) -> np.ndarray:
        """np.clip that remembers in `clipped` whether it changed anything."""
        values = np.asarray(values, dtype=float)
        result = np.clip(values, low, high)
        self.clipped = self.clipped or not np.array_equal(result, values)
        return result

    def take_gains(self, action: np.ndarray, dof: int) -> None:
        """Variable impedance: kp (and damping ratios) from the front of the action, clipped to their limits."""
        if self.impedance_mode == "variable":
            self.damping_ratio = self.clip(action[:dof], *self.damping_ratio_limits)
            self.kp = self.clip(action[dof:2 * dof], *self.kp_limits)
        elif self.impedance_mode == "variable_kp":
            self.kp = self.clip(action[:dof], *self.kp_limits)
            self.damping_ratio = np.ones(dof)

    def scale_action(self, action) -> np.ndarray:
        """Clip to [input_min, input_max], then map that range linearly onto [output_min, output_max]."""
        action = self.clip(action, self.input_min, self.input_max)
        scale = (self.output_max - self.output_min) / (self.input_max - self.input_min)
        return (action - (self.input_max + self.input_min) / 2) * scale + (self.output_max + self.output_min) / 2

    def clip_torques(self, torques) -> np.ndarray:
        return np.clip(torques, -self.torque_limits, self.torque_limits)

    nums2array = staticmethod(nums2array)  # robosuite: Controller.nums2array

    @property
    def actuator_limits(self) -> tuple[np.ndarray, np.ndarray]:
        """(minimum, maximum) torque of each arm joint [N m]: the URDF's effort limits (robosuite: actuator_limits)."""
        return -self.torque_limits, self.torque_limits.copy()

    def update(self, force: bool = False) -> None:
        """Read the arm's state (joints, grasp-target pose and velocity, Jacobian, mass matrix, gravity)
        if the world has stepped since the last read, or whenever `force` is set (robosuite: update(force)).
        Every physics step reads it once; goals set between steps read it at most once more."""
        if force or self.new_update:
            self.state = self.read_state()
            self.new_update = False

    def update_base_pose(self, base_pos, base_ori) -> None:
        """Seed: tell the controller that the arm's base is now at `base_pos` (x y z, world) with
        `base_ori` (quaternion x y z w). The joint-space controllers and OSC read everything from the live
        arm at each step, base included, so for them this only checks the values; the IK controller
        moves its own copy of the arm there (InverseKinematicsController.update_base_pose)."""
        base_pose(base_pos, base_ori)

    def update_initial_joints(self, initial_joints) -> None:
        """The posture a nullspace term pulls toward (robosuite: update_initial_joints; OSC uses it)."""
        joints = finite(initial_joints, "initial_joints")
        if joints.shape != (7,):
            raise ValueError(f"initial_joints takes 7 arm joint positions, got {joints.size}")
        self.initial_joints = joints

    @property
    def torque_compensation(self) -> np.ndarray:
        """Gravity (and Coriolis) torques from PyBullet's inverse dynamics."""
        return self.state.bias

    def read_state(self) -> ArmState:
        arm, c = self.arm, self.world.client
        q9, qd9, _ = arm.joint_states()
        link = c.getLinkState(arm.body, arm.grasp_link, computeLinkVelocity=True, computeForwardKinematics=True)
        zeros = [0.0] * len(q9)
        linear, angular = c.calculateJacobian(arm.body, arm.grasp_link, [0, 0, 0], q9.tolist(), qd9.tolist(), zeros)
        jacobian = np.vstack([np.array(linear)[:, ARM], np.array(angular)[:, ARM]])
        mass = np.array(c.calculateMassMatrix(arm.body, q9.tolist()))[ARM, ARM]
        bias = np.array(c.calculateInverseDynamics(arm.body, q9.tolist(), qd9.tolist(), zeros))[ARM]
        return ArmState(q9[ARM], qd9[ARM], np.array(link[4]), np.array(c.getMatrixFromQuaternion(link[5])).reshape(3, 3),
                        np.concatenate([link[6], link[7]]), jacobian, mass, bias)

    def engage(self) -> None:
        """Switch the arm joints' motors off (torque control) and run this controller every step."""
        self.arm.release_motors(7)
        self.update(force=True)
        self.reset_goal()
        self.arm.set_controller(self.step)

    def step(self) -> None:
        """One physics step of control: read the arm (unless a goal set since the last step read it),
        compute, compensate, clip, apply; the world then steps, so the next `update()` reads again."""
        self.update()
        # nan_to_num: an overflow in the dynamics (huge gains) sends the limit torque, never NaN, to PyBullet
        self.torques = self.clip_torques(np.nan_to_num(self.run_controller() + self.torque_compensation))
        self.arm.command_torques(self.torques)
        self.new_update = True


class LinearInterpolator:
    """Moves a goal from where it is to a new value in equal steps (robosuite: interpolator)."""

    def __init__(self, start, steps: int):
        self.value = np.asarray(start, dtype=float)
        self.target = self.value.copy()
        self.steps = max(1, int(steps))
        self.left = 0

    def set_goal(self, target) -> None:
        self.target = np.asarray(target, dtype=float)
        self.left = self.steps

    def next(self) -> np.ndarray:
        if self.left > 0:
            self.value = self.towards(1.0 / self.left)
            self.left -= 1
        return self.value

    def towards(self, fraction: float) -> np.ndarray:
        """The value `fraction` of the way from the current value to the target."""
        return self.value + (self.target - self.value) * fraction


class OrientationInterpolator(LinearInterpolator):
    """Turns a goal rotation (3x3) to a new one in equal steps of angle: spherical linear
    interpolation (robosuite: the interpolator's orientation mode)."""

    def towards(self, fraction: float) -> np.ndarray:
        return Slerp([0.0, 1.0], Rotation.from_matrix([self.value, self.target]))(fraction).as_matrix()
