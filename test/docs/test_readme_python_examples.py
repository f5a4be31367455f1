"""The README's Python examples run as written (a manual whose examples rot is worse than none)."""
import re
from pathlib import Path

import numpy as np

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def python_block(after_heading: str) -> str:
    section = README[README.index(after_heading):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_time_indexed_example_runs_a_second_of_closed_loop_control():
    namespace = {}
    exec(python_block("## The time-indexed robot interface"), namespace)
    hold, observation = namespace["hold"], namespace["observation"]
    assert np.abs(observation.position[:7] - hold[:7]).max() < 0.01  # it held the pose
