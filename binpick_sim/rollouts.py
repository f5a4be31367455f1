"""Parallel rollouts on Ray: N episodes of a policy on W workers, written as a Parquet dataset.

Why Ray rather than anything home-made: it is what RL users already run (RLlib's env runners, Ray
Data), it schedules across processes and machines alike (`--address auto` joins a cluster), and it
restarts a dead worker and re-runs its task, which is what keeps a dataset whole when a worker dies.

How a run stays deterministic and whole:
- episode k (0..N-1) always runs with seed S+k and a policy made fresh for that episode, so what an
  episode contains depends on (S, k, policy) only, never on which worker ran it or what ran before;
- each worker is a Ray actor owning its env; it returns the finished episode to the driver (the
  steps as one Arrow table in Ray's object store, a small summary by value). Only the driver writes,
  once every episode is in, into a temporary folder renamed to `--out` at the end: a worker killed
  mid-episode leaves nothing behind, Ray restarts it and re-runs that episode (`max_restarts`,
  `max_task_retries`), and the dataset holds each episode exactly once;
- a tiny counter actor records every episode start, so the summary reports retries = starts - N.
"""
from __future__ import annotations

import argparse
import copy
import importlib
import json
import math
import os
import shutil
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

DEFAULT_ENV = "binpick_sim/FrankaDelta-v0"
POLICIES = ("scripted", "random")
IMAGE_FORMATS = ("png", "array")
FORMATS = ("parquet", "minari", "lerobot")
DEPTH_PNG_SCALE = 10000.0  # depth PNGs are uint16 in units of 0.1 mm; 0 = no return (inf, or beyond 6.55 m)
STEPS_DIR, EPISODES_DIR, SUMMARY_FILE = "steps", "episodes", "dataset.json"
OBSERVATIONS = ("state", "image", "privileged", "state_dict")  # --observation (README "Learning")
FLAT_KEY = "vector"  # a flat observation's (`privileged`) column: observation.vector
MAX_SEED = 2**32 - 1  # the world seeds numpy's legacy generator, which takes 32-bit seeds


# --- policies ------------------------------------------------------------------------------------
# A policy factory is called once per episode as `factory(env, seed)` and returns `act(observation)
# -> action`. Made per episode, a policy cannot carry state from one episode into the next, which is
# what makes an episode independent of the worker that runs it.

def scripted(env, seed: int):
    """The scripted picker (binpick_sim.envs.scripted); needs FrankaDelta-v0."""
    from .envs.scripted import ScriptedPicker

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


# --- one episode as rows ------------------------------------------------------------------------

def _is_image(key: str, value) -> bool:
    return key in ("rgb", "depth") and np.ndim(value) >= 2


def encode_image(key: str, value: np.ndarray, image_format: str):
    """PNG bytes (rgb as 8-bit colour, depth as 16-bit 0.1 mm) or the raw array bytes (C order)."""
    import cv2

    if image_format == "array":
        return np.ascontiguousarray(value).tobytes()
    if key == "depth":
        depth = np.asarray(value, dtype=np.float64) * DEPTH_PNG_SCALE
        depth = np.where(np.isfinite(depth) & (depth < 65535.5), np.round(depth), 0).astype(np.uint16)
        ok, data = cv2.imencode(".png", depth)
    else:
        ok, data = cv2.imencode(".png", cv2.cvtColor(np.asarray(value, np.uint8), cv2.COLOR_RGB2BGR))
    if not ok:
        raise RuntimeError(f"PNG encoding of {key} failed")
    return data.tobytes()


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


def info_json(info: dict) -> str:
    """`info` as JSON. `episode_time` is rounded to the nanosecond: the world's clock runs on across
    episodes, so its difference's last bits depend on what the worker ran before, which must not show."""
    if isinstance(info.get("episode_time"), float):
        info = {**info, "episode_time": round(info["episode_time"], 9)}
    return json.dumps(info, sort_keys=True, default=_json_default)


