"""The manual's Python examples run as written (a manual whose examples rot is worse than none): the
README's gym in five lines, and the time-indexed interface's example on its page (doc/time-indexed.md)."""
import numpy as np

import manual


def python_block(title: str, page: str | None = None) -> str:
    return manual.blocks(manual.section(title, page), "python")[0]


def test_the_time_indexed_example_runs_a_second_of_closed_loop_control():
    namespace = {}
    exec(python_block("The time-indexed robot interface"), namespace)
    hold, observation = namespace["hold"], namespace["observation"]
    assert np.abs(observation.position[:7] - hold[:7]).max() < 0.01  # it held the pose


def test_the_readmes_gym_in_five_lines_makes_resets_and_steps_an_env():
    code = python_block("The gym in five lines", "README.md")
    assert len(code.strip().splitlines()) == 5
    namespace = {}
    exec(code, namespace)
    env = namespace["env"]
    try:
        assert env.spec.id == "binpick_sim/FrankaDelta-v0"
        assert env.observation_space.contains(namespace["obs"])
        assert isinstance(namespace["reward"], float) and namespace["info"]["episode_time"] > 0
    finally:
        env.close()
