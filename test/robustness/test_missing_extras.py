"""Every command whose optional extra is missing says so in one line, naming the requirements file that pins
it, exits 2 and writes nothing (issue 53, binpick_sim/extras.py).

Each command runs in a process of its own in which the extra's modules cannot be imported (None in
sys.modules: `import` then raises ModuleNotFoundError, as on a machine without them).
"""
from __future__ import annotations

import subprocess
import sys

import pytest

import ros_env

RUN = ("import runpy, sys; sys.modules.update(dict.fromkeys({blocked!r})); sys.argv = {argv!r}; "
       "sys.exit(runpy.{how}({target!r}, run_name='__main__'))")

# (command as a user types it, how it is run, what it runs, its arguments, modules blocked, the file named)
COMMANDS = [
    ("record", "run_module", "binpick_sim.recording", ["--out", "{out}"], ["rosbags"], "requirements-datasets.txt"),
    ("rollouts --format minari", "run_module", "binpick_sim.rollouts",
     ["--out", "{out}", "--format", "minari", "--episodes", "1"], ["minari"], "requirements-datasets.txt"),
    ("rollouts --format lerobot", "run_module", "binpick_sim.rollouts",
     ["--out", "{out}", "--format", "lerobot", "--episodes", "1"], ["av"], "requirements-datasets.txt"),
    ("the LeRobot export", "run_module", "binpick_sim.datasets.lerobot", ["{out}.in", "--out", "{out}"],
     ["datasets"], "requirements-datasets.txt"),
    ("the Minari export", "run_module", "binpick_sim.datasets.minari", ["{out}"], ["minari"],
     "requirements-datasets.txt"),
    ("make bench", "run_module", "bench.run", ["physics"], ["panda_gym"], "requirements-bench.txt"),
    ("make bench-her", "run_module", "bench.her", ["--out", "{out}"], ["stable_baselines3"], "requirements-her.txt"),
    ("make planner-example", "run_path", "examples/planner_client.py", [], ["ompl"], "requirements-planning.txt"),
]


@pytest.mark.parametrize("command, how, target, args, blocked, pins", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_a_command_without_its_extra_says_which_file_pins_it_in_one_line(tmp_path, command, how, target, args,
                                                                         blocked, pins):
    out = tmp_path / "out"
    argv = [target] + [a.format(out=out) for a in args]
    code = RUN.format(blocked=blocked, argv=argv, how=how, target=target)
    result = subprocess.run([sys.executable, "-c", code], cwd=ros_env.REPO, capture_output=True, text=True,
                            timeout=120)
    # (pybullet's own banner, printed by its import in C, is not the command's)
    lines = [line for line in result.stderr.strip().splitlines() if not line.startswith("pybullet build time")]
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1, result.stderr
    assert f"{command} needs {blocked[0]}" in lines[0] and f"not installed: pip install -r {pins}" in lines[0]
    assert not out.exists() and list(tmp_path.iterdir()) == []  # nothing written
