"""The in-process floor: FrankaDelta-v0's step written as lean as Python allows, on raw PyBullet.

Issue 33 asks how close the in-process env can come to its own stepping and IK calls, and issue 54 how
close to its own stepping alone. Part of what separates them is not the wrapper's: an env that observes
the arm and judges the task must also read the gripper's pose, turn the yaw into a quaternion, solve the
IK, set the motors, read the contacts, the objects and the joints, and build a Gymnasium observation of
float32 arrays. `LeanDelta` makes exactly those PyBullet calls, on the world of a FrankaDelta-v0 env of
its own (the same scene, bodies and IK arguments), with the least Python around them: plain floats, no
checks beyond the action's, no dataclasses, no info beyond a dict literal, no task rules beyond the
bin-contact test. On the one-object scene its IK is one pass on the live arm (panda-gym's); on the
default scene it is the cell's: a posture pass and refinements on the arm's IK copy, each answer set on
the copy and measured, as cell/arm/ik.py's `PandaIK.solve` does. Its steps/s beside its own stepping
(and IK) is the ratio no Python env of this design can beat; the env's steps/s beside it is what the
wrapper itself costs. Its episodes end as the env's do (a bin contact terminates, the time limit
truncates), so with the same seed and actions the two make the same motions step for step
(test/docs/test_bench_figures.py). It is a yardstick, not a second env: it never grabs or removes an
object (random actions practically never lift one).

Timed by like_for_like.Timed like any env: `stepper.step(n)` is its stepping loop and the world's
client (and the IK copy's) its IK clients, looked up on every call.
"""
from __future__ import annotations

import math

import gymnasium as gym
import numpy as np

import binpick_sim.envs  # noqa: F401  (registers the ids)
from binpick_sim.cell.arm.ik import TOLERANCE


class Stepper:
    """The stepping loop, as World.step's without hooks (timed from outside through `step`)."""

    def __init__(self, client):
        self.client = client

    def step(self, n: int = 1) -> None:
        step = self.client.stepSimulation
        for _ in range(n):
            step()


