"""Rollouts on Ray (binpick_sim.rollouts) and the RLlib env registry, on one local Ray cluster.

The cluster is the module's (num_cpus=2, as CI has); its workers import this checkout and the test
folder (for rollout_policies). Episodes are capped short, except the 8 scripted-picker seeds.
"""
from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
NO_RAY = importlib.util.find_spec("ray") is None
needs_ray = pytest.mark.skipif(NO_RAY, reason="needs ray (pip install 'ray[data,tune]', pinned in requirements.txt)")


def run(out, episodes, workers, seed=0, local=None, **spec):
    from binpick_sim.rollouts import RunSpec, rollouts

    return rollouts(out, episodes, workers, seed, RunSpec(**spec), progress=False, local=local)


@pytest.fixture(scope="module")
def random_runs(cluster, tmp_path_factory):
    """The same 3 seeded random-policy episodes (seeds 5..7, 6 steps each) on 1 and on 2 Ray workers, and
    in this process without Ray ("here": what one worker gets when no cluster is named or running)."""
    folder = tmp_path_factory.mktemp("random")
    runs = {w: run(folder / f"w{w}", 3, w, seed=5, policy="random", max_steps=6) for w in (1, 2)}
    runs["here"] = run(folder / "here", 3, 1, seed=5, local=True, policy="random", max_steps=6)
    return runs


@needs_ray
def test_same_seed_same_dataset_whatever_the_workers(random_runs):
    import pandas as pd

    from binpick_sim.rollouts import read_dataset

    one, two, here = (read_dataset(random_runs[w].out) for w in (1, 2, "here"))
    for other in (two, here):
        pd.testing.assert_frame_equal(one[0], other[0])
        pd.testing.assert_frame_equal(one[1], other[1])
    summaries = {w: json.loads((random_runs[w].out / "dataset.json").read_text()) for w in (1, "here")}
    assert summaries[1]["ray"] and summaries["here"]["ray"] is None  # the run here started no Ray
    steps, episodes = one
    assert episodes["seed"].tolist() == [5, 6, 7] and episodes["episode"].tolist() == [0, 1, 2]
    assert steps.groupby("episode")["step"].apply(list).tolist() == [list(range(6))] * 3
    # different seeds gave different episodes (the seed reaches the scene and the policy)
    first = [np.stack(steps[steps.episode == k]["action"]) for k in range(3)]
    assert not np.allclose(first[0], first[1])
    assert random_runs[2].workers == 2 and random_runs[2].retries == 0


@needs_ray
@pytest.mark.slow
@pytest.mark.timeout(900)  # 200 resets: minutes on a busy 2-core machine
@pytest.mark.parametrize("episodes", [6, pytest.param(100, marks=pytest.mark.scale)])
def test_many_episodes_give_the_same_dataset_on_one_and_on_two_workers(cluster, tmp_path, episodes):
    """The manual's promise at scale: seeds 0..N-1, each episode's actions carrying the first object's
    pose (rollout_policies.object_poses), so equal datasets mean equal scenes. On two workers each env
    runs a different history of episodes before each one than on one worker. 6 episodes in `make test`
    (3 on each of the two workers), the issue's 100 in `make test-scale` (100 s more)."""
    import pandas as pd

    from binpick_sim.rollouts import read_dataset

    runs = [read_dataset(run(tmp_path / f"w{w}", episodes, w, seed=0, policy="rollout_policies:object_poses",
                             max_steps=1).out) for w in (1, 2)]
    pd.testing.assert_frame_equal(runs[0][0], runs[1][0])
    pd.testing.assert_frame_equal(runs[0][1], runs[1][1])
    assert runs[0][1]["seed"].tolist() == list(range(episodes))


