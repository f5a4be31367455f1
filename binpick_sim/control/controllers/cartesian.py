"""Task-space controllers of robosuite's family: operational space control (OSC) and inverse kinematics (IK),
both acting on the grasp target (`panda_grasptarget`)."""
from __future__ import annotations

import math

import numpy as np
from scipy.spatial.transform import Rotation

from .base import Controller, LinearInterpolator, OrientationInterpolator, base_pose, finite, nums2array
from .joint import IMPEDANCE_MODES


def orientation_error(goal: np.ndarray, current: np.ndarray) -> np.ndarray:
    """The rotation (axis * angle, world frame) that turns `current` into `goal` (both 3x3)."""
    return (Rotation.from_matrix(goal) * Rotation.from_matrix(current).inv()).as_rotvec()


class OperationalSpaceController(Controller):
    """OSC: a task-space PD force turned into joint torques through the arm's dynamics.

    Action (fixed): [dx dy dz] or, with control_ori, [dx dy dz ax ay az] (axis-angle); with
    control_delta false, an absolute position [m] (and rotation vector [rad]) in `world` instead.
    Impedance modes as the joint position controller: variable puts [damping ratios x6, kps x6] in
    front, variable_kp [kps x6]. Deltas are scaled to ±output (0.05 m, 0.5 rad by default).
    Torque = J^T Lambda (kp e - kd v) + nullspace pull toward the joints at engagement + gravity
    compensation; with `interpolation: linear` the position moves linearly and the orientation by slerp;
    `uncouple_pos_ori` uses separate position and orientation inertias. (robosuite uncouples by
    default; on this arm that converges several times slower and overshoots, so here it is off.)
    """

    name = "osc"

    def __init__(self, arm, kp=150.0, damping_ratio=1.0, impedance_mode="fixed", kp_limits=(0.0, 300.0),
                 damping_ratio_limits=(0.0, 100.0), control_ori=True, control_delta=True, uncouple_pos_ori=False,
                 position_limits=None, orientation_limits=None, kp_null=10.0, output_max=None, output_min=None,
                 **kwargs):
        if impedance_mode not in IMPEDANCE_MODES:
            raise ValueError(f"impedance_mode must be one of {IMPEDANCE_MODES}, got {impedance_mode!r}")
        self.impedance_mode, self.control_ori, self.control_delta = impedance_mode, control_ori, control_delta
        self.uncouple_pos_ori = uncouple_pos_ori
        self.kp = nums2array(kp, 6)
        self.damping_ratio = nums2array(damping_ratio, 6)
        self.kp_limits, self.damping_ratio_limits = np.asarray(kp_limits, float), np.asarray(damping_ratio_limits, float)
        self.position_limits = None if position_limits is None else np.asarray(position_limits, float)
        self.orientation_limits = None if orientation_limits is None else np.asarray(orientation_limits, float)
        self.kp_null = nums2array(kp_null, 7)
        default_out = np.array([0.05, 0.05, 0.05, 0.5, 0.5, 0.5])[:self.pose_dim]
        super().__init__(arm, output_max=default_out if output_max is None else output_max,
                         output_min=-default_out if output_min is None else output_min, **kwargs)
        self.reset_goal()

    @property
    def pose_dim(self) -> int:
        return 6 if self.control_ori else 3

    @property
    def control_dim(self) -> int:
        return self.pose_dim + {"fixed": 0, "variable": 12, "variable_kp": 6}[self.impedance_mode]

    @property
    def layout(self) -> str:
        return f"{self.name} ({self.impedance_mode}, control_ori={self.control_ori})"

    @property
    def scaled_dim(self) -> int:
        return self.pose_dim

    @property
    def kd(self) -> np.ndarray:
        return 2 * np.sqrt(self.kp) * self.damping_ratio

    def set_goal(self, action, set_pos=None, set_ori=None) -> None:
        action = self.checked(action)
        set_pos = None if set_pos is None else finite(set_pos, "set_pos")
        set_ori = None if set_ori is None else finite(set_ori, "set_ori")
        self.take_gains(action, 6)
        pose = action[-self.pose_dim:]
        if self.control_delta:
            delta = self.scale_action(pose)
            position = self.state.ee_position + delta[:3]
            rotation = (Rotation.from_rotvec(delta[3:]).as_matrix() @ self.state.ee_rotation if self.control_ori
                        else self.goal_rotation)
        else:
            position = pose[:3]
            rotation = Rotation.from_rotvec(pose[3:]).as_matrix() if self.control_ori else self.goal_rotation
        position = position if set_pos is None else set_pos
        rotation = rotation if set_ori is None else set_ori
        if self.position_limits is not None:
            position = self.clip(position, self.position_limits[0], self.position_limits[1])
        # An absolute goal 1e308 m away would make the torques NaN: pulled in to the arm's reach.
        bounded = self.arm.solver.bound(position)
        self.clipped = self.clipped or not np.array_equal(bounded, position)
        position = bounded
        if self.orientation_limits is not None:
            rotvec = self.clip(Rotation.from_matrix(rotation).as_rotvec(), *self.orientation_limits)
            rotation = Rotation.from_rotvec(rotvec).as_matrix()
        self.goal_position, self.goal_rotation = position, rotation
        if self.interpolation:
            self.position_interpolator.set_goal(position)
            self.orientation_interpolator.set_goal(rotation)

    def reset_goal(self) -> None:
        self.goal_position = self.state.ee_position.copy()
        self.goal_rotation = self.state.ee_rotation.copy()
        self.position_interpolator = LinearInterpolator(self.goal_position, self.interpolation_steps)
        self.orientation_interpolator = OrientationInterpolator(self.goal_rotation, self.interpolation_steps)

    def engage(self) -> None:
        """As every controller, and the nullspace posture becomes the joints at engagement (the arm
        may have moved since construction; update_initial_joints changes it afterwards)."""
        super().engage()
        self.initial_joints = self.state.q.copy()

    def run_controller(self) -> np.ndarray:
        s = self.state
        goal = self.position_interpolator.next() if self.interpolation else self.goal_position
        rotation = self.orientation_interpolator.next() if self.interpolation else self.goal_rotation
        error = np.concatenate([goal - s.ee_position, orientation_error(rotation, s.ee_rotation)])
        desired = self.kp * error - self.kd * s.ee_velocity
        m_inv = np.linalg.inv(s.mass_matrix)
        j = s.jacobian
        full = np.linalg.pinv(j @ m_inv @ j.T)
        if self.uncouple_pos_ori:
            force = np.concatenate([np.linalg.pinv(j[:3] @ m_inv @ j[:3].T) @ desired[:3],
                                    np.linalg.pinv(j[3:] @ m_inv @ j[3:].T) @ desired[3:]])
        else:
            force = full @ desired
        torques = j.T @ force
        j_bar = m_inv @ j.T @ full
        nullspace = np.eye(7) - j.T @ j_bar.T
        pull = s.mass_matrix @ (self.kp_null * (self.initial_joints - s.q) - 2 * np.sqrt(self.kp_null) * s.qd)
        return torques + nullspace @ pull


