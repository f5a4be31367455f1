"""The Franka Panda of the reference simulator's FrankaArm: joint position, joint velocity and top-down delta actions.

Two ways to act: `set_*_targets` only hands targets to PyBullet's motors (the ROS node does this and
lets its physics loop move the arm), while `move_to` / `apply_velocity` / `apply_delta` also step the
world as the reference simulator does (until the target is reached or `max_steps`, or one step for velocities).

In four modules, one idea each: what the Panda is (panda.py: names, URDF, limits), this arm in a world
(here: its body, state, controller hook and contacts), how commands reach its motors (motors.py), and
the reference simulator's actions (actions.py).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ...config import ArmConfig
from .actions import TopDownActions
from .motors import MotorCommands
from .ik import PandaIK
from .panda import FINGER_LINKS, GRASP_TARGET_LINK, JOINT_NAMES, JointLimits, hulled_panda_urdf
from ..scene import Bin
from ..world import World


class FrankaArm(MotorCommands, TopDownActions):
    """One Panda in a world: its body, its state and the reference FrankaArm's class variables; how it is commanded
    (motors.py) and the reference simulator's actions (actions.py) are mixins of their own."""

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
        self.body = c.loadURDF(hulled_panda_urdf(), self.config.base_position, self.base_orientation,
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
        (the reference simulator's "tip offset"), measured as the fingers' distance to a plane through the world origin."""
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
        self.gripper_open = True  # reference: reset leaves the gripper open
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

    # --- the reference FrankaArm's class variables, from this arm's scene file and URDF ---------------------
    @property
    def max_gripper_force(self) -> float:
        """N each finger's motor may push with (`arm.finger_force`; the reference simulator's is 80, see doc/choices.md,
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
