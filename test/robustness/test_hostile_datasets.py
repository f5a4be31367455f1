"""Datasets that do not hold what they say (issue 53): the exporters and the replay refuse them in one line,
exit 2 and write nothing.

The datasets here are written in the rollouts format directly (datasets/parquet.py), one steps file per
episode as a hand-edited or half-copied dataset has them, so each case damages exactly one thing. Before the
checks, a steps file copied over another (the total row count unchanged) gave a LeRobot dataset of 3 episodes
holding episode 0 twice and episode 2 not at all, with exit 0; malformed summaries gave tracebacks.
"""
from __future__ import annotations

import json
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from binpick_sim.datasets.parquet import EPISODES_DIR, STEPS_DIR, SUMMARY_FILE, steps_table

EPISODES, LENGTH = 3, 5
SUMMARY = {"env": "binpick_sim/FrankaDelta-v0", "backend": "direct", "observation": "state", "image_format": "png",
           "images": {}, "policy": "random", "seed": 0, "episodes": EPISODES, "env_options": {}}


def write(folder, summary=SUMMARY, lengths=(LENGTH,) * EPISODES, episode_ids=None):
    folder.mkdir()
    (folder / SUMMARY_FILE).write_text(json.dumps(summary))
    (folder / STEPS_DIR).mkdir()
    for episode, length in enumerate(lengths):
        rows = [{"episode": episode, "step": step, "observation.joint_positions": [0.1 * step] * 9,
                 "action": [0.0] * 5, "reward": 0.0, "terminated": False, "truncated": step == length - 1,
                 "info": "{}"} for step in range(length)]
        pq.write_table(steps_table(rows), folder / STEPS_DIR / f"episode-{episode}.parquet")
    ids = list(range(len(lengths))) if episode_ids is None else episode_ids
    (folder / EPISODES_DIR).mkdir()
    pq.write_table(pa.Table.from_pylist([{"episode": e, "seed": e, "length": n, "success": False, "return": 0.0}
                                         for e, n in zip(ids, lengths)]), folder / EPISODES_DIR / "episodes.parquet")
    return folder


def overwritten(folder):
    """Episode 0's steps file copied over episode 2's: as many rows as before, episode 2 gone."""
    shutil.copy(folder / STEPS_DIR / "episode-0.parquet", folder / STEPS_DIR / "episode-2.parquet")


def renumbered(folder):
    rows = pq.read_table(folder / STEPS_DIR / "episode-1.parquet").to_pylist()
    rows[2]["step"] = 1
    pq.write_table(steps_table(rows), folder / STEPS_DIR / "episode-1.parquet")


def summary_of(value):
    return lambda folder: (folder / SUMMARY_FILE).write_text(value if isinstance(value, str) else json.dumps(value))


CASES = {
    "a steps file copied over another": (overwritten, "episode 0 has 10 steps, its length is 5"),
    "steps numbered out of order": (renumbered, "episode 1's steps are not numbered 0, 1, ..."),
    "a summary that is a list": (summary_of([]), "holds a list, not a rollouts summary"),
    "a summary without env": (summary_of({k: v for k, v in SUMMARY.items() if k != "env"}), "lacks env (str)"),
    "a summary with a seed of text": (summary_of({**SUMMARY, "seed": "0"}), "lacks seed (int)"),
    "a summary that is not JSON": (summary_of("{"), "is not JSON"),
    "a summary counting other episodes": (summary_of({**SUMMARY, "episodes": 2}), "counts 2 episodes"),
    "no steps files": (lambda f: shutil.rmtree(f / STEPS_DIR), "has no steps/*.parquet"),
}


def lerobot(folder, out):
    from binpick_sim.datasets import lerobot

    return lerobot.main([str(folder), "--out", str(out)])


@pytest.mark.parametrize("case", CASES)
def test_the_lerobot_export_refuses_a_dataset_that_does_not_hold_what_it_says(tmp_path, capsys, case):
    damage, said = CASES[case]
    folder = write(tmp_path / "dataset")
    damage(folder)
    assert lerobot(folder, tmp_path / "out") == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lerobot export: error: ") and said in lines[0], lines
    assert not (tmp_path / "out").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["dataset"]


def test_an_episode_listed_twice_is_refused(tmp_path, capsys):
    folder = write(tmp_path / "dataset", episode_ids=[0, 1, 1])
    assert lerobot(folder, tmp_path / "out") == 2
    assert "episode 1 is listed twice" in capsys.readouterr().err


def test_the_intact_dataset_converts(tmp_path, capsys):
    """The same dataset, undamaged, passes the checks (they refuse what is wrong, not what is written here)."""
    assert lerobot(write(tmp_path / "dataset"), tmp_path / "out") == 0
    assert f"{EPISODES} episodes, {EPISODES * LENGTH} frames" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["minari", "replay"])
def test_the_minari_export_and_the_replay_refuse_it_too(tmp_path, capsys, command):
    folder = write(tmp_path / "dataset")
    overwritten(folder)
    if command == "minari":
        pytest.importorskip("minari", reason="needs minari (requirements-datasets.txt, installed by make test)")
        from binpick_sim.datasets.minari import main

        code, prefix = main([str(folder), "--id", "binpick_test/hostile-v0"]), "minari export: error: "
    else:
        from binpick_sim.rollouts import main

        code, prefix = main(["--replay", str(folder)]), "rollouts: error: "
    assert code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(prefix) and "episode 0 has 10 steps" in lines[0], lines


@pytest.mark.parametrize("dataset_id, says", [
    ("../../elsewhere-v0", "is not a Minari dataset id"),
    ("a b-v0", "is not a Minari dataset id"),
    ("no_version", "is not a Minari dataset id"),
    ("binpick_test/" + "x" * 5000 + "-v0", "at most 200 characters"),
], ids=["path", "space", "no version", "5000 characters"])
def test_a_minari_id_that_minari_would_refuse_is_refused_before_the_replay(tmp_path, capsys, dataset_id, says):
    pytest.importorskip("minari", reason="needs minari (requirements-datasets.txt, installed by make test)")
    from binpick_sim.datasets.minari import main

    assert main([str(write(tmp_path / "dataset")), "--id", dataset_id]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("minari export: error: ") and says in lines[0], lines
