"""The run on Ray: workers as actors, each owning one env, episodes handed out two at a time, the dataset
written by the driver alone once every episode is in (see the package's docstring for why it stays whole).
"""
from __future__ import annotations

import json
import math
import os
import shutil
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from ..config import MAX_SEED
from ..datasets.parquet import DEPTH_PNG_SCALE, EPISODES_DIR, IMAGE_FORMATS, STEPS_DIR, SUMMARY_FILE, image_shapes, steps_table
from .episode import DEFAULT_ENV, OBSERVATIONS, EpisodeSpec, RunSpec, run_episode
from .policies import load_policy


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
        import ray

        self.spec = spec
        self.counter = ray.get_actor(counter)  # by name: a restarted worker finds the same counter
        self.factory = load_policy(spec.policy)
        self.env = spec.make_env()

    def info(self) -> dict:
        return {"pid": os.getpid(), "images": image_shapes(self.env.observation_space),
                "control_period_s": control_period(self.env)}

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
    from ..envs import ENV_IDS

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
             address: str | None = None, max_retries: int = 3, progress: bool | None = None,
             local: bool | None = None) -> RunResult:
    """Run `episodes` episodes (seeds seed..seed+episodes-1) on `workers` Ray actors; write the dataset.

    Uses the Ray cluster this process is already connected to, else joins `address`, else starts a
    local one with `workers` CPUs (and shuts it down at the end). `local`: run the episodes in this process
    with no Ray at all (one worker only); None: so for one worker when no cluster is named or connected.
    Starting a Ray cluster and its worker cost more than 10 short episodes themselves (issue 54); the
    dataset is the same either way (the same episodes, written in episode order).
    """
    spec = spec or RunSpec()
    _check(spec, workers, episodes, seed)
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FileExistsError(f"{out} exists and is not empty: choose a new --out (nothing was written)")
    if not 0 <= max_retries <= 100:
        raise ValueError(f"max retries must be between 0 and 100, got {max_retries}")
    check_writable(out)
    workers = min(workers, episodes)
    if local is None:
        local = workers == 1 and address is None and not _ray_connected()
    if local and workers != 1:
        raise ValueError(f"a run without Ray has one worker, not {workers}")
    if local:
        return _run_here(out, episodes, seed, spec, progress)
    return _run_on_ray(out, episodes, workers, seed, spec, address, max_retries, progress)


def _ray_connected() -> bool:
    """Whether this process is connected to a Ray cluster. One that never imported Ray is not: importing it
    only to ask took a quarter of a second of a 10-episode run's start."""
    ray = sys.modules.get("ray")
    return ray is not None and ray.is_initialized()


def _run_here(out: Path, episodes: int, seed: int, spec: RunSpec, progress: bool | None) -> RunResult:
    """The episodes one after the other in this process, on one env; the same dataset as on Ray."""
    from tqdm import tqdm

    temporary = out.parent / f".{out.name}.partial-{uuid.uuid4().hex[:8]}"
    env = spec.make_env()
    try:
        factory, images, period = load_policy(spec.policy), image_shapes(env.observation_space), control_period(env)
        summaries, tables, steps = [], [], 0
        start = time.perf_counter()
        with tqdm(total=episodes, desc="rollouts", unit="episode", disable=None if progress is None else not progress) as bar:
            for k in range(episodes):
                summary, rows = run_episode(env, spec, EpisodeSpec(k, seed + k), factory)
                summaries.append(summary)
                tables.append(steps_table(rows))
                steps += summary["length"]
                bar.update()
        wall = time.perf_counter() - start
        _write_here(temporary, tables, summaries)
        result = RunResult(out, summaries, steps, 0, {}, wall, 1)
        _finish(temporary, out, result, spec, seed, images, period, ray_version=None)
        return result
    finally:
        env.close()
        if temporary.exists():
            shutil.rmtree(temporary, ignore_errors=True)


def control_period(env) -> float:
    """Seconds of sim time per env step: LeRobot's fps."""
    config = env.unwrapped.config
    return config.simulation.timestep * config.task.steps_per_action


def _finish(temporary: Path, out: Path, result: RunResult, spec: RunSpec, seed: int, images: dict, period: float,
            ray_version: str | None) -> None:
    """The summary written beside the tables, and the folder renamed to `out` (whole, or not at all)."""
    record = summary_record(result, spec, seed, images, ray_version)
    record["control_period_s"] = period
    (temporary / SUMMARY_FILE).write_text(json.dumps(record, indent=2))
    if out.exists():
        out.rmdir()
    temporary.rename(out)


