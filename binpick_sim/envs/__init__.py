"""Gymnasium envs, registered on import: `import binpick_sim.envs; gymnasium.make("binpick_sim/FrankaDelta-v0")`."""
import gymnasium

from .franka import FrankaDeltaEnv, FrankaEnv, FrankaPositionEnv, FrankaVelocityEnv
from .goal import FrankaGoalEnv, FrankaLiftEnv, FrankaPickPlaceEnv, FrankaReachEnv

ENV_IDS = {
    "binpick_sim/FrankaPosition-v0": "binpick_sim.envs.franka:FrankaPositionEnv",
    "binpick_sim/FrankaVelocity-v0": "binpick_sim.envs.franka:FrankaVelocityEnv",
    "binpick_sim/FrankaDelta-v0": "binpick_sim.envs.franka:FrankaDeltaEnv",
}
# Goal-conditioned (Dict observation with achieved_goal / desired_goal, compute_reward): envs/goal.py
# The ladder of issue 55, easiest first.
GOAL_ENV_IDS = {"binpick_sim/FrankaReach-v0": "binpick_sim.envs.goal:FrankaReachEnv",
                "binpick_sim/FrankaLift-v0": "binpick_sim.envs.goal:FrankaLiftEnv",
                "binpick_sim/FrankaPickPlace-v0": "binpick_sim.envs.goal:FrankaPickPlaceEnv"}

# Episodes end after this many steps under gym.make (TimeLimit truncates; `max_episode_steps=` replaces
# it): the shipped scene files' `task.max_episode_steps` (the reference simulator's 200) for the reference simulator's envs; for the goal
# envs panda-gym's 50 (Reach, Lift: its PandaReach / PandaPickAndPlace), and 100 for PickPlace, whose object
# travels from one bin to the other.
MAX_EPISODE_STEPS = 200
GOAL_EPISODE_STEPS = {"binpick_sim/FrankaReach-v0": 50, "binpick_sim/FrankaLift-v0": 50,
                      "binpick_sim/FrankaPickPlace-v0": 100}

for _id, _entry_point in {**ENV_IDS, **GOAL_ENV_IDS}.items():
    if _id not in gymnasium.registry:
        gymnasium.register(id=_id, entry_point=_entry_point,
                           max_episode_steps=GOAL_EPISODE_STEPS.get(_id, MAX_EPISODE_STEPS))

__all__ = ["ENV_IDS", "GOAL_ENV_IDS", "MAX_EPISODE_STEPS", "GOAL_EPISODE_STEPS", "FrankaEnv", "FrankaPositionEnv",
           "FrankaVelocityEnv", "FrankaDeltaEnv", "FrankaGoalEnv", "FrankaReachEnv", "FrankaLiftEnv",
           "FrankaPickPlaceEnv"]