def observation_columns(observation: dict, image_format: str) -> dict:
    """One observation as dataset columns: `observation.<key>`; vectors as lists, images as bytes. A flat
    observation (not a dict: `privileged`) is one column, `observation.vector`."""
    columns = {}
    if not isinstance(observation, dict):
        observation = {FLAT_KEY: observation}
    for key in sorted(observation):
        value = observation[key]
        if _is_image(key, value):
            columns[f"observation.{key}"] = encode_image(key, value, image_format)
        elif np.ndim(value) == 0:
            columns[f"observation.{key}"] = value.item() if isinstance(value, np.generic) else value
        else:
            columns[f"observation.{key}"] = np.asarray(value).ravel().tolist()
    return columns


def image_shapes(observation_space) -> dict:
    """Shape and dtype of every image field, for reading `array` images back."""
    shapes = {}
    for key, space in getattr(observation_space, "spaces", {}).items():
        if key in ("rgb", "depth") and len(space.shape) >= 2:
            shapes[f"observation.{key}"] = {"shape": list(space.shape), "dtype": np.dtype(space.dtype).name}
    return shapes


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


def run_episode(env, spec: RunSpec, episode: EpisodeSpec, factory) -> tuple[dict, list[dict]]:
    """Play one episode; return its summary and its rows (observation before the action, the action,
    what the step returned)."""
    observation, info = env.reset(seed=episode.seed)
    act = factory(env.unwrapped, episode.seed)
    from .envs.franka import episode_limit

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


def steps_table(rows: list[dict]):
    """The rows of one episode as an Arrow table with fixed column types (same schema for every episode)."""
    import pyarrow as pa

    fields = []
    for name in rows[0]:
        value = rows[0][name]
        if name in ("episode", "step"):
            kind = pa.int64()
        elif name == "info":
            kind = pa.string()
        elif isinstance(value, bool):
            kind = pa.bool_()
        elif isinstance(value, bytes):
            kind = pa.binary()
        elif isinstance(value, int):
            kind = pa.int64()
        elif isinstance(value, float):
            kind = pa.float64()
        else:
            kind = pa.list_(pa.float32())
        fields.append(pa.field(name, kind))
    schema = pa.schema(fields)
    return pa.Table.from_pydict({f.name: [r[f.name] for r in rows] for f in schema}, schema=schema)


# --- Ray actors ------------------------------------------------------------------------------------

def _ray():
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - ray is pinned in requirements.txt
        raise SystemExit("binpick_sim.rollouts needs Ray: pip install 'ray[data,tune]'") from exc
    return ray


class EpisodeCounter:
    """Counts episode starts across workers (a started episode that is started again was re-run)."""

    def __init__(self):
        self.starts: dict[int, int] = {}

    def start(self, episode: int) -> int:
        self.starts[episode] = self.starts.get(episode, 0) + 1
        return self.starts[episode]

    def counts(self) -> dict[int, int]:
        return dict(self.starts)


class RolloutWorker:
    """One Ray actor: owns one env (and, on the ROS backend, that env's private `sim` process)."""

    def __init__(self, spec: RunSpec, counter: str):
        import gymnasium as gym
        import ray

        from . import envs  # noqa: F401  (registers the env ids)

        self.spec = spec
        self.counter = ray.get_actor(counter)  # by name: a restarted worker finds the same counter
        self.factory = load_policy(spec.policy)
        self.env = gym.make(spec.env_id, backend=spec.backend, observation=spec.observation, **spec.env_options)

    def info(self) -> dict:
        config = self.env.unwrapped.config  # the control period: LeRobot's fps
        return {"pid": os.getpid(), "images": image_shapes(self.env.observation_space),
                "control_period_s": config.simulation.timestep * config.task.steps_per_action}

    def run(self, episode: EpisodeSpec):
        """(summary, steps table): two return values, so the driver can fetch the summary alone."""
        import ray

        ray.get(self.counter.start.remote(episode.index))
        summary, rows = run_episode(self.env, self.spec, episode, self.factory)
        summary["node"] = ray.get_runtime_context().get_node_id()  # the driver keeps it out of the dataset
        return summary, steps_table(rows)

    def close(self) -> None:
        self.env.close()


