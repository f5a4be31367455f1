"""Export a `rollouts` dataset as a Minari dataset (the offline-RL format of the Farama ecosystem).

    python -m binpick_sim.datasets.minari DATASET [--id binpick_sim/franka-delta/scripted-v0]

Why by replay into Minari's own writer, rather than by writing Minari's files ourselves:
the Parquet dataset holds each step's observation *before* its action but not the final observation,
nor the reset info; resets are exact, so re-running each episode's recorded actions from its seed
gives them back bit for bit, and Minari's writer then stores what its readers expect (the env spec as
JSON so `recover_environment()` rebuilds the env, the observation and action spaces, one more
observation than actions, reset infos, each episode's seed). Every replayed observation is compared
with the recorded one: a dataset that no longer replays exactly is refused, not silently re-made.

Infos: the fixed-shape fields of the env's info (`INFO_KEYS`); the variable-length lists (`grabbed`,
`removed_outside`) stay in the Parquet dataset's `info` JSON, since Minari stores infos as arrays of
one shape per episode. The dataset is written where Minari keeps datasets (`MINARI_DATASETS_PATH`,
else ~/.minari/datasets).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from ..extras import MissingExtra, require
from .parquet import observation_columns, read_checked
from .replay import difference

INFO_KEYS = {"grabs": np.int64, "objects_left": np.int64, "bin_collision": np.bool_,
             "grab_limit_reached": np.bool_, "episode_time": np.float64}
DATA_FORMAT = "arrow"  # pyarrow is already a dependency; Minari's HDF5 format would add h5py


class NotExact(ValueError):
    """The recorded episodes do not replay exactly on this simulator: nothing is written."""


def default_id(meta: dict) -> str:
    """`binpick_sim/<env in lower-kebab>/<policy>-v0`, e.g. binpick_sim/franka-delta/scripted-v0."""
    name = meta["env"].split("/")[-1].rsplit("-v", 1)[0]
    kebab = "".join(f"-{c.lower()}" if c.isupper() and i else c.lower() for i, c in enumerate(name))
    policy = "".join(c if c.isalnum() else "-" for c in meta["policy"]).strip("-")
    return f"binpick_sim/{kebab}/{policy}-v0"


MAX_ID_PART = 200  # characters of one part of an id: each part is a folder name, and file systems stop at 255


def checked_id(dataset_id: str) -> str:
    """`dataset_id` if Minari's own parser takes it as `(namespace/)name-v(version)` and each part can be a
    folder; ValueError before anything is replayed otherwise (an id without its version raised TypeError inside
    Minari; one of 5000 characters failed only when the files were written)."""
    from minari.dataset.minari_dataset import parse_dataset_id

    try:
        parse_dataset_id(dataset_id)
    except (ValueError, TypeError):
        raise ValueError(f"{dataset_id[:80]!r} is not a Minari dataset id: (namespace/)name-v(version), e.g. "
                         "binpick_sim/franka-delta/scripted-v0") from None
    if any(len(part) > MAX_ID_PART for part in dataset_id.split("/")):
        raise ValueError(f"{dataset_id[:80]!r}...: each part of a Minari dataset id is a folder name, at most "
                         f"{MAX_ID_PART} characters")
    return dataset_id


def _fixed_info(info: dict) -> dict:
    """The info fields of one shape (INFO_KEYS), typed, so that Minari can stack them."""
    return {k: kind(info[k]) for k, kind in INFO_KEYS.items() if k in info}


def _stack(items: list[dict]) -> dict:
    """[{k: v}, ...] -> {k: [v, ...]}: the layout of Minari's EpisodeBuffer for dict spaces."""
    return {k: [item[k] for item in items] for k in items[0]} if items else {}