class LeanDelta:
    """FrankaDelta-v0's step on its scene as the same PyBullet calls and little else.

    Quacks enough like a gym env for like_for_like.Timed: `action_space`, `reset(seed)`, `step`,
    `close`."""

    def __init__(self, scene):
        self.env = gym.make("binpick_sim/FrankaDelta-v0", backend="direct", observation="state", config_file=scene)
        self.env.reset(seed=0)
        unwrapped = self.env.unwrapped
        sim, config = unwrapped.backend.sim, unwrapped.config
        arm = sim.arm
        if not (arm.config.clip_delta_to_workspace and arm.workspace is not None and arm.workspace.unrotated):
            raise ValueError("the floor is written for the cell's delta arm: deltas clipped to an upright pick bin")
        self.action_space = self.env.action_space
        self.client = sim.world.client
        self.stepper = Stepper(self.client)
        self.body, self.link, self.joints = arm.body, arm.grasp_link, list(arm.joints)
        self.forces = list(arm._motor_forces)
        self.lower, self.upper = arm.limits.lower.tolist(), arm.limits.upper.tolist()
        low, high = arm.workspace_bounds()
        self.low, self.high = low.tolist(), high.tolist()
        self.origin = arm.workspace.position.tolist()  # an upright bin: local = world - origin
        solver = arm.solver
        self.damping, self.iterations = solver._damping, solver.iterations
        # the cell's IK (a posture pass, then refinements on the copy) or one pass on the live arm
        self.copied = solver.posture or solver.rounds
        self.copy, self.copy_body, self.copy_joints = solver.client, solver.body, list(solver.joints)
        self.posture, self.rounds, self.limits = solver.posture, solver.rounds, solver._limits
        self.ik_lower, self.ik_upper = solver._lower[:7], solver._upper[:7]
        self.rest, self.pull = solver._rest, solver._pull
        self.bins = frozenset(b.body for b in sim.scene.bins)
        self.objects = [o.body for o in sim.scene.objects]
        self.threshold = config.task.collision_threshold
        self.terminates = config.task.terminate_on_bin_collision
        self.limit, self.taken = self.env.spec.max_episode_steps, 0
        self.dv, self.da = unwrapped.dv, unwrapped.da
        self.open_width = arm.config.gripper_open
        self.steps = config.task.steps_per_action
        self.joint_low, self.joint_high = unwrapped.joint_low, unwrapped.joint_high
        self.gripper_open = True
        self.fingers = arm.position_targets[7:].tolist()  # the fingers' targets: the IK copy's (home at a reset)

    def reset(self, seed=None):
        out = self.env.reset(seed=seed)
        self.gripper_open, self.taken = True, 0
        self.fingers = self.env.unwrapped.backend.sim.arm.position_targets[7:].tolist()
        self.objects = [o.body for o in self.env.unwrapped.backend.sim.scene.objects]  # a reset may reload them
        return out

    def step(self, action):
        a = np.asarray(action, dtype=float).tolist()
        if len(a) != 5 or not all(map(math.isfinite, a)):
            raise ValueError("action must be 5 finite numbers")
        a = [min(max(v, -1.0), 1.0) for v in a]
        c = self.client
        state = c.getLinkState(self.body, self.link, computeForwardKinematics=True)
        target = []
        for here, move, origin, low, high in zip(state[4], a, self.origin, self.low, self.high):
            local, start = here + move * self.dv - origin, here - origin  # clipped as the env clips a delta
            target.append(min(max(local, min(low, start)), max(high, start)) + origin)
        yaw = c.getEulerFromQuaternion(state[5])[2] + a[3] * self.da
        orientation = c.getQuaternionFromEuler([math.pi, 0.0, yaw])
        if self.copied:
            q = self.solve(target, orientation, [j[0] for j in c.getJointStates(self.body, self.joints)[:7]])
        else:
            q = c.calculateInverseKinematics(self.body, self.link, target, orientation, jointDamping=self.damping,
                                             maxNumIterations=self.iterations, residualThreshold=TOLERANCE)
        if a[4]:
            self.gripper_open = a[4] > 0
        finger = self.open_width if self.gripper_open else self.lower[7]
        q = [min(max(v, low), high) for v, low, high in zip((*q[:7], finger, finger), self.lower, self.upper)]
        self.fingers = q[7:]
        c.setJointMotorControlArray(self.body, self.joints, c.POSITION_CONTROL, targetPositions=q,
                                    forces=self.forces)
        self.stepper.step(self.steps)
        collided = any(point[2] in self.bins and point[8] < self.threshold for point in c.getContactPoints(self.body))
        places = [c.getBasePositionAndOrientation(body)[0] for body in self.objects]
        joints = c.getJointStates(self.body, self.joints)
        ee = c.getLinkState(self.body, self.link, computeForwardKinematics=True)[4]
        observation = {
            "joint_positions": np.clip([j[0] for j in joints], self.joint_low, self.joint_high).astype(np.float32),
            "joint_velocities": np.array([j[1] for j in joints], dtype=np.float32),
            "ee_position": np.array(ee, dtype=np.float32), "gripper_open": int(self.gripper_open)}
        self.taken += 1
        return observation, -1.0, collided and self.terminates, self.taken >= self.limit, {"objects": places}

    def solve(self, target: list, orientation, arm: list) -> list:
        """The cell's IK on the copy from the arm's joints `arm` (the fingers at their targets): the posture
        pass, then up to `rounds` refinements while the answer is TOLERANCE or more from `target`, every
        answer clipped to the joint limits, set on the copy and measured (PandaIK.solve's calls)."""
        c, body, joints = self.copy, self.copy_body, self.copy_joints
        start = arm + self.fingers
        c.resetJointStatesMultiDof(body, joints, [[v] for v in start])
        if self.posture:
            rest = [v + self.pull * (r - v) for v, r in zip(start, self.rest)]
            q = c.calculateInverseKinematics(body, self.link, target, orientation, restPoses=rest, **self.limits,
                                             maxNumIterations=self.iterations, residualThreshold=1e-6)
        else:
            q = c.calculateInverseKinematics(body, self.link, target, orientation, jointDamping=self.damping,
                                             maxNumIterations=self.iterations, residualThreshold=TOLERANCE)
        for refined in range(self.rounds + 1):  # returns at the last round at the latest
            q = [min(max(v, low), high) for v, low, high in zip(q[:7], self.ik_lower, self.ik_upper)] + self.fingers
            c.resetJointStatesMultiDof(body, joints, [[v] for v in q])
            reached = c.getLinkState(body, self.link, computeForwardKinematics=True)[4]
            if refined == self.rounds or math.hypot(reached[0] - target[0], reached[1] - target[1],
                                                    reached[2] - target[2]) < TOLERANCE:
                return q
            q = c.calculateInverseKinematics(body, self.link, target, orientation, jointDamping=self.damping,
                                             maxNumIterations=self.iterations, residualThreshold=TOLERANCE)

    def close(self) -> None:
        self.env.close()
