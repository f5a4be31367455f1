"""Gymnasium envs, registered on import: `import binpick_sim.envs; gymnasium.make("binpick_sim/FrankaDelta-v0")`."""
import gymnasium

from .franka import FrankaDeltaEnv, FrankaEnv, FrankaPositionEnv, FrankaVelocityEnv
from .goal import FrankaLiftEnv

ENV_IDS = {
    "binpick_sim/FrankaPosition-v0": "binpick_sim.envs.franka:FrankaPositionEnv",
    "binpick_sim/FrankaVelocity-v0": "binpick_sim.envs.franka:FrankaVelocityEnv",
    "binpick_sim/FrankaDelta-v0": "binpick_sim.envs.franka:FrankaDeltaEnv",
}
# Goal-conditioned (Dict observation with achieved_goal / desired_goal, compute_reward): envs/goal.py
GOAL_ENV_IDS = {"binpick_sim/FrankaLift-v0": "binpick_sim.envs.goal:FrankaLiftEnv"}

# Episodes end after this many steps under gym.make (TimeLimit truncates; `max_episode_steps=` replaces
# it): the shipped scene files' `task.max_episode_steps` (the seed's 200).
MAX_EPISODE_STEPS = 200

for _id, _entry_point in {**ENV_IDS, **GOAL_ENV_IDS}.items():
    if _id not in gymnasium.registry:
        gymnasium.register(id=_id, entry_point=_entry_point, max_episode_steps=MAX_EPISODE_STEPS)

__all__ = ["ENV_IDS", "GOAL_ENV_IDS", "MAX_EPISODE_STEPS", "FrankaEnv", "FrankaPositionEnv", "FrankaVelocityEnv",
           "FrankaDeltaEnv", "FrankaLiftEnv"]