@dataclass
class RunResult:
    out: Path
    episodes: list[dict]
    steps: int
    retries: int
    retried: dict[int, int]
    wall_s: float
    workers: int
    nodes: dict[int, str] = field(default_factory=dict)  # episode -> id of the Ray node that ran it

    @property
    def success_rate(self) -> float:
        return sum(e["success"] for e in self.episodes) / len(self.episodes)

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.wall_s if self.wall_s > 0 else math.inf


def _check(spec: RunSpec, workers: int, episodes: int, seed: int) -> None:
    from .envs import ENV_IDS

    if spec.env_id not in ENV_IDS:
        raise ValueError(f"env must be one of {sorted(ENV_IDS)}, got {spec.env_id!r}")
    if spec.backend not in ("direct", "ros"):
        raise ValueError(f"backend must be 'direct' or 'ros', got {spec.backend!r}")
    if spec.observation not in OBSERVATIONS:
        raise ValueError(f"observation must be one of {OBSERVATIONS}, got {spec.observation!r}")
    if spec.image_format not in IMAGE_FORMATS:
        raise ValueError(f"images must be one of {IMAGE_FORMATS}, got {spec.image_format!r}")
    if spec.policy == "scripted" and spec.env_id != DEFAULT_ENV:
        raise ValueError(f"the scripted policy drives {DEFAULT_ENV} only, not {spec.env_id}")
    load_policy(spec.policy)
    config_file = spec.env_options.get("config_file")
    if config_file is not None and not Path(config_file).is_file():
        raise ValueError(f"scene file {config_file} does not exist")
    if spec.max_steps is not None and not 1 <= spec.max_steps <= 10**9:
        raise ValueError(f"max steps must be between 1 and 1e9, got {spec.max_steps}")
    if not 1 <= workers <= 10_000:
        raise ValueError(f"workers must be between 1 and 10000, got {workers}")
    if not 1 <= episodes <= 10**9:
        raise ValueError(f"episodes must be between 1 and 1e9, got {episodes}")
    if not 0 <= seed or seed + episodes - 1 > MAX_SEED:
        raise ValueError(f"seeds seed..seed+episodes-1 must lie in 0..{MAX_SEED}, got seed {seed}, {episodes} episodes")


class NotWritable(ValueError):
    """`--out` cannot be written; `main` says so in one line and exits 2."""


def check_writable(out: Path) -> None:
    """NotWritable unless a folder can be made beside `out` (where the dataset is written and then renamed
    to `out`): found before any episode runs, not after all of them."""
    probe = out.parent / f".{out.name}.probe-{uuid.uuid4().hex[:8]}"
    if out.parent.exists() and not out.parent.is_dir():
        raise NotWritable(f"cannot write --out {out}: {out.parent} is not a folder (nothing was run)")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        probe.mkdir()
        probe.rmdir()
    except OSError as exc:
        raise NotWritable(f"cannot write --out {out}: {exc.strerror or exc} (nothing was run)") from None


