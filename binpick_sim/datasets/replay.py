"""Exact replay: re-run each recorded episode's actions from its seed and compare the observations.

Why: resets are exact (same seed, same episode bit for bit), so a dataset is fully determined by its
seeds and actions. Replaying proves that a dataset still matches the simulator that made it (after an
upgrade, on another machine), and that a dataset's observations were not edited. Each observation is
compared in the form the dataset stores it (vectors as float32, images as PNG or raw bytes, decoded
when the bytes differ), so a faithful replay gives a difference of exactly 0.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .parquet import observation_columns, read_checked


@dataclass
class ReplayResult:
    episodes: int = 0
    steps: int = 0
    max_difference: float = 0.0  # the largest |recorded - replayed| over every observation value
    worst: tuple | None = None  # (episode, step, column) where it occurred
    mismatches: list[str] = field(default_factory=list)  # rewards, ends or lengths that differ

    @property
    def exact(self) -> bool:
        return self.max_difference == 0.0 and not self.mismatches


def _decode(value, column: str, meta: dict) -> np.ndarray:
    """A stored image column back to an array (PNG: as encoded, so depth stays in 0.1 mm units)."""
    if meta["image_format"] == "array":
        image = meta["images"][column]
        return np.frombuffer(value, dtype=image["dtype"]).reshape(image["shape"])
    import cv2

    return cv2.imdecode(np.frombuffer(value, np.uint8), cv2.IMREAD_UNCHANGED)


def difference(recorded, replayed, column: str, meta: dict) -> float:
    """The largest absolute difference between two stored values of one column (inf if shapes differ)."""
    if isinstance(recorded, (bytes, bytearray)):
        if recorded == replayed:
            return 0.0
        a, b = _decode(recorded, column, meta), _decode(replayed, column, meta)
    else:
        a, b = np.asarray(recorded, np.float64), np.asarray(np.asarray(replayed, np.float32), np.float64)
    if a.shape != b.shape:
        return float("inf")
    if a.size == 0:
        return 0.0
    both_nan = np.isnan(a) & np.isnan(b) if a.dtype.kind == "f" else False
    delta = np.where(both_nan, 0.0, np.abs(a.astype(np.float64) - b.astype(np.float64)))
    return float(np.nan_to_num(np.max(delta), nan=np.inf))


def replay(folder: str | Path, env_options: dict | None = None) -> ReplayResult:
    """Replay every episode of the dataset in `folder` in this process (one env, episode after episode)."""
    import gymnasium as gym

    from .. import envs  # noqa: F401  (registers the env ids)

    meta, steps, episodes = read_checked(folder)
    columns = [c for c in steps.columns if c.startswith("observation.")]
    env = gym.make(meta["env"], backend=meta["backend"], observation=meta["observation"],
                   **{**meta.get("env_options", {}), **(env_options or {})})
    result = ReplayResult()
    try:
        for episode in episodes.itertuples(index=False):
            rows = steps[steps.episode == episode.episode]
            observation, _ = env.reset(seed=int(episode.seed))
            ended = False
            for row in rows.itertuples(index=False):
                if ended:
                    result.mismatches.append(f"episode {episode.episode}: replay ended before step {row.step}")
                    break
                stored = observation_columns(observation, meta["image_format"])
                for column in columns:
                    delta = difference(getattr(row, _attr(rows, column)), stored[column], column, meta)
                    if delta > result.max_difference or (delta > 0 and result.worst is None):
                        result.max_difference, result.worst = delta, (episode.episode, row.step, column)
                action = np.asarray(row.action, dtype=np.float32)
                observation, reward, terminated, truncated, _ = env.step(action)
                if float(reward) != row.reward or bool(terminated) != row.terminated:
                    result.mismatches.append(f"episode {episode.episode} step {row.step}: reward/terminated "
                                             f"{float(reward)}/{bool(terminated)}, recorded {row.reward}/{row.terminated}")
                ended = bool(terminated or truncated)
                result.steps += 1
            result.episodes += 1
    finally:
        env.close()
    return result


def _attr(frame, column: str) -> str:
    """itertuples renames columns that are not identifiers ('observation.x') to _<position>."""
    return f"_{list(frame.columns).index(column)}"


def main(folder: str | Path) -> int:
    """`rollouts --replay DATASET`: print the largest difference; 0 if exact, 1 if not."""
    result = replay(folder)
    where = f" (episode {result.worst[0]} step {result.worst[1]} {result.worst[2]})" if result.worst else ""
    print(f"replayed {result.episodes} episodes, {result.steps} steps: largest observation difference "
          f"{result.max_difference:g}{where}")
    for line in result.mismatches[:10]:
        print(f"mismatch: {line}")
    return 0 if result.exact else 1
