"""The scripted picker driving `FrankaDelta-v0`: the policy's waypoints turned into env actions.

It reads the gripper position from the env's last observation (any observation mode), the object poses and meshes from
`env.object_views()` (what `world/objects` carries), and tracks the gripper's yaw and open state
from its own actions. After a lift that did not count as a grab it opens and tries another object.
"""
from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from .franka import episode_limit
from ..picking.policy import BinInterior, Grasp, choose_grasp, yaw_step

REACHED = 0.002  # m
YAW_REACHED = 0.01  # rad
CLOSE_STEPS = 4  # env steps to let the fingers close
PHASE_STEPS = 40  # env steps before a phase gives up (blocked by something)
STALLED = 0.0005  # m: a step that moves the gripper less than this while it should move means it is
                  # as close as it gets (the target is below the workspace floor, or something is in the way)


class ScriptedPicker:
    def __init__(self, env):
        self.env = env.unwrapped
        self.interior = BinInterior.from_config(self.env.config.scene.pick_bin)
        self.reset()

    def reset(self) -> None:
        self.tried: set[str] = set()
        self.grasp: Grasp | None = None
        self.phase = 0
        self.phase_steps = 0
        self.attempts = 0
        self.previous: np.ndarray | None = None

    @property
    def phase_name(self) -> str:
        return self.grasp.waypoints()[self.phase][0] if self.grasp else "choose"

    def act(self, observation: dict) -> np.ndarray:
        if self.grasp is None:
            self.grasp = choose_grasp(self.env.object_views(), exclude=self.tried, interior=self.interior)
            if self.grasp is None:  # nothing left to try: stay put
                return np.zeros(5, np.float32)
            self.tried.add(self.grasp.name)
            self.attempts += 1
            self.phase, self.phase_steps = 0, 0
        waypoints = self.grasp.waypoints()
        if self.phase >= len(waypoints):  # lifted without a grab: open, start over with another object
            self.grasp = None
            return np.array([0, 0, 1, 0, 1], np.float32)
        _, target, gripper = waypoints[self.phase]
        self.phase_steps += 1
        if target is None:
            if self.phase_steps >= CLOSE_STEPS:
                self._next_phase()
            return np.array([0, 0, 0, 0, gripper], np.float32)
        # the gripper's position as the `state` observation has it (float32), whatever this env observes
        position = np.asarray(self.env.last.ee_position, np.float32).astype(float)
        error = target - position
        turn = yaw_step(self._yaw(), self.grasp.yaw)
        stalled = (self.previous is not None and self.phase_steps > 2
                   and np.linalg.norm(position - self.previous) < STALLED and abs(turn) < YAW_REACHED)
        self.previous = position
        if (np.linalg.norm(error) < REACHED and abs(turn) < YAW_REACHED) or stalled or self.phase_steps > PHASE_STEPS:
            self._next_phase()
        env = self.env
        action = np.concatenate([np.clip(error / env.dv, -1, 1), [np.clip(turn / env.da, -1, 1), gripper]])
        return action.astype(np.float32)

    def _next_phase(self) -> None:
        self.phase += 1
        self.phase_steps = 0

    def _yaw(self) -> float:
        return float(Rotation.from_quat(self.env.last.ee_orientation).as_euler("xyz")[2])


def run_episode(env, seed: int, max_steps: int | None = None, on_step=None) -> dict:
    """One scripted episode; returns the last info with `steps` and `attempts` added."""
    picker = ScriptedPicker(env)
    observation, info = env.reset(seed=seed)
    limit = max_steps or episode_limit(env) or env.unwrapped.config.task.max_episode_steps
    for step in range(1, limit + 1):
        observation, reward, terminated, truncated, info = env.step(picker.act(observation))
        if on_step is not None:
            on_step(step, picker, info)
        if terminated or truncated:
            break
    return {**info, "steps": step, "attempts": picker.attempts}