def rollouts(out: str | Path, episodes: int, workers: int = 1, seed: int = 0, spec: RunSpec | None = None,
             address: str | None = None, max_retries: int = 3, progress: bool | None = None) -> RunResult:
    """Run `episodes` episodes (seeds seed..seed+episodes-1) on `workers` Ray actors; write the dataset.

    Uses the Ray cluster this process is already connected to, else joins `address`, else starts a
    local one with `workers` CPUs (and shuts it down at the end).
    """
    from tqdm import tqdm

    ray = _ray()
    spec = spec or RunSpec()
    _check(spec, workers, episodes, seed)
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FileExistsError(f"{out} exists and is not empty: choose a new --out (nothing was written)")
    if not 0 <= max_retries <= 100:
        raise ValueError(f"max retries must be between 0 and 100, got {max_retries}")
    check_writable(out)
    workers = min(workers, episodes)

    started = False
    if not ray.is_initialized():
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # a local run sends nothing anywhere
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(address="local", num_cpus=workers, include_dashboard=False, log_to_driver=False)
        started = True
    temporary = out.parent / f".{out.name}.partial-{uuid.uuid4().hex[:8]}"
    pool, owned = [], []  # the workers; every actor this run started
    try:
        counter_name = f"binpick_rollouts_counter_{uuid.uuid4().hex}"
        # On the driver's node: a counter on a node that dies would take every worker's bookkeeping with it.
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        driver_node = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        counter = ray.remote(num_cpus=0)(EpisodeCounter).options(name=counter_name,
                                                                 scheduling_strategy=driver_node).remote()
        owned.append(counter)
        actor = ray.remote(num_cpus=1, max_restarts=max_retries, max_task_retries=max_retries)(RolloutWorker)
        domain = int(os.environ.get("ROS_DOMAIN_ID", "0"))
        for index in range(workers):
            # Each worker's private sim keeps DDS on this machine, in a ROS domain of its own.
            env_vars = {"ROS_AUTOMATIC_DISCOVERY_RANGE": os.environ.get("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST"),
                        "ROS_DOMAIN_ID": str((domain + 1 + index) % 102)}
            options = {"runtime_env": {"env_vars": env_vars}} if spec.backend == "ros" else {}
            # SPREAD: on a cluster, the workers go to as many nodes as have a free CPU (Ray's default packs
            # them onto the driver's node first); one node changes nothing.
            pool.append(actor.options(scheduling_strategy="SPREAD", **options).remote(spec, counter_name))
            owned.append(pool[-1])
        worker_info = ray.get(pool[0].info.remote())
        images = worker_info["images"]

        start = time.perf_counter()
        queue = [EpisodeSpec(k, seed + k) for k in range(episodes)]
        queue.reverse()
        running: dict = {}  # summary ref -> (worker index, table ref)
        summaries: dict[int, dict] = {}
        tables: dict[int, object] = {}
        nodes: dict[int, str] = {}
        steps = 0

        def submit(index: int) -> None:
            episode = queue.pop()
            summary_ref, table_ref = pool[index].run.options(num_returns=2).remote(episode)
            running[summary_ref] = (index, table_ref)

        for index in range(workers):
            for _ in range(2):  # two in hand, so a worker never waits on the driver between episodes
                if queue:
                    submit(index)
        hidden = None if progress is None else not progress  # None: tqdm shows it on a terminal only
        with tqdm(total=episodes, desc="rollouts", unit="episode", disable=hidden) as bar:
            while running:
                done, _ = ray.wait(list(running), num_returns=1)
                index, table_ref = running.pop(done[0])
                summary = ray.get(done[0])
                nodes[summary["episode"]] = summary.pop("node")
                summaries[summary["episode"]] = summary
                tables[summary["episode"]] = table_ref
                steps += summary["length"]
                elapsed = time.perf_counter() - start
                bar.set_postfix_str(f"{steps / elapsed:,.0f} steps/s" if elapsed > 0 else "")
                bar.update()
                if queue:
                    submit(index)
        wall = time.perf_counter() - start
        counts = ray.get(counter.counts.remote())
        # The workers hold the CPUs Ray Data's write tasks need; their results live on in the object store.
        _close(ray, pool)
        _kill(ray, owned)

        ordered = [summaries[k] for k in range(episodes)]
        write_dataset(temporary, [tables[k] for k in range(episodes)], ordered)
        retried = {k: n - 1 for k, n in sorted(counts.items()) if n > 1}
        result = RunResult(out, ordered, steps, sum(counts.values()) - episodes, retried, wall, workers,
                           dict(sorted(nodes.items())))
        record = summary_record(result, spec, seed, images)
        record["control_period_s"] = worker_info["control_period_s"]
        (temporary / SUMMARY_FILE).write_text(json.dumps(record, indent=2))
        if out.exists():
            out.rmdir()
        temporary.rename(out)
        return result
    finally:
        _close(ray, pool)
        _kill(ray, owned)
        if temporary.exists():
            shutil.rmtree(temporary, ignore_errors=True)
        if started:
            ray.shutdown()