class InverseKinematicsController(Controller):
    """IK: a delta pose of the grasp target solved to joint positions (PyBullet IK on a private copy
    of the arm), then reached with joint impedance.

    Action: [dx dy dz ax ay az] (metres, axis-angle radians, world frame), relative to the grasp
    target's current pose; the position part is clipped to a norm of `ik_pos_limit` and the rotation
    to `ik_ori_limit`. `converge_steps` bounds the IK solver's refinement rounds.

    The solver is the arm's own IK copy (cell/arm/ik.py), shared, until `load_urdf: true`,
    `setup_inverse_kinematics(True)` or `update_base_pose` gives the controller a copy of its own (one
    more PyBullet client; `close()` ends it). robosuite's IK helpers work on that copy: `sync_state`,
    `sync_ik_robot`, `ik_robot_eef_joint_cartesian_pose`, `inverse_kinematics`,
    `joint_positions_for_eef_command`, `get_control`, `bullet_base_pose_to_world_pose`,
    `_clip_ik_input`, `_make_input`, `_get_current_error`."""

    name = "ik"
    VELOCITY_GAIN = 10.0  # seed get_control: joint velocities are 10 x the joint error [1/s]

    def __init__(self, arm, ik_pos_limit=0.05, ik_ori_limit=0.5, converge_steps=5, kp=150.0, damping_ratio=1.0,
                 load_urdf=False, **kwargs):
        self.ik_pos_limit, self.ik_ori_limit = float(ik_pos_limit), float(ik_ori_limit)
        self.solver, self.own_solver = arm.solver, False
        self.base_position = np.asarray(arm.config.base_position, dtype=float)
        self.base_orientation = np.asarray(arm.base_orientation, dtype=float)
        self.ik_target_position = self.ik_target_rotation = None  # robosuite: the IK targets (update_targets)
        self.commanded_joint_positions = None  # seed get_control's target joints
        self.converge_steps = int(converge_steps)
        self.kp = nums2array(kp, 7)
        self.damping_ratio = nums2array(damping_ratio, 7)
        kwargs.setdefault("input_max", np.array([ik_pos_limit] * 3 + [ik_ori_limit] * 3))
        kwargs.setdefault("input_min", -kwargs["input_max"])
        kwargs.setdefault("output_max", kwargs["input_max"])
        kwargs.setdefault("output_min", kwargs["input_min"])
        super().__init__(arm, **kwargs)
        self.reset_goal()
        if load_urdf:
            self.setup_inverse_kinematics(True)

    @property
    def control_dim(self) -> int:
        return 6

    # --- robosuite's IK surface ----------------------------------------------------------------
    def setup_inverse_kinematics(self, load_urdf: bool = True) -> None:
        """Seed: set up IK. `load_urdf`: a copy of the arm of this controller's own (at the base it knows);
        false: share the arm's (robosuite's choice for several controllers of one robot)."""
        if load_urdf and not self.own_solver:
            from ...cell.arm.ik import PandaIK

            shared = self.arm.solver
            self.solver = PandaIK(self.base_position, self.base_orientation, shared.lower, shared.upper, shared.rest,
                                  shared.link, shared.joints, shared.rounds, shared.iterations, shared.posture)
            self.own_solver = True
        elif not load_urdf:
            self.close()

    def close(self) -> None:
        """End this controller's own IK copy, if it has one (it goes back to the arm's)."""
        if self.own_solver:
            self.solver.close()
        self.solver, self.own_solver = self.arm.solver, False

    def update_base_pose(self, base_pos, base_ori) -> None:
        """Seed: the arm's base is now at `base_pos` / `base_ori` (world, xyzw): the controller's own IK
        copy stands there (made now if it had none), so IK answers for the arm where it is."""
        position, orientation = base_pose(base_pos, base_ori)
        self.setup_inverse_kinematics(True)
        self.solver.move_base(position, orientation)
        self.base_position, self.base_orientation = position, orientation

    def sync_ik_robot(self, joint_positions=None, simulate: bool = False, sync_last: bool = True) -> None:
        """Seed: put the IK copy's seven arm joints at `joint_positions` (default: the live arm's).
        `simulate`: drive them there with the copy's motors and step its physics (at most 240 steps)
        instead of setting them; `sync_last` false leaves the copy's last joint as it is."""
        c, body, joints = self.solver.client, self.solver.body, self.solver.joints
        q = np.array([state[0] for state in c.getJointStates(body, joints)])
        target = self.arm.joint_states()[0][:7] if joint_positions is None else finite(joint_positions, "joint_positions")
        if target.shape != (7,):
            raise ValueError(f"joint_positions takes 7 arm joint positions, got {target.size}")
        count = 7 if sync_last else 6
        q[:count] = target[:count]
        if not simulate:
            self.solver._set(q)
            return
        c.setJointMotorControlArray(body, joints, c.POSITION_CONTROL, targetPositions=q.tolist())
        for _ in range(240):
            c.stepSimulation()
            now = np.array([state[0] for state in c.getJointStates(body, joints)])
            if np.abs(now[:count] - q[:count]).max() < 1e-4:
                break

    def sync_state(self) -> None:
        """Seed: the IK copy's joints set to the live arm's."""
        self.sync_ik_robot()

    def ik_robot_eef_joint_cartesian_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """Seed: the pose of the IK copy's last arm joint (panda_link7) in its base frame: (position,
        quaternion x y z w)."""
        c = self.solver.client
        link = c.getLinkState(self.solver.body, self.solver.joints[6], computeForwardKinematics=True)
        inverse = c.invertTransform(self.base_position.tolist(), self.base_orientation.tolist())
        position, orientation = c.multiplyTransforms(*inverse, link[4], link[5])
        return np.array(position), np.array(orientation)

    def bullet_base_pose_to_world_pose(self, pose_in_base) -> tuple[np.ndarray, np.ndarray]:
        """Seed: a (position, quaternion x y z w) in the IK copy's base frame, in the world frame."""
        position, orientation = pose_in_base
        world = self.solver.client.multiplyTransforms(self.base_position.tolist(), self.base_orientation.tolist(),
                                                      list(position), list(orientation))
        return np.array(world[0]), np.array(world[1])

    def inverse_kinematics(self, target_position, target_orientation) -> list[float]:
        """Seed: the 7 arm joint angles that put the grasp target at `target_position` with
        `target_orientation` (xyzw), world frame, solved from the live arm's joints."""
        start = self.arm.joint_states()[0]
        q, self.ik_error = self.solver.solve(start, finite(target_position, "target_position"),
                                             finite(target_orientation, "target_orientation"),
                                             rounds=self.converge_steps)
        return q[:7].tolist()

    def joint_positions_for_eef_command(self, dpos, rotation, update_targets: bool = False) -> list[float]:
        """Seed: the 7 joint angles for the grasp target moved by `dpos` [m] and turned by `rotation`
        (3x3, world frame) from where it is now; `update_targets` keeps that pose as the IK target."""
        self.update()
        dpos, rotation = finite(dpos, "dpos"), finite(rotation, "rotation")
        if dpos.shape != (3,) or rotation.shape != (3, 3):
            raise ValueError(f"dpos takes 3 values and rotation a 3x3 matrix, got {dpos.shape} and {rotation.shape}")
        position = self.state.ee_position + dpos
        turned = rotation @ self.state.ee_rotation
        if update_targets:
            self.ik_target_position, self.ik_target_rotation = position, turned
        return self.inverse_kinematics(position, Rotation.from_matrix(turned).as_quat())

    def get_control(self, dpos=None, rotation=None, update_targets: bool = False) -> np.ndarray:
        """Seed: joint velocities [rad/s] toward the joints for a new end-effector command (`dpos`,
        `rotation`, as joint_positions_for_eef_command), or toward the last one if none is given:
        VELOCITY_GAIN x (target - current)."""
        if dpos is not None or rotation is not None:
            self.commanded_joint_positions = np.array(self.joint_positions_for_eef_command(
                np.zeros(3) if dpos is None else dpos, np.eye(3) if rotation is None else rotation, update_targets))
        elif self.commanded_joint_positions is None:
            self.commanded_joint_positions = self.goal.copy()
        self.update()
        return -self.VELOCITY_GAIN * self._get_current_error(self.state.q, self.commanded_joint_positions)

    @staticmethod
    def _get_current_error(current, set_point) -> np.ndarray:
        """Seed: current - set_point."""
        return np.asarray(current, dtype=float) - np.asarray(set_point, dtype=float)

    def _clip_ik_input(self, dpos, rotation) -> tuple[np.ndarray, np.ndarray]:
        """Seed name of `clip_ik_input`."""
        return self.clip_ik_input(dpos, rotation)

    def _make_input(self, action, old_quat) -> dict:
        """Seed: {"dpos", "rotation"} from an action [dx dy dz ax ay az]: the clipped displacement, and the
        orientation (3x3) after turning `old_quat` (xyzw) by the clipped rotation vector."""
        action = finite(action, "action")
        dpos, rotvec = self.clip_ik_input(action[:3], action[3:6])
        turned = Rotation.from_rotvec(rotvec) * Rotation.from_quat(finite(old_quat, "old_quat"))
        return {"dpos": dpos, "rotation": turned.as_matrix()}

    @property
    def control_limits(self):
        limit = np.array([self.ik_pos_limit] * 3 + [self.ik_ori_limit] * 3)
        return -limit, limit

    def clip_ik_input(self, dpos, rotation) -> tuple[np.ndarray, np.ndarray]:
        """Scale dpos and the rotation vector down to robosuite's norms ik_pos_limit / ik_ori_limit."""
        dpos, rotation = np.asarray(dpos, float), np.asarray(rotation, float)
        for vector, limit in ((dpos, self.ik_pos_limit), (rotation, self.ik_ori_limit)):
            norm = math.hypot(*vector)  # no overflow to inf for 1e308
            if norm > limit:
                vector *= limit / norm
                self.clipped = True
        return dpos, rotation

    def set_goal(self, delta, set_ik=None) -> None:
        """`set_ik` (robosuite: the global goal, which it leaves TODO): [x y z qx qy qz qw], the grasp target's
        position [m] and orientation in the world, overriding `delta` (which is still checked)."""
        delta = self.checked(delta)
        if set_ik is not None:
            pose = finite(set_ik, "set_ik")
            if pose.shape != (7,) or not np.linalg.norm(pose[3:]) > 1e-9:
                raise ValueError(f"set_ik takes a position and a quaternion x y z w (7 values, the quaternion not "
                                 f"zero), got {pose.tolist()}")
            position, orientation = self.arm.solver.bound(pose[:3]), Rotation.from_quat(pose[3:])
            self.clipped = self.clipped or not np.array_equal(position, pose[:3])
        else:
            dpos, rotation = self.clip_ik_input(delta[:3], delta[3:])
            position = self.state.ee_position + dpos
            orientation = Rotation.from_rotvec(rotation) * Rotation.from_matrix(self.state.ee_rotation)
        start = self.arm.joint_states()[0]
        q, self.ik_error = self.solver.solve(start, position, orientation.as_quat(), rounds=self.converge_steps)
        self.goal = q[:7]
        if self.interpolation:
            self.interpolator.set_goal(self.goal)

    def reset_goal(self) -> None:
        self.goal = self.state.q.copy()
        self.ik_error = 0.0
        self.interpolator = LinearInterpolator(self.goal, self.interpolation_steps)

    def run_controller(self) -> np.ndarray:
        goal = self.interpolator.next() if self.interpolation else self.goal
        kd = 2 * np.sqrt(self.kp) * self.damping_ratio
        return self.state.mass_matrix @ (self.kp * (goal - self.state.q) - kd * self.state.qd)
