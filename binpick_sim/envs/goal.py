"""A goal-conditioned env in Gymnasium-Robotics' convention, for hindsight experience replay (HER).

FrankaLift: top-down delta actions (FrankaDelta's); at each reset one object in play is chosen and a goal
position is drawn in the pick bin's free space below the height at which the task counts a grab (above it
the object would be taken away); the reward says how far the chosen object is from the goal. The
observation is a Dict of `observation` (the privileged vector, envs/privileged.py), `achieved_goal` (the
chosen object's position) and `desired_goal`; `compute_reward(achieved_goal, desired_goal, info)` takes
batches, as HER relabelling (SB3's HerReplayBuffer, Gymnasium-Robotics' wrappers) calls it.

The choice and the goal come from the env's own RNG (`reset(seed=...)` seeds it as every Gymnasium env's
`np_random`), so a seed gives the same goal on both backends.
"""
from __future__ import annotations

import numpy as np
from gymnasium import spaces

from .backends import Observation
from .franka import FrankaDeltaEnv

DISTANCE_THRESHOLD = 0.02  # m: success when the chosen object is this close to the goal (panda-gym's 5 cm, halved:
#                            the objects are 1-3 cm, not panda-gym's 4 cm cube)
GOAL_MARGIN = 0.01  # m kept from the bin's walls, floor and the grab height when drawing a goal


class FrankaLiftEnv(FrankaDeltaEnv):
    """Move the chosen object to the goal. Terminates as the task does (a bin collision, a grab: a grab
    removes the object, whose `achieved_goal` then stays where it was last seen); otherwise runs to the
    time limit, as Gymnasium-Robotics' Fetch tasks do. `reward_type`: "sparse" −1 until the object is
    within DISTANCE_THRESHOLD of the goal, then 0; "dense" minus the distance [m]."""

    def __init__(self, config_file=None, observation: str = "privileged", **kwargs):
        if observation != "privileged":
            raise ValueError(f"FrankaLift's observation is the goal-conditioned Dict over 'privileged', got "
                             f"observation={observation!r}")
        self.chosen = -1  # the chosen object's slot (object_k: k)
        self.goal = np.zeros(3)
        self.achieved = np.zeros(3)
        super().__init__(config_file, observation=observation, **kwargs)

    def _observation_space(self) -> spaces.Dict:
        point = spaces.Box(-np.inf, np.inf, (3,), np.float32)
        return spaces.Dict({"observation": self.privileged_layout.flat_space(), "achieved_goal": point,
                            "desired_goal": point})

    def _observation(self, obs: Observation) -> dict:
        for index, position, *_ in obs.privileged_state()["objects"]:
            if index == self.chosen:
                self.achieved = np.asarray(position, float)
        return {"observation": super()._observation(obs), "achieved_goal": self.achieved.astype(np.float32),
                "desired_goal": self.goal.astype(np.float32)}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed, options=options)  # the world and the RNG first
        state = self.last.privileged_state()
        present = sorted(o[0] for o in state["objects"] if o[0] < self.privileged_layout.max_objects)
        self.chosen = int(self.np_random.choice(present)) if present else -1
        self.achieved = next((np.asarray(o[1], float) for o in state["objects"] if o[0] == self.chosen), np.zeros(3))
        self.goal = self._sample_goal(state)
        return self._observation(self.last), self._info(self.last)

    def _sample_goal(self, state: dict) -> np.ndarray:
        """Uniform in the pick bin's free space (inside its walls, above its floor, below the grab height),
        GOAL_MARGIN from every side of it."""
        pick = self.config.scene.pick_bin
        position, orientation = next((p, q) for name, p, q in state["bins"] if name == "pick_bin")
        half = np.array([pick.size[0], pick.size[1]]) / 2 - pick.wall_thickness - GOAL_MARGIN
        x, y = self.np_random.uniform(-half, half)
        low = pick.wall_thickness + GOAL_MARGIN
        high = state["lift_height"] - position[2] - GOAL_MARGIN
        z = self.np_random.uniform(low, max(low, high))
        return np.asarray(position, float) + _rotate(orientation, np.array([x, y, z]))

    def step(self, action):
        observation, _, terminated, truncated, info = super().step(action)
        reward = float(self.compute_reward(observation["achieved_goal"], observation["desired_goal"], info))
        return observation, reward, terminated, truncated, info

    def _info(self, obs: Observation) -> dict:
        info = super()._info(obs)
        distance = float(np.linalg.norm(self.achieved.astype(np.float32) - self.goal.astype(np.float32)))
        info["is_success"] = bool(distance < DISTANCE_THRESHOLD)
        info["chosen_object"] = f"object_{self.chosen}" if self.chosen >= 0 else None
        return info

    def _reward(self, obs: Observation) -> float:
        return 0.0  # step() replaces it with compute_reward's (the task's reward is not this env's)

    def compute_reward(self, achieved_goal, desired_goal, info) -> np.ndarray | float:
        """Vectorised over leading axes (HER relabels batches); the same numbers `step` returns."""
        distance = np.linalg.norm(np.asarray(achieved_goal, np.float32) - np.asarray(desired_goal, np.float32),
                                  axis=-1)
        if self.reward_type == "dense":
            return -distance.astype(np.float32)
        return -(distance >= DISTANCE_THRESHOLD).astype(np.float32)

    def _reward_range(self) -> tuple[float, float]:
        return (-np.inf, 0.0) if self.reward_type == "dense" else (-1.0, 0.0)


def _rotate(xyzw, vector: np.ndarray) -> np.ndarray:
    """`vector` turned by the unit quaternion `xyzw`."""
    x, y, z, w = (float(v) for v in xyzw)
    q = np.array([x, y, z])
    return vector + 2 * np.cross(q, np.cross(q, vector) + w * vector)