def _close(ray, workers: list, timeout: float = 60.0) -> None:
    """Close the workers' envs (a ROS-backend env stops its `sim` process); a dead one is left to Ray."""
    closing = [worker.close.remote() for worker in workers]
    try:
        ray.wait(closing, num_returns=len(closing), timeout=timeout)
    except Exception:  # noqa: BLE001 - best effort: the actors are killed next in any case
        pass
    workers.clear()


def _kill(ray, actors: list) -> None:
    while actors:
        ray.kill(actors.pop())


def write_dataset(folder: Path, table_refs: list, episodes: list[dict]) -> None:
    """Steps and episodes as Parquet through Ray Data, in episode order, on the driver's machine (on a
    cluster the write tasks would otherwise land on any node, each writing to its own disk)."""
    import pyarrow as pa
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True
    context.enable_progress_bars = False
    here = {"scheduling_strategy": NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)}
    ray.data.from_arrow_refs(table_refs).write_parquet(str(folder / STEPS_DIR), ray_remote_args=here)
    schema = pa.schema([("episode", pa.int64()), ("seed", pa.int64()), ("success", pa.bool_()),
                        ("length", pa.int64()), ("return", pa.float64()), ("terminated", pa.bool_()),
                        ("truncated", pa.bool_()), ("info", pa.string())])
    table = pa.Table.from_pylist(episodes, schema=schema)
    ray.data.from_arrow(table).write_parquet(str(folder / EPISODES_DIR), ray_remote_args=here)


def summary_record(result: RunResult, spec: RunSpec, seed: int, images: dict) -> dict:
    import ray

    return {"env": spec.env_id, "backend": spec.backend, "observation": spec.observation,
            "image_format": spec.image_format, "images": images, "depth_png_scale": DEPTH_PNG_SCALE,
            "policy": spec.policy, "max_steps": spec.max_steps, "env_options": spec.env_options, "seed": seed, "episodes": len(result.episodes),
            "workers": result.workers, "steps": result.steps, "success_rate": result.success_rate,
            "retries": result.retries, "retried_episodes": {str(k): n for k, n in result.retried.items()},
            "episode_nodes": {str(k): node for k, node in result.nodes.items()},
            "wall_s": result.wall_s, "steps_per_s": result.steps_per_s, "ray": ray.__version__}


