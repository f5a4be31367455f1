"""One episode played as dataset rows: what a run asks for (RunSpec), which episode (EpisodeSpec), and the
loop that steps the env and turns each step into a row of the Parquet format (datasets/parquet.py).

What an episode contains depends on its seed, the spec and the policy only: the env is reset with the
episode's seed and the policy is made fresh for it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..datasets.parquet import info_json, observation_columns

DEFAULT_ENV = "binpick_sim/FrankaDelta-v0"
OBSERVATIONS = ("state", "image", "privileged", "state_dict")  # --observation (doc/gym.md "Learning")


@dataclass
class EpisodeSpec:
    index: int
    seed: int


@dataclass
class RunSpec:
    env_id: str = DEFAULT_ENV
    backend: str = "direct"
    observation: str = "state"
    image_format: str = "png"
    policy: str = "scripted"
    max_steps: int | None = None  # cap on env steps per episode (the env's own limit applies too)
    env_options: dict = field(default_factory=dict)

    def make_env(self):
        """The env this run steps (a worker's, or this process's)."""
        import gymnasium as gym

        from .. import envs  # noqa: F401  (registers the env ids)

        return gym.make(self.env_id, backend=self.backend, observation=self.observation, **self.env_options)


def run_episode(env, spec: RunSpec, episode: EpisodeSpec, factory) -> tuple[dict, list[dict]]:
    """Play one episode; return its summary and its rows (observation before the action, the action,
    what the step returned)."""
    observation, info = env.reset(seed=episode.seed)
    act = factory(env.unwrapped, episode.seed)
    from ..envs.franka import episode_limit

    limit = episode_limit(env) or env.unwrapped.config.task.max_episode_steps
    if spec.max_steps is not None:
        limit = min(limit, spec.max_steps)
    rows, total, terminated, truncated, step = [], 0.0, False, False, 0
    while not (terminated or truncated):
        action = np.asarray(act(observation), dtype=np.float32)
        next_observation, reward, terminated, truncated, info = env.step(action)
        truncated = bool(truncated) or (not terminated and step + 1 >= limit)
        rows.append({"episode": episode.index, "step": step,
                     **observation_columns(observation, spec.image_format),
                     "action": action.ravel().tolist(), "reward": float(reward), "terminated": bool(terminated),
                     "truncated": truncated, "info": info_json(info)})
        total += float(reward)
        observation = next_observation
        step += 1
    summary = {"episode": episode.index, "seed": episode.seed, "success": int(info.get("grabs", 0)) > 0,
               "length": step, "return": total, "terminated": bool(terminated), "truncated": bool(truncated),
               "info": info_json(info)}
    return summary, rows
