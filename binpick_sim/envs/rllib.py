"""RLlib: the three gym ids registered with Ray Tune's env registry, where RLlib's env runners look.

    from binpick_sim.envs import rllib
    rllib.register()
    config = PPOConfig().environment("binpick_sim/FrankaDelta-v0", env_config={"observation": "state"})

RLlib builds envs inside its env-runner processes from the registered creator, passing `env_config`
(an `EnvContext`: a dict plus `worker_index` / `vector_index`); its keys are the env's keyword
arguments (`backend`, `observation`, `config_file`, ...). On the `ros` backend each env starts its own
private `sim` in a namespace of its own, so many env runners on one machine do not hear each other.
"""
from __future__ import annotations

import gymnasium as gym

from . import ENV_IDS


def make_env(env_id: str, env_config: dict | None = None) -> gym.Env:
    """The env RLlib's creator returns: `gymnasium.make(env_id, **env_config)`."""
    return gym.make(env_id, **dict(env_config or {}))


def register(env_ids=None) -> list[str]:
    """Register the ids (default: all three) with `ray.tune.registry.register_env`; returns them."""
    from ray.tune.registry import register_env

    ids = list(env_ids or ENV_IDS)
    for env_id in ids:
        if env_id not in ENV_IDS:
            raise ValueError(f"unknown env id {env_id!r}; known: {sorted(ENV_IDS)}")
        register_env(env_id, lambda env_config, env_id=env_id: make_env(env_id, env_config))
    return ids
