"""The dataset `rollouts` writes, as files and columns: what a step's row holds and how it is read back.

One folder: `steps/` (Parquet, a row per env step: `episode`, `step`, `observation.<key>` columns, `action`,
`reward`, `terminated`, `truncated`, `info` as JSON), `episodes/` (Parquet, a row per episode) and
`dataset.json` (the run's summary). Images are PNG bytes (depth as 16-bit 0.1 mm, DEPTH_PNG_SCALE) or raw
array bytes.

The format is kept apart from the Ray runner that writes it (binpick_sim.rollouts): the exporters and the
exact replay beside this module read it without importing the runner, and the runner's command line calls
them, so the imports run one way (rollouts -> datasets).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

IMAGE_FORMATS = ("png", "array")
DEPTH_PNG_SCALE = 10000.0  # depth PNGs are uint16 in units of 0.1 mm; 0 = no return (inf, or beyond 6.55 m)
STEPS_DIR, EPISODES_DIR, SUMMARY_FILE = "steps", "episodes", "dataset.json"
FLAT_KEY = "vector"  # a flat observation's (`privileged`) column: observation.vector


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


def read_dataset(folder: str | Path):
    """(steps, episodes) as pandas DataFrames sorted by episode and step, with pyarrow alone (no Ray)."""
    import pyarrow.parquet as pq

    folder = Path(folder)
    steps = pq.read_table(folder / STEPS_DIR).to_pandas().sort_values(["episode", "step"], ignore_index=True)
    episodes = pq.read_table(folder / EPISODES_DIR).to_pandas().sort_values("episode", ignore_index=True)
    return steps, episodes


# What the exporters and the replay read of a dataset: the summary's keys (with their types), the tables' columns
SUMMARY_KEYS = {"env": str, "backend": str, "observation": str, "image_format": str, "policy": str, "seed": int,
                "episodes": int}
STEP_COLUMNS = ("episode", "step", "action", "reward", "terminated", "truncated")
EPISODE_COLUMNS = ("episode", "seed", "length", "success", "return")


def read_checked(folder: str | Path):
    """(summary, steps, episodes) of the rollouts dataset in `folder`, checked before anything is made of it:
    the summary's keys and types, each table's columns, and every episode against its steps (its id once, its
    length, its steps numbered 0, 1, ... in order). A steps file copied over another keeps the total row count
    and passed the old check, which compared totals only: a LeRobot dataset then said 3 episodes and held one
    of them twice (issue 53). FileNotFoundError without a summary; ValueError naming the first mismatch."""
    folder = Path(folder)
    if not (folder / SUMMARY_FILE).is_file():
        raise FileNotFoundError(f"{folder} is not a rollouts dataset (no {SUMMARY_FILE})")
    try:
        summary = json.loads((folder / SUMMARY_FILE).read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{folder / SUMMARY_FILE} is not JSON: {exc}") from None
    if not isinstance(summary, dict):
        raise ValueError(f"{folder / SUMMARY_FILE} holds a {type(summary).__name__}, not a rollouts summary")
    wrong = [f"{key} ({kind.__name__})" for key, kind in SUMMARY_KEYS.items()
             if not isinstance(summary.get(key), kind) or isinstance(summary.get(key), bool)]
    if wrong:
        raise ValueError(f"{folder / SUMMARY_FILE} lacks {', '.join(wrong)}")
    for name in (STEPS_DIR, EPISODES_DIR):
        if not (folder / name).is_dir() or not any((folder / name).glob("*.parquet")):
            raise ValueError(f"{folder} has no {name}/*.parquet")
    steps, episodes = read_dataset(folder)
    for table, name, columns in ((steps, STEPS_DIR, STEP_COLUMNS), (episodes, EPISODES_DIR, EPISODE_COLUMNS)):
        if missing := [c for c in columns if c not in table.columns]:
            raise ValueError(f"{folder / name} lacks the columns {', '.join(missing)}")
    check_episodes(steps, episodes, summary, folder)
    return summary, steps, episodes


def check_episodes(steps, episodes, summary: dict, folder: Path) -> None:
    """ValueError unless each episode of the episodes table is there once, with `length` steps in the steps
    table numbered 0..length-1 (both tables sorted as read_dataset sorts them), and the summary counts them."""
    ids = episodes["episode"]
    if ids.duplicated().any():
        raise ValueError(f"{folder}: episode {ids[ids.duplicated()].iloc[0]} is listed twice")
    if len(ids) != summary["episodes"]:
        raise ValueError(f"{folder}: {SUMMARY_FILE} counts {summary['episodes']} episodes, {EPISODES_DIR} lists {len(ids)}")
    counts = steps.groupby("episode").size()
    if extra := sorted(set(counts.index) - set(ids)):
        raise ValueError(f"{folder}: the steps of episode {extra[0]} belong to no listed episode")
    for episode, length in zip(ids, episodes["length"]):
        if counts.get(episode, 0) != length:
            raise ValueError(f"{folder}: episode {episode} has {counts.get(episode, 0)} steps, its length is {length}")
    numbered = steps.groupby("episode").cumcount()
    if (misplaced := steps["step"].to_numpy() != numbered.to_numpy()).any():
        row = steps[misplaced].iloc[0]
        raise ValueError(f"{folder}: episode {row['episode']}'s steps are not numbered 0, 1, ... (step {row['step']} "
                         f"where step {numbered[misplaced].iloc[0]} belongs)")
