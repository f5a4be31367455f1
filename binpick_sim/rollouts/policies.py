"""The policies a rollout runs: `scripted`, `random`, or a user's `module:function`.

A policy factory is called once per episode as `factory(env, seed)` and returns `act(observation) -> action`.
Made per episode, a policy cannot carry state from one episode into the next, which is what makes an episode
independent of the worker that runs it.
"""
from __future__ import annotations

import copy
import importlib

POLICIES = ("scripted", "random")


def scripted(env, seed: int):
    """The scripted picker (binpick_sim.envs.scripted); needs FrankaDelta-v0."""
    from ..envs.scripted import ScriptedPicker

    return ScriptedPicker(env).act


def random(env, seed: int):
    """Uniform random actions from the env's action space, seeded with the episode's seed."""
    space = copy.deepcopy(env.action_space)
    space.seed(seed)
    return lambda observation: space.sample()


def load_policy(name: str):
    """`scripted`, `random`, or `module:function` naming a factory `function(env, seed) -> act`."""
    if name in POLICIES:
        return {"scripted": scripted, "random": random}[name]
    module, sep, attribute = name.partition(":")
    if not sep or not module or not attribute:
        raise ValueError(f"policy must be one of {POLICIES} or 'module:function', got {name!r}")
    try:
        factory = getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"policy {name!r} cannot be loaded: {exc}") from exc
    if not callable(factory):
        raise ValueError(f"policy {name!r} is not callable")
    return factory
