"""Dataset tools (binpick_sim.datasets): exact replay of a rollouts dataset and the Minari export.

The same few scripted-picker episodes (capped short) are recorded once by `rollouts` on a local Ray
cluster and then replayed / converted; each format is read back by its own ecosystem's reader.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

REPO = Path(__file__).resolve().parent.parent
SEED, EPISODES, MAX_STEPS = 3, 3, 25


@pytest.fixture(scope="module")
def cluster():
    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}})
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def scripted(cluster, tmp_path_factory):
    """EPISODES scripted-picker episodes (seeds SEED.., MAX_STEPS steps at most) as a rollouts dataset."""
    from binpick_sim.rollouts import RunSpec, rollouts

    out = tmp_path_factory.mktemp("scripted") / "dataset"
    rollouts(out, EPISODES, 2, SEED, RunSpec(policy="scripted", max_steps=MAX_STEPS), progress=False)
    return out


def _copy(folder: Path, to: Path) -> Path:
    import shutil

    shutil.copytree(folder, to)
    return to


def test_replay_of_a_recorded_dataset_is_exact(scripted, capsys):
    from binpick_sim.rollouts import main

    assert main(["--replay", str(scripted)]) == 0
    out = capsys.readouterr().out
    assert f"replayed {EPISODES} episodes, {EPISODES * MAX_STEPS} steps: largest observation difference 0\n" in out


def test_replay_finds_an_edited_observation_and_a_changed_action(scripted, tmp_path, capsys):
    """The replay compares for real: one observation value nudged by 1e-3, or one action changed,
    gives a non-zero difference and exit status 1."""
    from binpick_sim.datasets.replay import replay
    from binpick_sim.rollouts import STEPS_DIR, main

    for what in ("observation", "action"):
        copy = _copy(scripted, tmp_path / what)
        (part,) = sorted((copy / STEPS_DIR).glob("*.parquet"))[:1]
        table = pq.read_table(part)
        rows = table.to_pylist()
        if what == "observation":
            column = next(c for c in table.column_names if c.startswith("observation.") and
                          isinstance(rows[3][c], list))
            rows[3][column][0] += 1e-3
        else:
            rows[2]["action"] = [-a for a in rows[2]["action"]]
        pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), part)
        result = replay(copy)
        assert result.max_difference > 0 and not result.exact, what
        if what == "observation":
            assert result.max_difference == pytest.approx(1e-3, rel=1e-3)
            assert result.worst[1] == rows[3]["step"] and result.worst[2] == column
        assert main(["--replay", str(copy)]) == 1
        assert "largest observation difference 0\n" not in capsys.readouterr().out


def test_replay_of_image_observations_is_exact(cluster, tmp_path):
    """PNG images (rgb, depth in 0.1 mm) compare as stored: a faithful replay is exact there too."""
    from binpick_sim.datasets.replay import replay
    from binpick_sim.rollouts import RunSpec, rollouts

    out = tmp_path / "images"
    rollouts(out, 1, 1, 11, RunSpec(observation="image", policy="random", max_steps=4), progress=False)
    result = replay(out)
    assert result.exact and result.steps == 4, (result.max_difference, result.mismatches)


def test_replay_of_a_folder_that_is_no_dataset_says_so(tmp_path, capsys):
    from binpick_sim.rollouts import main

    assert main(["--replay", str(tmp_path)]) == 2
    assert "not a rollouts dataset" in capsys.readouterr().err


# --- Minari ------------------------------------------------------------------------------------------

@pytest.fixture()
def minari_home(tmp_path, monkeypatch):
    """Minari's datasets in a temporary folder (never the user's ~/.minari)."""
    pytest.importorskip("minari", reason="needs minari (requirements-datasets.txt, installed by make test)")
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    return tmp_path / "minari"


def test_minari_export_opens_in_minari_with_the_parquet_actions_and_recovers_the_env(scripted, minari_home):
    import gymnasium as gym
    import minari

    from binpick_sim.datasets.minari import main
    from binpick_sim.rollouts import read_dataset

    assert main([str(scripted), "--id", "binpick_sim/franka-delta/scripted-v0"]) == 0
    dataset = minari.load_dataset("binpick_sim/franka-delta/scripted-v0")  # Minari's own reader
    steps, episodes = read_dataset(scripted)
    assert dataset.total_episodes == EPISODES and dataset.total_steps == len(steps)
    assert isinstance(dataset.observation_space, gym.spaces.Dict) and dataset.action_space.shape == (5,)
    spec = json.loads(dataset.storage.metadata["env_spec"])
    assert spec["id"] == "binpick_sim/FrankaDelta-v0" and spec["kwargs"] == {"backend": "direct", "observation": "state"}
    metadata = list(dataset.storage.get_episode_metadata(range(EPISODES)))
    assert [m["seed"] for m in metadata] == episodes["seed"].tolist() == list(range(SEED, SEED + EPISODES))
    for episode, recorded in zip(dataset.iterate_episodes(), episodes.itertuples(index=False)):
        rows = steps[steps.episode == recorded.episode]
        np.testing.assert_array_equal(episode.actions, np.stack(rows["action"]).astype(np.float32))
        n = len(rows)
        assert len(episode.observations["joint_positions"]) == n + 1  # the final observation too
        np.testing.assert_array_equal(episode.observations["joint_positions"][:n],
                                      np.stack(rows["observation.joint_positions"]))
        assert len(episode.infos["objects_left"]) == n + 1  # the reset info first
        assert episode.truncations[-1] and not episode.terminations.any()  # cut at --max-steps
        np.testing.assert_array_equal(episode.rewards, rows["reward"].to_numpy())
    env = dataset.recover_environment()
    try:
        assert env.spec.id == "binpick_sim/FrankaDelta-v0" and env.spec.max_episode_steps == 200
        first = next(dataset.iterate_episodes())
        observation, _ = env.reset(seed=int(metadata[0]["seed"]))
        np.testing.assert_array_equal(observation["joint_positions"], first.observations["joint_positions"][0])
        observation, *_ = env.step(first.actions[0])
        np.testing.assert_array_equal(observation["joint_positions"], first.observations["joint_positions"][1])
    finally:
        env.close()


def test_minari_export_refuses_a_dataset_that_does_not_replay_exactly(scripted, minari_home, tmp_path, capsys):
    import minari

    from binpick_sim.datasets.minari import main
    from binpick_sim.rollouts import STEPS_DIR

    copy = _copy(scripted, tmp_path / "edited")
    part = sorted((copy / STEPS_DIR).glob("*.parquet"))[0]
    table = pq.read_table(part)
    rows = table.to_pylist()
    rows[1]["observation.ee_position"][2] += 1e-3
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), part)
    assert main([str(copy), "--id", "binpick_sim/franka-delta/edited-v0"]) == 2
    assert "replays with an observation difference" in capsys.readouterr().err
    assert "binpick_sim/franka-delta/edited-v0" not in minari.list_local_datasets()


def test_rollouts_format_minari_writes_both_datasets(cluster, minari_home, tmp_path, capsys):
    import minari

    from binpick_sim.rollouts import main, read_dataset

    assert main(["--out", str(tmp_path / "d"), "--episodes", "2", "--seed", "9", "--policy", "random",
                 "--max-steps", "3", "--format", "minari", "--minari-id", "binpick_sim/franka-delta/random-v0"]) == 0
    assert "Minari dataset binpick_sim/franka-delta/random-v0: 2 episodes, 6 steps" in capsys.readouterr().out
    dataset = minari.load_dataset("binpick_sim/franka-delta/random-v0")
    steps, _ = read_dataset(tmp_path / "d")
    np.testing.assert_array_equal(np.concatenate([e.actions for e in dataset.iterate_episodes()]),
                                  np.stack(steps["action"]).astype(np.float32))


def test_readme_minari_example_runs_on_the_exported_dataset(scripted, minari_home):
    import re

    from binpick_sim.datasets.minari import main

    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("### Datasets: record with `rollouts`"):]
    example = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert main([str(scripted)]) == 0  # the default id, the one the example loads
    namespace = {}
    exec(example, namespace)
    assert namespace["weights"].shape == (4, 5)