@needs_ray
def test_dataset_reads_back_with_the_documented_schema_without_ray(random_runs):
    """pyarrow and pandas alone (ray made unimportable in a fresh interpreter), and Ray Data too."""
    import ray

    out = random_runs[2].out
    script = f"""
import sys, json
sys.modules["ray"] = None  # reading must not need Ray
import pyarrow.parquet as pq, pandas as pd
steps = pq.read_table({str(out / 'steps')!r})
episodes = pd.read_parquet({str(out / 'episodes')!r})
print(json.dumps({{"steps": {{f.name: str(f.type) for f in steps.schema}}, "rows": steps.num_rows,
                  "episodes": {{c: str(t) for c, t in episodes.dtypes.items()}}, "n": len(episodes)}}))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    read = json.loads(done.stdout.strip().splitlines()[-1])
    assert read["steps"] == {
        "episode": "int64", "step": "int64", "observation.ee_position": "list<element: float>",
        "observation.gripper_open": "int64", "observation.joint_positions": "list<element: float>",
        "observation.joint_velocities": "list<element: float>", "action": "list<element: float>",
        "reward": "double", "terminated": "bool", "truncated": "bool", "info": "string"}
    assert read["rows"] == 18 and read["n"] == 3
    assert read["episodes"] == {"episode": "int64", "seed": "int64", "success": "bool", "length": "int64",
                                "return": "float64", "terminated": "bool", "truncated": "bool", "info": "str"}

    from binpick_sim.rollouts import read_dataset

    steps, episodes = read_dataset(out)
    assert steps.iloc[-1]["truncated"] and not steps.iloc[0]["truncated"]  # --max-steps ends an episode truncated
    assert json.loads(steps.iloc[0]["info"])["objects_left"] > 0
    assert len(steps.iloc[0]["observation.joint_positions"]) == 9 and len(steps.iloc[0]["action"]) == 5
    assert ray.data.read_parquet(str(out / "steps")).count() == 18
    summary = json.loads((out / "dataset.json").read_text())
    assert summary["episodes"] == 3 and summary["steps"] == 18 and summary["retries"] == 0


def test_a_run_without_ray_never_imports_it(tmp_path):
    """One worker and no cluster: the run neither starts Ray nor imports it (a quarter of a second of a short
    run's start went to importing Ray only to ask whether it was connected)."""
    script = f"""
import sys
from binpick_sim.rollouts import RunSpec, rollouts
rollouts({str(tmp_path / 'd')!r}, 1, 1, 0, RunSpec(policy="random", max_steps=2), progress=False)
print("ray imported" if "ray" in sys.modules else "no ray")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "no ray"
    assert (tmp_path / "d" / "dataset.json").exists()


@needs_ray
def test_image_observations_are_lossless_pngs(tmp_path):
    """rgb exactly, depth to 0.1 mm (16-bit PNG), as the env observed them; through Parquet and back.
    (The episode runs here, in the code a worker runs, so the image render is not paid twice.)"""
    import cv2
    import gymnasium as gym
    import pyarrow.parquet as pq

    from binpick_sim.rollouts import (DEPTH_PNG_SCALE, EpisodeSpec, RunSpec, observation_columns, run_episode,
                                      steps_table)

    seen = []
    spec = RunSpec(env_id="binpick_sim/FrankaPosition-v0", policy="random", observation="image", max_steps=1)
    env = gym.make(spec.env_id, observation="image")
    try:
        def policy(env, seed):
            def act(observation):
                seen.append(observation)
                return env.action_space.sample()
            return act

        _, rows = run_episode(env, spec, EpisodeSpec(0, 3), policy)
    finally:
        env.close()
    pq.write_table(steps_table(rows), tmp_path / "steps.parquet")
    row = pq.read_table(tmp_path / "steps.parquet").to_pandas().iloc[0]
    rgb = cv2.cvtColor(cv2.imdecode(np.frombuffer(row["observation.rgb"], np.uint8), cv2.IMREAD_COLOR),
                       cv2.COLOR_BGR2RGB)
    depth = cv2.imdecode(np.frombuffer(row["observation.depth"], np.uint8), cv2.IMREAD_UNCHANGED)
    observation = seen[0]
    np.testing.assert_array_equal(rgb, observation["rgb"])
    assert depth.dtype == np.uint16 and depth.shape == observation["depth"].shape
    hit = np.isfinite(observation["depth"])
    np.testing.assert_allclose(depth[hit] / DEPTH_PNG_SCALE, observation["depth"][hit], atol=0.6 / DEPTH_PNG_SCALE)
    assert np.all(depth[~hit] == 0)

    # --images array: the raw bytes, exact
    from binpick_sim.rollouts import image_shapes

    arrays = steps_table([{**rows[0], **observation_columns(observation, "array")}]).to_pylist()[0]
    shapes = image_shapes(env.observation_space)
    for key in ("rgb", "depth"):
        layout = shapes[f"observation.{key}"]
        value = np.frombuffer(arrays[f"observation.{key}"], layout["dtype"]).reshape(layout["shape"])
        np.testing.assert_array_equal(value, observation[key])


@pytest.mark.parametrize("observation", ["privileged", "state_dict"])
def test_privileged_observations_are_recorded_as_the_env_gave_them(tmp_path, observation):
    """`--observation privileged`: one float column `observation.vector` (the flat vector in the manual's
    order); `state_dict`: one column per named array, flattened. Through Parquet and back, exact."""
    import gymnasium as gym
    import pyarrow.parquet as pq

    from binpick_sim.rollouts import EpisodeSpec, RunSpec, main, run_episode, steps_table

    seen = []
    spec = RunSpec(policy="scripted", observation=observation, max_steps=2)
    env = gym.make(spec.env_id, observation=observation)
    try:
        def policy(env, seed):
            from binpick_sim.envs.scripted import ScriptedPicker

            picker = ScriptedPicker(env)
            return lambda observation: (seen.append(observation), picker.act(observation))[1]

        _, rows = run_episode(env, spec, EpisodeSpec(0, 3), policy)
    finally:
        env.close()
    pq.write_table(steps_table(rows), tmp_path / "steps.parquet")
    table = pq.read_table(tmp_path / "steps.parquet").to_pandas()
    if observation == "privileged":
        assert [c for c in table.columns if c.startswith("observation")] == ["observation.vector"]
        for row, vector in zip(table["observation.vector"], seen):
            np.testing.assert_array_equal(np.asarray(row, np.float32), vector)
    else:
        for i, values in enumerate(seen):
            for key, value in values.items():
                np.testing.assert_array_equal(np.asarray(table[f"observation.{key}"][i], np.float32), np.ravel(value))
    assert len(seen) == 2
    with pytest.raises(SystemExit):  # the CLI offers these two, not the pixel modes
        main(["--observation", "rgbd", "--out", str(tmp_path / "x")])


# Seeds 280..287: the picker fails in one of them (286, 134 steps) and the others take 44-46 steps, so the comparison
# sees each kind of episode; the manual's 100 episodes would take minutes. (It picks 100 % of seeds 0..199 and
# 99.25 % of 0..399; each change to how piles settle (cell/scene.py: SETTLE_LOOK, MAX_PARTS) moves which seeds are
# the hard ones.)
SCRIPTED_SEEDS = list(range(280, 288))


@pytest.fixture(scope="module")
def scripted_run(cluster, tmp_path_factory):
    """The manual's demonstration command on SCRIPTED_SEEDS: `rollouts --episodes 8 --workers 2 --seed 280`."""
    from concurrent.futures import ThreadPoolExecutor

    from binpick_sim.rollouts import main, read_dataset

    out = tmp_path_factory.mktemp("scripted") / "demos"
    with ThreadPoolExecutor(1) as pool:  # the in-process reference meanwhile (the driver mostly waits)
        local = pool.submit(_in_process_scripted, SCRIPTED_SEEDS)
        assert main(["--episodes", str(len(SCRIPTED_SEEDS)), "--workers", "2", "--seed", str(SCRIPTED_SEEDS[0]),
                     "--out", str(out)]) == 0
        local = local.result()
    return out, read_dataset(out)[1], json.loads((out / "dataset.json").read_text()), local


def _in_process_scripted(seeds):
    import gymnasium as gym

    import binpick_sim.envs  # noqa: F401
    from binpick_sim.envs.scripted import run_episode

    env = gym.make("binpick_sim/FrankaDelta-v0", observation="state")
    try:
        return [run_episode(env, seed) for seed in seeds]
    finally:
        env.close()


@needs_ray
@pytest.mark.slow
def test_scripted_picker_success_matches_the_in_process_run(scripted_run):
    _, episodes, summary, local = scripted_run
    assert episodes["seed"].tolist() == SCRIPTED_SEEDS
    assert episodes["success"].tolist() == [r["grabs"] > 0 for r in local]
    assert not all(episodes["success"]) and len(set(episodes["length"])) > 2  # episodes of every kind
    assert episodes["length"].tolist() == [r["steps"] for r in local]
    assert summary["success_rate"] == sum(r["grabs"] > 0 for r in local) / len(SCRIPTED_SEEDS)
    assert summary["success_rate"] >= 0.5  # the picker works at all (bench: gym group)
    assert summary["workers"] == 2 and summary["retries"] == 0


@needs_ray
def test_readme_behaviour_cloning_example_runs_on_a_demonstration_dataset(scripted_run, tmp_path, monkeypatch):
    import re

    import manual

    section = manual.section("Scale-out on Ray")
    code = re.search(r"Behaviour cloning from it.*?```python\n(.*?)```", section, re.S).group(1)
    out, episodes, _, _ = scripted_run
    (tmp_path / "demos").symlink_to(out)
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(code, namespace)
    assert namespace["actions"].shape == (episodes["length"][episodes["success"]].sum(), 5)
    assert namespace["weights"].shape == (5, 5)


@needs_ray
@pytest.mark.slow
def test_ros_backend_workers_each_with_a_private_sim_give_the_direct_backend_episodes(random_runs, tmp_path):
    """Two workers, each with its own `sim` process (own namespace and ROS domain, DDS on loopback)."""
    from binpick_sim.rollouts import read_dataset

    result = run(tmp_path / "ros", 2, 2, seed=5, policy="random", max_steps=3, backend="ros")
    assert result.workers == 2 and result.retries == 0
    ros = read_dataset(result.out)[0]
    direct = read_dataset(random_runs[2].out)[0]
    direct = direct[(direct.episode < 2) & (direct.step < 3)].reset_index(drop=True)
    for column in ros.columns.drop(["truncated", "info"]):
        assert ros[column].apply(_plain).tolist() == direct[column].apply(_plain).tolist(), column


def _plain(value):
    return value.tolist() if isinstance(value, np.ndarray) else value


@needs_ray
def test_killed_worker_episode_is_rerun_once_without_loss_or_duplicate(cluster, random_runs, tmp_path):
    """The random runs' episodes again, but the worker running seed 6 SIGKILLs itself mid-episode."""
    import pandas as pd
    import rollout_policies

    from binpick_sim.rollouts import read_dataset

    assert rollout_policies.KILL_SEED == 6
    result = run(tmp_path / "killed", 3, 2, seed=5, policy="rollout_policies:kill_once", max_steps=6)
    assert (cluster / "killed-6").exists()  # the worker really was killed
    assert result.retries == 1 and result.retried == {1: 1}  # episode 1 (seed 6) started twice
    steps, episodes = read_dataset(tmp_path / "killed")
    assert steps.groupby("episode")["step"].apply(list).tolist() == [list(range(6))] * 3  # none lost, none twice
    undisturbed = read_dataset(random_runs[2].out)
    pd.testing.assert_frame_equal(steps, undisturbed[0])  # the re-run episode is what an undisturbed run gives
    pd.testing.assert_frame_equal(episodes, undisturbed[1])
    summary = json.loads((tmp_path / "killed" / "dataset.json").read_text())
    assert summary["retries"] == 1 and summary["retried_episodes"] == {"1": 1}
    assert not list(tmp_path.glob(".killed.partial-*"))


@needs_ray
def test_a_policy_error_stops_the_run_without_retries_and_writes_nothing(cluster, tmp_path):
    with pytest.raises(ValueError, match="action must be"):
        run(tmp_path / "broken", 2, 1, policy="rollout_policies:broken", max_steps=4)
    assert list(tmp_path.iterdir()) == []  # neither the dataset nor its temporary folder


@pytest.mark.parametrize("arguments, message", [
    ({"episodes": 0}, "episodes must be"),
    ({"seed": -1}, "seeds"),
    ({"seed": 2**63}, "seeds"),
    ({"workers": 0}, "workers must be"),
    ({"policy": "nope"}, "policy must be"),
    ({"policy": "os:no_such_function"}, "cannot be loaded"),
    ({"env_id": "binpick_sim/FrankaPosition-v0"}, "scripted policy drives"),
    ({"backend": "carrier-pigeon"}, "backend must be"),
    ({"max_steps": 0}, "max steps"),
])
def test_bad_arguments_are_refused_before_anything_starts(tmp_path, arguments, message):
    from binpick_sim.rollouts import RunSpec, rollouts

    keys = {"episodes", "seed", "workers"}
    spec = RunSpec(**{k: v for k, v in arguments.items() if k not in keys})
    counts = {"episodes": 2, "seed": 0, "workers": 1, **{k: v for k, v in arguments.items() if k in keys}}
    with pytest.raises(ValueError, match=message):
        rollouts(tmp_path / "out", counts["episodes"], counts["workers"], counts["seed"], spec)
    assert not (tmp_path / "out").exists()


def test_an_existing_dataset_is_never_overwritten(tmp_path, capsys):
    from binpick_sim.rollouts import main

    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    with pytest.raises(SystemExit) as exit_info:
        main(["--out", str(tmp_path / "out"), "--episodes", "1"])
    assert exit_info.value.code == 2 and "not empty" in capsys.readouterr().err
    assert (tmp_path / "out" / "keep.txt").read_text() == "mine"
    with pytest.raises(SystemExit):
        main(["--out", str(tmp_path / "new"), "--episodes", "nan"])


@needs_ray
def test_registered_env_creator_builds_a_working_env():
    """What RLlib's env runners do: look the id up in Tune's registry and call it with env_config."""
    from ray.tune.registry import ENV_CREATOR, _global_registry

    from binpick_sim.envs import ENV_IDS, rllib

    assert rllib.register() == list(ENV_IDS)
    creator = _global_registry.get(ENV_CREATOR, "binpick_sim/FrankaDelta-v0")
    env = creator(_env_context({"observation": "state"}))
    try:
        observation, _ = env.reset(seed=0)
        assert set(observation) == {"joint_positions", "joint_velocities", "ee_position", "gripper_open"}
        observation, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert env.observation_space.contains(observation) and "grabs" in info
    finally:
        env.close()
    with pytest.raises(ValueError, match="unknown env id"):
        rllib.register(["binpick_sim/Nope-v0"])


def _env_context(config: dict):
    """RLlib's EnvContext where RLlib is installed; the same dict otherwise (what the creator receives)."""
    try:
        from ray.rllib.env.env_context import EnvContext
    except ImportError:
        return dict(config)
    return EnvContext(config, worker_index=1)


@needs_ray
def test_rllib_ppo_trains_on_the_registered_env():
    missing = [m for m in ("ray.rllib", "torch") if _absent(m)]
    if missing:
        pytest.skip(f"RLlib training needs {', '.join(missing)} (a deep-learning framework), not installed")
    from ray.rllib.algorithms.ppo import PPOConfig

    from binpick_sim.envs import rllib

    rllib.register()
    config = (PPOConfig().environment("binpick_sim/FrankaDelta-v0", env_config={"observation": "state"})
              .env_runners(num_env_runners=0).training(train_batch_size=64, minibatch_size=32, num_epochs=1))
    algorithm = config.build()
    try:
        result = algorithm.train()
    finally:
        algorithm.stop()
    assert result["env_runners"]["num_env_steps_sampled"] >= 64


def _absent(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:  # not installed, or RLlib without its extras (dm-tree, ...)
        return True
    return False
