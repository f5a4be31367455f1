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

The parts, one idea each: policies.py (what acts), episode.py (one episode as rows), runner.py (the run on
Ray), cli.py (the command); the dataset's format is binpick_sim.datasets.parquet, which the exporters read too.
Every name is importable from here, as before the split.
"""
from ..datasets.parquet import (DEPTH_PNG_SCALE, EPISODES_DIR, FLAT_KEY, IMAGE_FORMATS, STEPS_DIR, SUMMARY_FILE,
                               encode_image, image_shapes, info_json, observation_columns, read_dataset, steps_table)
from .cli import FORMATS, main
from .episode import DEFAULT_ENV, OBSERVATIONS, EpisodeSpec, RunSpec, run_episode
from .policies import POLICIES, load_policy, random, scripted
from ..config import MAX_SEED
from .runner import (EpisodeCounter, NotWritable, RolloutWorker, RunResult, check_writable, rollouts,
                     summary_record, write_dataset)

__all__ = ["DEFAULT_ENV", "DEPTH_PNG_SCALE", "EPISODES_DIR", "EpisodeCounter", "EpisodeSpec", "FLAT_KEY", "FORMATS",
           "IMAGE_FORMATS", "MAX_SEED", "NotWritable", "OBSERVATIONS", "POLICIES", "RolloutWorker", "RunResult", "RunSpec",
           "STEPS_DIR", "SUMMARY_FILE", "check_writable", "encode_image", "image_shapes", "info_json", "load_policy",
           "main", "observation_columns", "random", "read_dataset", "rollouts", "run_episode", "scripted",
           "steps_table", "summary_record", "write_dataset"]