def _run_on_ray(out: Path, episodes: int, workers: int, seed: int, spec: RunSpec, address: str | None,
                max_retries: int, progress: bool | None) -> RunResult:
    ray = _ray()
    started = _start_ray(ray, workers, address)
    temporary = out.parent / f".{out.name}.partial-{uuid.uuid4().hex[:8]}"
    pool, owned = [], []  # the workers; every actor this run started
    try:
        counter = _start_workers(ray, spec, workers, max_retries, pool, owned)
        worker_info = ray.get(pool[0].info.remote())
        start = time.perf_counter()
        summaries, tables, nodes, steps = _hand_out(ray, pool, episodes, seed, progress)
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
        _finish(temporary, out, result, spec, seed, worker_info["images"], worker_info["control_period_s"],
                ray.__version__)
        return result
    finally:
        _close(ray, pool)
        _kill(ray, owned)
        if temporary.exists():
            shutil.rmtree(temporary, ignore_errors=True)
        if started:
            ray.shutdown()


def _start_ray(ray, workers: int, address: str | None) -> bool:
    """Ray joined at `address`, or started on this machine with `workers` CPUs; True where this run started it
    (and so shuts it down)."""
    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # a local run sends nothing anywhere
    if address:
        ray.init(address=address, log_to_driver=False)
    else:
        ray.init(address="local", num_cpus=workers, include_dashboard=False, log_to_driver=False)
    return True


def _start_workers(ray, spec: RunSpec, workers: int, max_retries: int, pool: list, owned: list):
    """The episode counter and `workers` RolloutWorker actors (appended to `pool`; every actor to `owned`, so
    that a failure part-way still ends them). Returns the counter."""
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
    return counter


def _hand_out(ray, pool: list, episodes: int, seed: int, progress: bool | None):
    """Every episode run on the workers, two in hand each, so a worker never waits on the driver between
    episodes. Returns (summaries, table refs, nodes: each by episode number, steps)."""
    from tqdm import tqdm

    queue = [EpisodeSpec(k, seed + k) for k in range(episodes)]
    queue.reverse()
    running: dict = {}  # summary ref -> (worker index, table ref)
    summaries: dict[int, dict] = {}
    tables: dict[int, object] = {}
    nodes: dict[int, str] = {}
    steps = 0
    start = time.perf_counter()

    def submit(index: int) -> None:
        episode = queue.pop()
        summary_ref, table_ref = pool[index].run.options(num_returns=2).remote(episode)
        running[summary_ref] = (index, table_ref)

    for index in range(len(pool)):
        for _ in range(2):
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
    return summaries, tables, nodes, steps


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
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True
    context.enable_progress_bars = False
    here = {"scheduling_strategy": NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)}
    ray.data.from_arrow_refs(table_refs).write_parquet(str(folder / STEPS_DIR), ray_remote_args=here)
    ray.data.from_arrow(episodes_table(episodes)).write_parquet(str(folder / EPISODES_DIR), ray_remote_args=here)


def _write_here(folder: Path, tables: list, episodes: list[dict]) -> None:
    """The same tables as `write_dataset`, with pyarrow alone: one file each."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for name, table in ((STEPS_DIR, pa.concat_tables(tables)), (EPISODES_DIR, episodes_table(episodes))):
        (folder / name).mkdir(parents=True)
        pq.write_table(table, folder / name / "part-0.parquet")


def episodes_table(episodes: list[dict]):
    import pyarrow as pa

    schema = pa.schema([("episode", pa.int64()), ("seed", pa.int64()), ("success", pa.bool_()),
                        ("length", pa.int64()), ("return", pa.float64()), ("terminated", pa.bool_()),
                        ("truncated", pa.bool_()), ("info", pa.string())])
    return pa.Table.from_pylist(episodes, schema=schema)


def summary_record(result: RunResult, spec: RunSpec, seed: int, images: dict, ray_version: str | None) -> dict:
    return {"env": spec.env_id, "backend": spec.backend, "observation": spec.observation,
            "image_format": spec.image_format, "images": images, "depth_png_scale": DEPTH_PNG_SCALE,
            "policy": spec.policy, "max_steps": spec.max_steps, "env_options": spec.env_options, "seed": seed, "episodes": len(result.episodes),
            "workers": result.workers, "steps": result.steps, "success_rate": result.success_rate,
            "retries": result.retries, "retried_episodes": {str(k): n for k, n in result.retried.items()},
            "episode_nodes": {str(k): node for k, node in result.nodes.items()},
            "wall_s": result.wall_s, "steps_per_s": result.steps_per_s, "ray": ray_version}