def replay_episode(env, episode, rows, meta: dict, columns: list[str]):
    """One recorded episode re-run from its seed: Minari's EpisodeBuffer (observations and infos from
    the reset on, so one more than actions), after checking every observation against the recording."""
    from minari.data_collector import EpisodeBuffer

    observation, info = env.reset(seed=int(episode.seed))
    observations, infos, actions, rewards, terminations, truncations = [observation], [_fixed_info(info)], [], [], [], []
    records = rows.to_dict("records")
    for number, row in enumerate(records):
        stored = observation_columns(observation, meta["image_format"])
        delta = max(difference(row[c], stored[c], c, meta) for c in columns)
        if delta != 0:
            raise NotExact(f"episode {episode.episode} step {row['step']} replays with an observation "
                           f"difference of {delta:g}: not exported")
        action = np.asarray(row["action"], np.float32)
        observation, reward, terminated, truncated, info = env.step(action)
        if float(reward) != row["reward"] or bool(terminated) != row["terminated"]:
            raise NotExact(f"episode {episode.episode} step {row['step']}: reward/terminated differ on replay")
        if (terminated or truncated) and number != len(records) - 1:
            raise NotExact(f"episode {episode.episode} ends at step {row['step']} on replay, later when recorded")
        observations.append(observation)
        infos.append(_fixed_info(info))
        actions.append(action)
        rewards.append(float(reward))
        terminations.append(bool(terminated))
        truncations.append(bool(truncated) or (not terminated and number == len(records) - 1))  # --max-steps cut
    dict_observations = isinstance(observations[0], dict)
    return EpisodeBuffer(id=int(episode.episode), seed=int(episode.seed),
                         observations=_stack(observations) if dict_observations else observations,
                         actions=actions, rewards=rewards, terminations=terminations, truncations=truncations,
                         infos=_stack(infos))


def to_minari(folder: str | Path, dataset_id: str | None = None, env_options: dict | None = None,
              author: str | None = None, author_email: str | None = None, code_permalink: str | None = None):
    """Replay the Parquet dataset in `folder` and write it as a Minari dataset; return the MinariDataset.
    `author`, `author_email`, `code_permalink`: the dataset's metadata as Minari keeps it (who collected
    it, and the code that did: Minari warns when they are missing, and cannot know them).

    Minari's writer proper (`create_dataset_from_buffers`): its `DataCollector` wrapper would need jax
    (for a tree_map), a large dependency for what `replay_episode` does in a few lines. All episodes are
    replayed before anything is written, so a dataset that does not replay exactly leaves nothing behind."""
    import gymnasium as gym
    import minari

    from .. import envs  # noqa: F401  (registers the env ids)

    meta, steps, episodes = read_checked(folder)
    dataset_id = checked_id(dataset_id or default_id(meta))
    if dataset_id in minari.list_local_datasets():
        raise FileExistsError(f"Minari dataset {dataset_id} exists: choose another --id (nothing was written)")
    columns = [c for c in steps.columns if c.startswith("observation.")]
    env = gym.make(meta["env"], backend=meta["backend"], observation=meta["observation"],
                   **{**meta.get("env_options", {}), **(env_options or {})})
    try:
        buffers = [replay_episode(env, episode, steps[steps.episode == episode.episode], meta, columns)
                   for episode in episodes.itertuples(index=False)]
        return minari.create_dataset_from_buffers(
            dataset_id, buffers, env=env, eval_env=env.spec, algorithm_name=meta["policy"],
            description=f"{meta['episodes']} {meta['policy']} episodes of {meta['env']} (seeds from "
                        f"{meta['seed']}), exported from a binpick_sim rollouts dataset by exact replay",
            data_format=DATA_FORMAT, requirements=["binpick_sim"], author=author, author_email=author_email,
            code_permalink=code_permalink)
    finally:
        env.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m binpick_sim.datasets.minari", description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path, help="a rollouts dataset folder")
    parser.add_argument("--id", default=None, help="Minari dataset id (default binpick_sim/<env>/<policy>-v0)")
    parser.add_argument("--author", default=None, help="who collected the dataset (Minari's metadata)")
    parser.add_argument("--author-email", default=None, help="their contact (Minari's metadata)")
    parser.add_argument("--code-permalink", default=None,
                        help="a link to the code that collected it, e.g. this repository at its commit (Minari's metadata)")
    args = parser.parse_args(argv)
    try:
        require("the Minari export", "minari")
        dataset = to_minari(args.dataset, args.id, author=args.author, author_email=args.author_email,
                            code_permalink=args.code_permalink)
    except (FileNotFoundError, FileExistsError, ValueError, MissingExtra) as exc:
        print(f"minari export: error: {exc}", file=sys.stderr)
        return 2
    print(f"Minari dataset {dataset.spec.dataset_id}: {dataset.total_episodes} episodes, {dataset.total_steps} "
          f"steps, in {dataset.spec.data_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
