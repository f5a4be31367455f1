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

REPO = Path(__file__).resolve().parents[2]
SEED, EPISODES, MAX_STEPS = 3, 3, 25


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

    link = "https://example.org/binpick_sim/tree/0123abc"
    assert main([str(scripted), "--id", "binpick_sim/franka-delta/scripted-v0", "--author", "A Collector",
                 "--author-email", "collector@example.org", "--code-permalink", link]) == 0
    dataset = minari.load_dataset("binpick_sim/franka-delta/scripted-v0")  # Minari's own reader
    kept = dataset.storage.metadata
    assert (kept["author"], kept["author_email"], kept["code_permalink"]) == (
        {"A Collector"}, {"collector@example.org"}, link)
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


def _readme_example(marker: str) -> str:
    import re

    import manual

    section = manual.section("Datasets: record with `rollouts`")
    return re.search(r"```python\n(.*?)```", section[section.index(marker):], re.S).group(1)


def test_readme_dataset_examples_train_from_lerobot_minari_and_parquet(scripted, minari_home, tmp_path,
                                                                      monkeypatch):
    """The README's three five-line examples, as written, on the scripted episodes in each format: the
    Parquet dataset as `demos`, its LeRobot export as `demos-lerobot`, its Minari export under the default id."""
    import shutil

    from binpick_sim.datasets import lerobot, minari

    _needs("datasets")
    import datasets

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf"))  # not ~/.cache
    shutil.copytree(scripted, "demos")
    assert lerobot.main(["demos", "--out", "demos-lerobot"]) == 0
    assert minari.main(["demos"]) == 0  # the default id, the one the example loads
    # observation.state: 9 joint positions, 9 velocities, 3 gripper coordinates, gripper open; + 1 bias row
    for marker, shape in (("**Train with LeRobot**", (23, 5)), ("**Train with Minari**", (4, 5)),
                          ("**Your own loader**", (4, 5))):
        namespace = {}
        exec(_readme_example(marker), namespace)
        assert namespace["weights"].shape == shape and np.isfinite(namespace["weights"]).all(), marker


# --- LeRobot v3.0 ------------------------------------------------------------------------------------

def _needs(module: str):
    import importlib.util

    if importlib.util.find_spec(module) is None:
        pytest.skip(f"needs {module} (requirements-datasets.txt, installed by make test)")


@pytest.fixture(scope="module")
def images(cluster, tmp_path_factory):
    """Two short FrankaDelta-v0 image episodes (64x64 rgb, random actions) as a rollouts dataset."""
    from binpick_sim.rollouts import RunSpec, rollouts

    out = tmp_path_factory.mktemp("images") / "dataset"
    rollouts(out, 2, 1, 21, RunSpec(observation="image", policy="random", max_steps=6), progress=False)
    return out


def _doctor(folder: Path) -> tuple[int, dict]:
    """lerobot-doctor (PyPI; an independent v3.0 checker that needs no torch) in CI mode: exit status and report."""
    import shutil
    import subprocess
    import sys

    doctor = shutil.which("lerobot-doctor", path=str(Path(sys.executable).parent)) or "lerobot-doctor"
    done = subprocess.run([doctor, "check", str(folder), "--ci"], capture_output=True, text=True, timeout=120)
    return done.returncode, json.loads(done.stdout)


def _format_problems(report: dict) -> list[str]:
    """Failures anywhere, and warnings of the checks about the layout (not the data's quality: episodes of 6
    frames are 'too short' for ACT, a random policy's rewards are all 0)."""
    layout = {"Metadata & Format Compliance", "Video Integrity", "Temporal Consistency", "Portability"}
    return [f"{c['name']}: {m['message']}" for c in report["checks"] for m in c["messages"]
            if m["severity"] == "FAIL" or (m["severity"] == "WARN" and c["name"] in layout)]


def _hf_frames(folder: Path, cache: Path):
    """The data files through Hugging Face `datasets`' own parquet loader."""
    import datasets

    files = sorted(str(p) for p in (folder / "data").glob("chunk-*/file-*.parquet"))
    return datasets.load_dataset("parquet", data_files=files, split="train", cache_dir=str(cache))