def read_dataset(folder: str | Path):
    """(steps, episodes) as pandas DataFrames sorted by episode and step, with pyarrow alone (no Ray)."""
    import pyarrow.parquet as pq

    folder = Path(folder)
    steps = pq.read_table(folder / STEPS_DIR).to_pandas().sort_values(["episode", "step"], ignore_index=True)
    episodes = pq.read_table(folder / EPISODES_DIR).to_pandas().sort_values("episode", ignore_index=True)
    return steps, episodes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rollouts", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="dataset folder to create (must not exist or be empty)")
    parser.add_argument("--replay", type=Path, metavar="DATASET", help="instead of recording: re-run each episode "
                        "of DATASET from its seed with its recorded actions, print the largest observation "
                        "difference, exit 1 unless it is 0 (and rewards and ends agree)")
    parser.add_argument("--episodes", type=int, default=10, help="number of episodes N (default 10)")
    parser.add_argument("--workers", type=int, default=1, help="Ray workers W, one env each (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="episode k runs with seed SEED+k (default 0)")
    parser.add_argument("--policy", default="scripted",
                        help="scripted | random | module:function, a factory function(env, seed) -> act(observation)")
    parser.add_argument("--env", default=DEFAULT_ENV, help=f"gym id (default {DEFAULT_ENV})")
    parser.add_argument("--backend", default="direct", choices=("direct", "ros"), help="env backend (default direct)")
    parser.add_argument("--observation", default="state", choices=OBSERVATIONS,
                        help="default state; privileged / state_dict add the objects and bins (README 'Learning')")
    parser.add_argument("--images", default=None, choices=(*IMAGE_FORMATS, "mp4"),
                        help="how image observations are stored: parquet: png (default) or array (raw bytes); "
                        "lerobot: mp4 (default, rgb as H.264 video) or png")
    parser.add_argument("--max-steps", type=int, default=None, help="cap on env steps per episode")
    parser.add_argument("--config", type=Path, default=None, help="scene file (default the package's config/scene.yaml); "
                        "recorded in dataset.json, so --replay and the exports use it too")
    parser.add_argument("--format", default="parquet", choices=FORMATS,
                        help="parquet: the dataset at --out (default); minari: that, then exported by exact replay "
                        "as a Minari dataset (binpick_sim.datasets.minari); lerobot: a LeRobot v3.0 dataset at --out "
                        "instead (binpick_sim.datasets.lerobot); both need requirements-datasets.txt")
    parser.add_argument("--task", default=None, help="the task text of a LeRobot dataset (default names env and policy)")
    parser.add_argument("--minari-id", default=None, help="Minari dataset id with --format minari "
                        "(default binpick_sim/<env>/<policy>-v0)")
    parser.add_argument("--address", default=None, help="Ray cluster to join ('auto', or host:port); "
                        "without it a local cluster with WORKERS CPUs starts")
    parser.add_argument("--max-retries", type=int, default=3, help="restarts of a dead worker and re-runs of its "
                        "episode before the run fails (default 3)")
    args = parser.parse_args(argv)
    if args.replay is not None:
        from .datasets import replay

        try:
            return replay.main(args.replay)
        except (FileNotFoundError, ValueError) as exc:
            print(f"rollouts: error: {exc}", file=sys.stderr)
            return 2
    if args.out is None:
        parser.error("--out is required (or --replay DATASET)")
    lerobot = args.format == "lerobot"
    images = args.images or ("mp4" if lerobot else "png")
    if images not in (("mp4", "png") if lerobot else IMAGE_FORMATS):
        parser.error(f"--images {images} is not a choice with --format {args.format}: "
                     + ("mp4 or png" if lerobot else "png or array"))
    spec = RunSpec(env_id=args.env, backend=args.backend, observation=args.observation,
                   image_format="png" if lerobot else images, policy=args.policy, max_steps=args.max_steps,
                   env_options={"config_file": str(args.config.resolve())} if args.config else {})
    # --format lerobot: the episodes recorded beside --out (the lossless source), converted, then removed
    record_to = args.out.parent / f".{args.out.name}.source-{uuid.uuid4().hex[:8]}" if lerobot else args.out
    if lerobot and args.out.exists() and (not args.out.is_dir() or any(args.out.iterdir())):
        parser.error(f"{args.out} exists and is not empty: choose a new --out (nothing was written)")
    try:
        result = rollouts(record_to, args.episodes, args.workers, args.seed, spec, address=args.address,
                          max_retries=args.max_retries)
    except NotWritable as exc:  # one line, as the issue asked: the usage would not help here
        print(f"rollouts: error: {exc}", file=sys.stderr)
        return 2
    except (ValueError, FileExistsError) as exc:
        parser.error(str(exc))
    print(f"{len(result.episodes)} episodes, {result.steps} steps in {result.wall_s:.1f} s "
          f"({result.steps_per_s:,.0f} steps/s) on {result.workers} workers; "
          f"success {100 * result.success_rate:.0f} %; retries {result.retries}" + (f" (episodes {sorted(result.retried)})" if result.retried else ""))
    if lerobot:
        from .datasets import lerobot as lerobot_export

        try:
            return lerobot_export.main([str(record_to), "--out", str(args.out), "--images", images]
                                       + (["--task", args.task] if args.task else []))
        finally:
            shutil.rmtree(record_to, ignore_errors=True)
    print(f"dataset: {result.out}/{STEPS_DIR}, {result.out}/{EPISODES_DIR} (Parquet), {result.out}/{SUMMARY_FILE}")
    if args.format == "minari":
        from .datasets import minari as minari_export

        return minari_export.main([str(result.out)] + (["--id", args.minari_id] if args.minari_id else []))
    return 0


if __name__ == "__main__":
    # Through the importable module, so Ray pickles the actors by reference, not as `__main__` copies.
    from binpick_sim.rollouts import main as _main

    sys.exit(_main())
