"""Parallel rollouts on Ray: N episodes of a policy on W workers, written as a Parquet dataset.

The `rollouts` command (`python -m binpick_sim.rollouts`, `ros2 run binpick_sim rollouts`): records a dataset,
replays one (--replay), or records and exports it (--format minari / lerobot, binpick_sim.datasets).
"""
from __future__ import annotations

import argparse
import shutil
import sys
import uuid
from pathlib import Path

from ..datasets.parquet import EPISODES_DIR, IMAGE_FORMATS, STEPS_DIR, SUMMARY_FILE
from ..extras import MissingExtra, require
from .episode import DEFAULT_ENV, OBSERVATIONS, RunSpec
from .runner import NotWritable, rollouts

FORMATS = ("parquet", "minari", "lerobot")
FORMAT_EXTRAS = {"minari": ("minari",), "lerobot": ("datasets", "av")}  # what each export imports (extras.py)


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.replay is not None:
        from ..datasets import replay

        try:
            return replay.main(args.replay)
        except (FileNotFoundError, ValueError) as exc:
            print(f"rollouts: error: {exc}", file=sys.stderr)
            return 2
    return _record(parser, args)


def _parser() -> argparse.ArgumentParser:
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
                        help="default state; privileged / state_dict add the objects and bins (doc/gym.md 'Learning')")
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
    return parser


def _record(parser: argparse.ArgumentParser, args) -> int:
    """Record the episodes at --out, then export them where --format asks; the exit status."""
    if args.out is None:
        parser.error("--out is required (or --replay DATASET)")
    lerobot = args.format == "lerobot"
    images = args.images or ("mp4" if lerobot else "png")
    if images not in (("mp4", "png") if lerobot else IMAGE_FORMATS):
        parser.error(f"--images {images} is not a choice with --format {args.format}: "
                     + ("mp4 or png" if lerobot else "png or array"))
    try:  # before anything is recorded
        require(f"rollouts --format {args.format}", *FORMAT_EXTRAS.get(args.format, ()))
    except MissingExtra as exc:
        print(f"rollouts: error: {exc}", file=sys.stderr)
        return 2
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
    return _export(args, result, record_to, images)


def _export(args, result, record_to: Path, images: str) -> int:
    """--format lerobot: the recorded episodes converted to --out, then removed; minari: exported beside."""
    if args.format == "lerobot":
        from ..datasets import lerobot as lerobot_export

        try:
            return lerobot_export.main([str(record_to), "--out", str(args.out), "--images", images]
                                       + (["--task", args.task] if args.task else []))
        finally:
            shutil.rmtree(record_to, ignore_errors=True)
    print(f"dataset: {result.out}/{STEPS_DIR}, {result.out}/{EPISODES_DIR} (Parquet), {result.out}/{SUMMARY_FILE}")
    if args.format == "minari":
        from ..datasets import minari as minari_export

        return minari_export.main([str(result.out)] + (["--id", args.minari_id] if args.minari_id else []))
    return 0