@pytest.mark.parametrize("mode", ["mp4", "png"])
def test_lerobot_export_passes_lerobot_doctor_and_loads_in_hf_datasets(images, tmp_path, mode):
    for module in ("datasets", "av", "lerobot_doctor"):
        _needs(module)
    import av
    import cv2
    import pandas as pd

    from binpick_sim.datasets.lerobot import main
    from binpick_sim.rollouts import read_dataset

    out = tmp_path / "lerobot"
    assert main([str(images), "--out", str(out), "--images", mode]) == 0
    steps, episodes = read_dataset(images)
    n = len(steps)
    info = json.loads((out / "meta/info.json").read_text())
    # the v3.0 layout as LeRobot's own writer makes it (lerobot/datasets/utils.py)
    assert info["codebase_version"] == "v3.0" and info["fps"] == 10  # 24 physics steps of 1/240 s per env step
    assert info["robot_type"] == "franka_panda" and info["total_episodes"] == 2 and info["total_frames"] == n
    assert info["total_tasks"] == 1 and info["splits"] == {"train": "0:2"} and info["chunks_size"] == 1000
    assert info["data_path"] == "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
    assert info["video_path"] == ("videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
                                  if mode == "mp4" else None)
    features = info["features"]
    for name in ("timestamp", "frame_index", "episode_index", "index", "task_index"):
        assert features[name] == {"dtype": "float32" if name == "timestamp" else "int64", "shape": [1], "names": None}
    assert features["action"] == {"dtype": "float32", "shape": [5], "names": ["dx", "dy", "dz", "dyaw", "gripper"]}
    assert features["observation.ee_position"]["shape"] == [3] and features["observation.state"]["shape"] == [4]
    assert features["next.reward"]["dtype"] == "float32" and features["next.done"]["dtype"] == "bool"
    rgb = features["observation.images.rgb"]
    assert rgb["dtype"] == ("video" if mode == "mp4" else "image") and rgb["shape"] == [64, 64, 3]
    assert all(set(f) >= {"dtype", "shape", "names"} for f in features.values())
    for path in ("meta/stats.json", "meta/tasks.parquet", "meta/episodes/chunk-000/file-000.parquet",
                 "data/chunk-000/file-000.parquet"):
        assert (out / path).is_file(), path

    status, report = _doctor(out)
    assert status == 0 and _format_problems(report) == [], _format_problems(report)

    frames = _hf_frames(out, tmp_path / "hf")
    assert len(frames) == n and frames.features["action"].length == 5
    np.testing.assert_array_equal(np.asarray(frames["action"]), np.stack(steps["action"]).astype(np.float32))
    np.testing.assert_array_equal(frames["episode_index"], steps["episode"])
    np.testing.assert_array_equal(frames["frame_index"], steps["step"])
    np.testing.assert_array_equal(frames["index"], np.arange(n))
    np.testing.assert_allclose(frames["timestamp"], steps["step"] / 10.0, rtol=1e-6)
    np.testing.assert_array_equal(frames["next.reward"], steps["reward"].astype(np.float32))
    np.testing.assert_array_equal(frames["next.done"], steps["terminated"] | steps["truncated"])
    recorded = [cv2.cvtColor(cv2.imdecode(np.frombuffer(b, np.uint8), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
                for b in steps["observation.rgb"]]

    tasks = pd.read_parquet(out / "meta/tasks.parquet")
    assert tasks.index.name == "task" and tasks["task_index"].tolist() == [0]
    meta = pd.read_parquet(out / "meta/episodes/chunk-000/file-000.parquet")
    assert meta["episode_index"].tolist() == [0, 1] and meta["length"].tolist() == episodes["length"].tolist()
    assert meta["dataset_from_index"].tolist() == [0, episodes["length"][0]] and meta["dataset_to_index"].tolist()[-1] == n
    assert meta["seed"].tolist() == [21, 22] and [list(t) for t in meta["tasks"]] == [[tasks.index[0]]] * 2
    stats = json.loads((out / "meta/stats.json").read_text())
    np.testing.assert_allclose(stats["action"]["mean"], np.stack(steps["action"]).mean(0), rtol=1e-5)
    assert stats["observation.images.rgb"]["mean"] and np.shape(stats["observation.images.rgb"]["mean"]) == (3, 1, 1)

    if mode == "png":  # lossless: the images as recorded, pixel for pixel
        for image, expected in zip(frames["observation.images.rgb"], recorded):
            np.testing.assert_array_equal(np.asarray(image), expected)
        return
    assert "observation.images.rgb" not in frames.features  # video frames live in the MP4, not the data file
    key = "videos/observation.images.rgb"
    assert meta[f"{key}/from_timestamp"].tolist() == [0.0, episodes["length"][0] / 10.0]
    with av.open(str(out / "videos/observation.images.rgb/chunk-000/file-000.mp4")) as container:
        stream = container.streams.video[0]
        assert stream.codec_context.name == "h264" and stream.average_rate == 10
        decoded = [(float(f.pts * f.time_base), f.to_ndarray(format="rgb24")) for f in container.decode(stream)]
    assert len(decoded) == n
    # frame k of episode e sits at from_timestamp(e) + k / fps, as LeRobot's decoder looks it up
    for row, (stamp, frame) in enumerate(decoded):
        episode, step = steps["episode"][row], steps["step"][row]
        assert stamp == pytest.approx(meta[f"{key}/from_timestamp"][episode] + step / 10.0)
        assert np.abs(frame.astype(float) - recorded[row]).mean() < 6  # lossy H.264, the same picture


def test_lerobot_doctor_catches_a_broken_export(images, tmp_path):
    """The checker is not blind: a LeRobot dataset whose totals lie, or whose video is gone, fails it."""
    for module in ("datasets", "av", "lerobot_doctor"):
        _needs(module)
    import shutil

    from binpick_sim.datasets.lerobot import to_lerobot

    good = to_lerobot(images, tmp_path / "good")
    lying = shutil.copytree(good, tmp_path / "lying")
    info = json.loads((lying / "meta/info.json").read_text())
    (lying / "meta/info.json").write_text(json.dumps({**info, "total_frames": info["total_frames"] + 3}))
    no_video = shutil.copytree(good, tmp_path / "no_video")
    shutil.rmtree(no_video / "videos")
    for broken, message in ((lying, "total_frames"), (no_video, "Video files missing")):
        status, report = _doctor(broken)
        assert status == 1 and any(message in p for p in _format_problems(report)), _format_problems(report)


def test_lerobot_export_bad_input_writes_nothing(images, scripted, tmp_path, capsys):
    _needs("datasets")
    from binpick_sim.datasets.lerobot import main
    from binpick_sim.rollouts import main as rollouts_main

    assert main([str(tmp_path), "--out", str(tmp_path / "x")]) == 2
    assert "not a rollouts dataset" in capsys.readouterr().err and not (tmp_path / "x").exists()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    assert main([str(scripted), "--out", str(tmp_path / "full")]) == 2
    assert "not empty" in capsys.readouterr().err and os.listdir(tmp_path / "full") == ["keep.txt"]
    with pytest.raises(SystemExit):
        rollouts_main(["--out", str(tmp_path / "y"), "--format", "lerobot", "--images", "array"])
    assert "--images array is not a choice with --format lerobot" in capsys.readouterr().err
    assert not (tmp_path / "y").exists() and sorted(os.listdir(tmp_path)) == ["full"]


ONE_OBJECT = REPO / "config" / "scene_one_object.yaml"  # the cheap scene: a reset in ~0.1 s, not ~1 s


@pytest.mark.slow  # two rollouts runs and a replay: 6 episodes ~15 s on the shared 2 cores, 20 ~45 s (test-scale)
@pytest.mark.parametrize("episodes", [6, pytest.param(20, marks=pytest.mark.scale)])
def test_the_same_scripted_episodes_give_the_same_actions_in_every_format(cluster, minari_home, tmp_path, capsys,
                                                                          episodes):
    """Scripted-picker episodes (seeds 40.., 6 steps each, the one-object scene) recorded by `rollouts`
    twice: as Parquet with its Minari export (by exact replay), and as LeRobot v3.0; each read back by its
    own ecosystem's reader (pandas, minari.load_dataset, Hugging Face datasets)."""
    for module in ("datasets", "av"):
        _needs(module)
    import minari
    import pandas as pd

    from binpick_sim.rollouts import main

    common = ["--episodes", str(episodes), "--workers", "2", "--seed", "40", "--max-steps", "6",
              "--config", str(ONE_OBJECT)]
    assert main(["--out", str(tmp_path / "parquet"), *common, "--format", "minari",
                 "--minari-id", f"binpick_sim/franka-delta/seeds-40-{episodes}-v0"]) == 0
    assert main(["--out", str(tmp_path / "lerobot"), *common, "--format", "lerobot"]) == 0
    assert sorted(os.listdir(tmp_path)) == ["lerobot", "minari", "parquet"]  # the LeRobot run's source is gone
    capsys.readouterr()

    steps = pd.read_parquet(tmp_path / "parquet" / "steps").sort_values(["episode", "step"])
    parquet = [np.stack(steps[steps.episode == k]["action"]).astype(np.float32) for k in range(episodes)]
    dataset = minari.load_dataset(f"binpick_sim/franka-delta/seeds-40-{episodes}-v0")
    from_minari = [episode.actions for episode in dataset.iterate_episodes()]
    frames = _hf_frames(tmp_path / "lerobot", tmp_path / "hf").with_format("numpy")
    indices, actions = np.asarray(frames["episode_index"]), np.asarray(frames["action"])
    from_lerobot = [actions[indices == k] for k in range(episodes)]
    assert len(parquet) == len(from_minari) == len(from_lerobot) == episodes
    assert sum(len(a) for a in parquet) == 6 * episodes and np.abs(np.concatenate(parquet)).max() > 0  # real actions
    for k in range(episodes):
        np.testing.assert_array_equal(from_minari[k], parquet[k], err_msg=f"minari episode {k}")
        np.testing.assert_array_equal(from_lerobot[k], parquet[k], err_msg=f"lerobot episode {k}")
    # the scene file travels with the dataset: Minari's env and LeRobot's fps are the one-object scene's
    assert json.loads((tmp_path / "parquet" / "dataset.json").read_text())["env_options"] == {
        "config_file": str(ONE_OBJECT)}
    assert json.loads((tmp_path / "lerobot" / "meta" / "info.json").read_text())["fps"] == 25  # 20 x 1/500 s
