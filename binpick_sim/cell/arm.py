"""The Franka Panda of the seed's FrankaArm: joint position, joint velocity and top-down delta actions.

Two ways to act: `set_*_targets` only hands targets to PyBullet's motors (the ROS node does this and
lets its physics loop move the arm), while `move_to` / `apply_velocity` / `apply_delta` also step the
world as the seed does (until the target is reached or `max_steps`, or one step for velocities).
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..config import ArmConfig
from .ik import PandaIK, clip
from .panda import (ACCELERATION_LIMITS, ARM_JOINT_NAMES, FINGER_JOINT_NAMES, FINGER_LINKS,  # noqa: F401
                    GRASP_TARGET_LINK, JOINT_NAMES, PANDA_URDF, JointLimits, check_joint_names,
                    urdf_joint_limits)  # (F401: names still imported from here by their old path)
from .scene import Bin
from .world import World

TOP_DOWN_ROLL = np.pi  # grasp-target z axis points at the floor
SHAKE_HEIGHT = 0.03  # metres up and back down when verifying a grasp
FINGER_STOPPED = 1e-3  # m/s; below this for 10 steps in a row the gripper has finished moving
FLOOR_CLEARANCE = 0.002  # metres between the fingertips and the bin floor at the workspace's bottom
_NO_TARGETS = np.full(len(JOINT_NAMES), np.nan)  # the other mode's half of a motor command (never written to)
_NO_TARGETS.flags.writeable = False


class FrankaArm:
    def __init__(self, world: World, config: ArmConfig, workspace: Bin | None = None, drawn: bool = True):
        """`drawn=False`: loaded without visual meshes, for a world nothing renders."""
        self.world = world
        self.drawn = drawn
        self.config = config
        self.workspace = workspace
        c = world.client
        orientation = self.base_orientation = c.getQuaternionFromEuler(np.radians(config.base_orientation_deg))
        self._load_body()
        self.link_index = {c.getJointInfo(self.body, j)[12].decode(): j for j in range(c.getNumJoints(self.body))}
        by_joint = {c.getJointInfo(self.body, j)[1].decode(): j for j in range(c.getNumJoints(self.body))}
        self.joints = [by_joint[name] for name in JOINT_NAMES]
        self.finger_joints = self.joints[7:]
        self.grasp_link = self.link_index[GRASP_TARGET_LINK]
        self.finger_links = [self.link_index[name] for name in FINGER_LINKS]
        self._set_up_body()
        infos = [c.getJointInfo(self.body, j) for j in self.joints]
        self.limits = JointLimits(lower=np.array([i[8] for i in infos]), upper=np.array([i[9] for i in infos]),
                                  effort=np.array([i[10] for i in infos]), velocity=np.array([i[11] for i in infos]))
        self.home = self.limits.clip_position(config.home)
        # What every motor command passes, as plain floats (computed once: the limits are fixed).
        self._motor_forces = self.limits.effort.tolist()
        self._motor_forces[7:] = [float(config.finger_force)] * (len(self.joints) - 7)
        self._max_velocities = self.limits.velocity.tolist()
        self.solver = PandaIK(config.base_position, orientation, self.limits.lower, self.limits.upper,
                              self.home, self.grasp_link, self.joints,
                              rounds=config.ik_rounds, iterations=config.ik_iterations,
                              posture=config.ik_posture)
        self.controller: Callable[[], None] | None = None
        # Torques sent to joints whose motors are off (torque control); NaN where a motor drives the joint.
        self.torque_commands = np.full(len(self.joints), np.nan)
        self._torqued = False  # whether any joint is under torque control (torque_commands not all NaN)
        self._held = False  # whether every joint has a position target (command_motors)
        self.delta_clipped = False  # whether the last delta target was moved into the workspace / reach
        self.reset()
        self.tip_offset = self._measure_tip_offset()
        self._workspace_bounds: tuple[np.ndarray, np.ndarray] | None = None

    def _load_body(self) -> None:
        c = self.world.client
        self_collision = c.URDF_USE_SELF_COLLISION | c.URDF_USE_SELF_COLLISION_EXCLUDE_ALL_PARENTS
        flags = (self_collision if self.config.self_collision else 0) | (0 if self.drawn else c.URDF_IGNORE_VISUAL_SHAPES)
        self.body = c.loadURDF(PANDA_URDF, self.config.base_position, self.base_orientation,
                               useFixedBase=True, flags=flags)
        # Per joint: whether its motor's velocity clamp is known to be the joint's limit (command_motors).
        self._clamped = [False] * len(JOINT_NAMES)

    def _set_up_body(self) -> None:
        c = self.world.client
        for link in self.finger_links:
            c.changeDynamics(self.body, link, lateralFriction=1.0, spinningFriction=0.001)
        if self.config.finger_gear:
            # The real hand's fingers are mechanically coupled; a gear constraint makes them close
            # symmetrically instead of one finger pushing the object into the other.
            gear = c.createConstraint(self.body, self.finger_joints[0], self.body, self.finger_joints[1],
                                      c.JOINT_GEAR, [1, 0, 0], [0, 0, 0], [0, 0, 0])
            c.changeConstraint(gear, gearRatio=-1, erp=0.1, maxForce=50)
        if self.config.finger_force_sensors:  # off is PyBullet's default (turning off a missing one warns)
            for j in self.finger_joints:
                c.enableJointForceTorqueSensor(self.body, j, True)

    def reload(self) -> None:
        """Load the arm's body again into a world just rebuilt (World.rebuild), under the id of its
        construction when loaded in the same order; `reset` then puts it home."""
        self._load_body()
        self._set_up_body()

    def _reload_if_poisoned(self) -> None:
        """A NaN that once reached PyBullet (a NaN torque) stays in the body for good: resetting its joints
        and base leaves its motors dead. Such an arm is removed and loaded again, under the same body id
        (PyBullet hands a freed id out again first; the camera and the reasoner keep it)."""
        c = self.world.client
        base = np.concatenate(c.getBasePositionAndOrientation(self.body))
        if np.all(np.isfinite(base)) and all(np.isfinite(self.joint_states()[k]).all() for k in (0, 1)):
            return
        old = self.body
        c.removeBody(old)
        self._load_body()
        if self.body != old:
            raise RuntimeError(f"the reloaded arm got body id {self.body}, not {old}")
        self._set_up_body()

    def _measure_tip_offset(self) -> float:
        """Height of the grasp target above the fingertips' lowest point, with the gripper pointing down
        (the seed's "tip offset"), measured as the fingers' distance to a plane through the world origin."""
        c = self.world.client
        plane = c.createCollisionShape(c.GEOM_PLANE)
        lowest = min(point[8] for link in self.finger_links
                     for point in c.getClosestPoints(bodyA=self.body, bodyB=-1, distance=10.0, linkIndexA=link,
                                                     collisionShapeB=plane))
        return float(self.ee_pose()[0][2] - lowest)

    # --- who commands the arm ------------------------------------------------------------------
    def set_controller(self, controller: Callable[[], None] | None) -> None:
        """Run `controller()` before every physics step until replaced or cleared with None.

        Anything that must act at the physics rate (a trajectory being followed, a torque controller)
        installs itself here; installing another one, or clearing it, stops the previous one, the way a
        new command replaces the running one on a real arm. The world runs the arm's step hook only
        while a controller is installed (motor targets alone need nothing per step).
        """
        if controller is not None and self.controller is None:
            self.world.add_step_hooks(before=self._run_controller)
        elif controller is None and self.controller is not None:
            self.world.remove_step_hooks(before=self._run_controller)
        self.controller = controller

    def _run_controller(self) -> None:
        if self.controller is not None:
            self.controller()

    # --- state --------------------------------------------------------------------------------
    def reset(self) -> None:
        """Teleport to the home pose, at rest, with the motors holding it and the gripper open.
        Any running controller is stopped; an arm made NaN is rebuilt first."""
        self.set_controller(None)
        self._reload_if_poisoned()
        for j, q in zip(self.joints, self.home):
            self.world.client.resetJointState(self.body, j, q, 0.0)
        self.gripper_open = True  # seed: reset leaves the gripper open
        self.delta_clipped = False
        self.set_finger_force(None)
        self.set_position_targets(self.home)

    def set_finger_force(self, force: float | None) -> None:
        """Each finger motor's force limit [N] for this and every later command until reset (None: the scene
        file's `finger_force`): how hard the fingers squeeze what they close on (GripperCommand's max_effort)."""
        value = float(self.config.finger_force if force is None else force)
        self._motor_forces[7:] = [value] * (len(self.joints) - 7)

    def joint_states(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Positions [rad | m], velocities [rad/s | m/s], applied efforts [Nm | N] of the 9 joints.

        The effort of a torque-controlled joint is the torque sent for the last step (PyBullet reports
        only its motors' torques: under torque control its figure is the last motor's, frozen)."""
        position, velocity, _, effort = zip(*self.world.client.getJointStates(self.body, self.joints))
        effort = np.array(effort)
        if self._torqued:
            effort = np.where(np.isnan(self.torque_commands), effort, self.torque_commands)
        return np.array(position), np.array(velocity), effort

    def joint_positions(self) -> np.ndarray:
        """The 9 joint positions alone (`joint_states()[0]`, for less)."""
        return np.array([s[0] for s in self.world.client.getJointStates(self.body, self.joints)])

    def gravity_torques(self, positions) -> np.ndarray:
        """Torques [Nm | N] that hold the 9 joints still at `positions` (inverse dynamics at rest)."""
        zeros = [0.0] * len(self.joints)
        return np.array(self.world.client.calculateInverseDynamics(self.body, list(map(float, positions)),
                                                                   zeros, zeros))

    def ee_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """World position and xyzw quaternion of the grasp target (between the fingertips)."""
        state = self.world.client.getLinkState(self.body, self.grasp_link, computeForwardKinematics=True)
        return np.array(state[4]), np.array(state[5])

    def ee_yaw(self) -> float:
        _, quat = self.ee_pose()
        return float(self.world.client.getEulerFromQuaternion(quat)[2])

    def get_position_velocity_state(self) -> np.ndarray:
        """Seed FrankaArm: 18 values, the 7 joint angles, the 2 finger positions, then their 9 velocities."""
        position, velocity, _ = self.joint_states()
        return np.concatenate([position, velocity])

    def get_gripper_state(self) -> tuple[np.ndarray, np.ndarray]:
        """Seed FrankaArm: the grasp target's world position and its orientation as Euler angles
        (roll, pitch, yaw [rad], PyBullet's convention, as `getEulerFromQuaternion` gives them)."""
        position, orientation = self.ee_pose()
        return position, np.array(self.world.client.getEulerFromQuaternion(orientation.tolist()))

    # --- the seed FrankaArm's class variables, from this arm's scene file and URDF ---------------------
    @property
    def max_gripper_force(self) -> float:
        """N each finger's motor may push with (`arm.finger_force`; the seed's is 80, see the README's
        "Choices made where the reference is silent")."""
        return float(self.config.finger_force)

    @property
    def max_steps(self) -> int:
        """Physics steps a position action may take at most (`arm.max_steps`)."""
        return self.config.max_steps

    @property
    def acceptable_proximity_to_target(self) -> float:
        """rad (m for fingers) within which a joint counts as at its target (`arm.position_tolerance`)."""
        return self.config.position_tolerance

    acceptable_gripper_proximity_to_target = acceptable_proximity_to_target  # the fingers use the same

    @property
    def end_effector_indices(self) -> list[int]:
        """PyBullet joint indices of the two fingers."""
        return list(self.finger_joints)

    @property
    def gripper_index(self) -> int:
        """PyBullet link index of the grasp target (panda_grasptarget)."""
        return self.grasp_link

    @property
    def revolute_joints(self) -> list[int]:
        """PyBullet joint indices of the seven arm joints."""
        return list(self.joints[:7])

    def target_reached(self) -> bool:
        """Whether the arm is where its position targets say (the seed's "until reached" of a position or
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

    def finger_wrenches(self) -> np.ndarray:
        """2 x 6 reaction wrenches [Fx Fy Fz Mx My Mz] of the finger joints, in each joint's frame."""
        states = self.world.client.getJointStates(self.body, self.finger_joints)
        return np.array([s[2] for s in states])

    def finger_forces(self) -> np.ndarray:
        """Squeeze force of each finger [N]: the magnitude of its joint's reaction force.

        (The seed reads the z component; in PyBullet's frame for these joints the squeeze shows up on x,
        so the magnitude is the reading that means the same thing.)
        """
        return np.linalg.norm(self.finger_wrenches()[:, :3], axis=1)

    # --- torque control (no stepping) ---------------------------------------------------------
    def release_motors(self, count: int = len(JOINT_NAMES)) -> None:
        """Switch the first `count` joints' motors off (zero-force velocity motors) for torque control."""
        c = self.world.client
        c.setJointMotorControlArray(self.body, self.joints[:count], c.VELOCITY_CONTROL, forces=[0.0] * count)
        self._clamped[:count] = [False] * count  # a velocity command lifts the clamp
        self.torque_commands[:count] = 0.0
        self._torqued = True

    def command_torques(self, torques) -> None:
        """Torques [Nm | N] for the first len(torques) joints during the next step, used as given (clip
        them first; release the motors first). Recorded: `joint_states` reports them as the effort."""
        torques = np.asarray(torques, dtype=float)
        c = self.world.client
        c.setJointMotorControlArray(self.body, self.joints[:len(torques)], c.TORQUE_CONTROL, forces=torques.tolist())
        self._clamped[:len(torques)] = [False] * len(torques)  # known only while position-controlled
        self.torque_commands[:len(torques)] = torques
        self._torqued = True

    # --- motor targets (no stepping) ----------------------------------------------------------
    def set_position_targets(self, q) -> np.ndarray:
        """Hand 9 position targets to the motors, clipped to the joint limits; returns what was set."""
        q = self.limits.clip_position(np.asarray(q, dtype=float))
        self.command_motors(q, _NO_TARGETS)
        return q

    def set_velocity_targets(self, v) -> np.ndarray:
        """Hand 9 velocity targets to the motors, clipped to the velocity limits; returns what was set."""
        v = self.limits.clip_velocity(np.asarray(v, dtype=float))
        self.command_motors(_NO_TARGETS, v)
        return v

    def command_motors(self, positions, velocities) -> None:
        """Per joint: a position target (where `positions` is a number) or a velocity target (where only
        `velocities` is); values are used as given, so clip them first. This pair is the whole motor
        state: `targets` and `velocity_targets` report it back.

        At most one `setJointMotorControlArray` per mode instead of a call per joint. That call cannot
        set a motor's velocity clamp (`maxVelocity`), which PyBullet keeps per motor until a velocity
        command lifts it: a joint whose clamp is not known to be its velocity limit (first position
        target, or after a velocity or torque command, or a reloaded body) gets its own
        `setJointMotorControl2` with `maxVelocity` first, so every motor ends in the same state as
        with nine `setJointMotorControl2` calls."""
        c = self.world.client
        # Plain floats: numpy scalars cost a microsecond per test or argument, and this runs every step.
        position_list = np.asarray(positions, dtype=float).tolist()
        # every joint on a position target (`targets` is not None): NaN is the only non-finite one can have
        self._held = not any(map(math.isnan, position_list))
        if all(self._clamped) and all(map(math.isfinite, position_list)):
            # The usual case: every joint held at a position target, every clamp already set.
            c.setJointMotorControlArray(self.body, self.joints, c.POSITION_CONTROL, targetPositions=position_list,
                                        forces=self._motor_forces)
        elif not any(map(math.isfinite, position_list)):  # every joint on a velocity target: one call
            c.setJointMotorControlArray(self.body, self.joints, c.VELOCITY_CONTROL,
                                        targetVelocities=np.asarray(velocities, dtype=float).tolist(),
                                        forces=self._motor_forces)
            self._clamped[:] = [False] * len(self.joints)  # a velocity command lifts the clamp
        else:
            self._command_each(position_list, np.asarray(velocities, dtype=float).tolist())
        if self._torqued:  # (otherwise torque_commands are all NaN already)
            self.torque_commands[:] = np.nan
            self._torqued = False
        self.position_targets = np.array(positions, dtype=float)
        if velocities is _NO_TARGETS:  # set_position_targets: no joint on a velocity target
            self.velocity_targets = _NO_TARGETS  # shared and read-only: readers copy it (arm node, reasoner)
        else:
            self.velocity_targets = np.where(np.isfinite(self.position_targets), np.nan, velocities)

    def _command_each(self, positions: list[float], velocities: list[float]) -> None:
        """command_motors for a mix of modes or unknown clamps: setJointMotorControl2 with maxVelocity
        where a position-controlled joint's clamp is not known set, one array call per mode for the rest."""
        c = self.world.client
        forces, clamped, joints = self._motor_forces, self._clamped, self.joints
        held, held_targets, held_forces = [], [], []
        moving, moving_targets, moving_forces = [], [], []
        for i, target in enumerate(positions):
            if math.isfinite(target):
                if clamped[i]:
                    held.append(joints[i])
                    held_targets.append(target)
                    held_forces.append(forces[i])
                else:
                    c.setJointMotorControl2(self.body, joints[i], c.POSITION_CONTROL, targetPosition=target,
                                            force=forces[i], maxVelocity=self._max_velocities[i])
                    clamped[i] = True
            else:
                moving.append(joints[i])
                moving_targets.append(velocities[i])
                moving_forces.append(forces[i])
                clamped[i] = False  # a velocity command lifts the clamp
        if held:
            c.setJointMotorControlArray(self.body, held, c.POSITION_CONTROL, targetPositions=held_targets,
                                        forces=held_forces)
        if moving:
            c.setJointMotorControlArray(self.body, moving, c.VELOCITY_CONTROL, targetVelocities=moving_targets,
                                        forces=moving_forces)

    @property
    def targets(self) -> np.ndarray | None:
        """The 9 position targets, or None while any joint runs on a velocity target."""
        return self.position_targets.copy() if self._held else None

    def set_gripper(self, open_: bool) -> None:
        """Open to the configured width or close fully, leaving the seven arm joints' targets alone
        (in velocity mode the arm holds where it is)."""
        q = self.targets.copy() if self.targets is not None else self.joint_states()[0]
        q[7:] = self.config.gripper_open if open_ else self.limits.lower[7:]
        self.gripper_open = open_
        self.set_position_targets(q)

    def delta_targets(self, delta) -> np.ndarray:
        """Joint targets for the seed's delta action [dx, dy, dz, dyaw, gripper] (m, rad, +1 open / -1 close).

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

    # --- grasping -----------------------------------------------------------------------------
    def touching(self, body: int) -> bool:
        """Seed grasp check: both fingers have a contact point with the body."""
        c = self.world.client
        return all(c.getContactPoints(self.body, body, link, -1) for link in self.finger_links)

    def contacts(self) -> tuple:
        """Every contact point of the arm, in one PyBullet call (bodyA is always the arm)."""
        return self.world.client.getContactPoints(self.body)

    def gripped_bodies(self, contacts=None) -> set[int]:
        """The bodies that `touching` holds true for, from one contact query (or `contacts`) instead of
        two per body: both finger links touch the body's base link."""
        contacts = self.contacts() if contacts is None else contacts
        left, right = self.finger_links
        by_link = {left: set(), right: set()}
        for point in contacts:
            if point[3] in by_link and point[4] == -1:
                by_link[point[3]].add(point[2])
        return by_link[left] & by_link[right]

    def shake(self) -> None:
        """Move up a little and back down to where it started, so that a loose grasp loses its object.

        Not a delta action: the pick bin's workspace does not apply (a shake above the drop bin stays
        above it), only the arm's reach; the gripper keeps its yaw and its state."""
        start, yaw = self.ee_pose()[0], self.ee_yaw()
        for target in (start + [0.0, 0.0, SHAKE_HEIGHT], start):
            self.move_to(self.ik(self.solver.bound(target), yaw))  # the fingers keep their targets
