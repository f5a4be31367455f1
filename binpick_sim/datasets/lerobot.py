"""Write a `rollouts` dataset in LeRobot's v3.0 layout (Hugging Face's robot-learning dataset format).

    python -m binpick_sim.datasets.lerobot DATASET --out DIR [--images mp4|png] [--task TEXT]

or `rollouts --format lerobot --out DIR` (the episodes recorded, then written in this layout).

The layout, as LeRobot's own writer makes it (`lerobot/datasets/utils.py`, `CODEBASE_VERSION = "v3.0"`):

    meta/info.json                           codebase_version, fps, robot_type, features, totals, path templates, splits
    meta/stats.json                          min / max / mean / std / count and quantiles of every feature
    meta/tasks.parquet                       the task texts (index `task`) and their `task_index`
    meta/episodes/chunk-000/file-000.parquet one row per episode: length, tasks, where its rows and video frames are
    data/chunk-000/file-000.parquet          one row per frame, one row group per episode
    videos/<key>/chunk-000/file-000.mp4      each camera's frames, every episode one after the other

Why written here rather than through LeRobot's `LeRobotDataset.create`: LeRobot needs torch, a large
dependency for writing a few files; the layout is small and published, and the tests read it back with
independent tools (lerobot-doctor, Hugging Face `datasets`) that need no torch.

Choices: every episode goes into one data file and one video file per camera (LeRobot starts a new file
past 100 MB of data / 200 MB of video; a dataset past that is refused here rather than written wrong).
The data file's schema is Hugging Face `datasets`' own (fixed-length lists, `Image()` structs, the
`huggingface` schema metadata), as LeRobot writes it. rgb images are H.264 MP4 (libx264 through PyAV,
yuv420p, a key frame every 2 frames as LeRobot's encoder sets it, so a frame decodes from at most one
other) or, with `images="png"`, embedded PNG images (lossless). Depth images (float metres in the env)
are always embedded 16-bit PNGs in units of 0.1 mm, as in the Parquet dataset: a yuv420p video would
round them to 8 bits. Each vector observation key is a feature of its own (`observation.<key>`), and
`observation.state` is their concatenation (LeRobot's policies read that name); the episodes' seeds,
success and return are extra columns of the episodes table. Tools layer: nothing below imports this.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import uuid
from pathlib import Path

import numpy as np

from ..extras import MissingExtra, require
from .parquet import DEPTH_PNG_SCALE, read_checked

CODEBASE_VERSION = "v3.0"
CHUNK_FILE = "chunk-{chunk_index:03d}/file-{file_index:03d}"
DATA_PATH = "data/" + CHUNK_FILE + ".parquet"
VIDEO_PATH = "videos/{video_key}/" + CHUNK_FILE + ".mp4"
EPISODES_PATH = "meta/episodes/" + CHUNK_FILE + ".parquet"
INFO_PATH, STATS_PATH, TASKS_PATH = "meta/info.json", "meta/stats.json", "meta/tasks.parquet"
CHUNKS_SIZE, DATA_FILE_MB, VIDEO_FILE_MB = 1000, 100, 200
IMAGE_MODES = ("mp4", "png")
VIDEO_CODEC, PIXEL_FORMAT, GOP, CRF = "libx264", "yuv420p", 2, 23
QUANTILES = (0.01, 0.10, 0.50, 0.90, 0.99)  # q01 .. q99, as LeRobot's compute_stats
IMAGE_STATS_FRAMES = 500
DEFAULT_FEATURES = {  # every LeRobot dataset's bookkeeping columns (lerobot.utils.constants.DEFAULT_FEATURES)
    "timestamp": {"dtype": "float32", "shape": [1], "names": None},
    "frame_index": {"dtype": "int64", "shape": [1], "names": None},
    "episode_index": {"dtype": "int64", "shape": [1], "names": None},
    "index": {"dtype": "int64", "shape": [1], "names": None},
    "task_index": {"dtype": "int64", "shape": [1], "names": None},
}
ROBOT_TYPE = "franka_panda"
ACTION_NAMES = {"binpick_sim/FrankaDelta-v0": ["dx", "dy", "dz", "dyaw", "gripper"]}


class TooLarge(ValueError):
    """The dataset needs more than one data or video file, which this writer does not split into."""


def _names(key: str, size: int, joint_names: list[str]) -> list[str]:
    if key in ("joint_positions", "joint_velocities") and size == len(joint_names):
        return list(joint_names)
    if key == "ee_position" and size == 3:
        return ["x", "y", "z"]
    return [f"{key}_{i}" for i in range(size)]


def _image_key(key: str) -> str:
    return f"observation.images.{key}"


def _stats(values: np.ndarray, image: bool = False) -> dict:
    """min, max, mean, std, count and quantiles over the frames (axis 0); images per channel, shape (C, 1, 1)."""
    values = np.asarray(values, dtype=np.float64)
    frames = len(values)
    if image:  # (N, H, W, C) -> per channel
        values = values.reshape(len(values), -1, values.shape[-1]).reshape(-1, values.shape[-1])
    elif values.ndim == 1:
        values = values[:, None]
    stats = {"min": values.min(0), "max": values.max(0), "mean": values.mean(0), "std": values.std(0)}
    stats.update({f"q{round(q * 100):02d}": np.quantile(values, q, axis=0) for q in QUANTILES})
    if image:
        stats = {k: v[:, None, None] for k, v in stats.items()}
    stats = {k: v.tolist() for k, v in stats.items()}
    stats["count"] = [frames]
    return stats


def _decode_png(data: bytes) -> np.ndarray:
    import cv2

    image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    return cv2.cvtColor(image, cv2.COLOR_BGR2RGB) if image.ndim == 3 else image


def _image_arrays(column, key: str, meta: dict) -> list[np.ndarray]:
    """A stored image column (PNG or raw bytes) as arrays: rgb uint8 (H, W, 3), depth uint16 in 0.1 mm."""
    if meta["image_format"] == "array":
        layout = meta["images"][f"observation.{key}"]
        arrays = [np.frombuffer(v, layout["dtype"]).reshape(layout["shape"]) for v in column]
        if key == "depth":
            scaled = [np.asarray(a, np.float64) * DEPTH_PNG_SCALE for a in arrays]
            arrays = [np.where(np.isfinite(d) & (d < 65535.5), np.round(d), 0).astype(np.uint16) for d in scaled]
        return arrays
    return [_decode_png(v) for v in column]


def _png(key: str, image: np.ndarray) -> bytes:
    from .parquet import encode_image

    if key == "depth":  # already in 0.1 mm units: encode as is
        import cv2

        ok, data = cv2.imencode(".png", image)
        assert ok
        return data.tobytes()
    return encode_image(key, image, "png")


def _write_video(path: Path, frames: list[np.ndarray], fps: int) -> dict:
    """Every frame of every episode into one MP4; returns the `info` LeRobot records for a video feature."""
    import av

    path.parent.mkdir(parents=True, exist_ok=True)
    height, width = frames[0].shape[:2]
    with av.open(str(path), "w") as container:
        stream = container.add_stream(VIDEO_CODEC, rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, PIXEL_FORMAT
        stream.options = {"g": str(GOP), "crf": str(CRF)}
        for number, frame in enumerate(frames):
            video_frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(frame), format="rgb24")
            video_frame.pts = number
            for packet in stream.encode(video_frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return {"video.height": height, "video.width": width, "video.codec": "h264", "video.pix_fmt": PIXEL_FORMAT,
            "video.is_depth_map": False, "video.fps": fps, "video.channels": 3, "has_audio": False}


def control_fps(meta: dict, env_options: dict | None = None) -> int:
    """Frames per second = 1 / the env's control period (dataset.json's, else the env's config)."""
    period = meta.get("control_period_s")
    if period is None:
        import gymnasium as gym

        from .. import envs  # noqa: F401  (registers the env ids)

        env = gym.make(meta["env"], backend=meta["backend"], observation=meta["observation"],
                       **{**meta.get("env_options", {}), **(env_options or {})})
        config = env.unwrapped.config
        period = config.simulation.timestep * config.task.steps_per_action
        env.close()
    fps = round(1.0 / period)
    if fps < 1 or abs(fps * period - 1.0) > 1e-6:
        raise ValueError(f"the control period {period:g} s is not a whole number of frames per second, "
                         "which LeRobot's integer fps needs")
    return fps


def to_lerobot(folder: str | Path, out: str | Path, images: str = "mp4", task: str | None = None,
               env_options: dict | None = None) -> Path:
    """Write the rollouts dataset in `folder` as a LeRobot v3.0 dataset at `out` (must not exist or be
    empty); written into a hidden folder beside it and renamed at the end, so a failure leaves nothing."""
    folder, out = Path(folder), Path(out)
    if images not in IMAGE_MODES:
        raise ValueError(f"images must be one of {IMAGE_MODES}, got {images!r}")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FileExistsError(f"{out} exists and is not empty: choose a new --out (nothing was written)")
    meta, steps, episodes = read_checked(folder)
    fps = control_fps(meta, env_options)
    task = task or f"pick objects out of the bin ({meta['env']}, {meta['policy']} policy)"

    observation_keys = sorted(c[len("observation."):] for c in steps.columns if c.startswith("observation."))
    image_keys = [k for k in observation_keys if f"observation.{k}" in meta.get("images", {})]
    features, columns = _observation_columns(steps, [k for k in observation_keys if k not in image_keys])
    _step_columns(steps, meta, fps, features, columns)
    features.update(DEFAULT_FEATURES)
    stats = {name: _stats(values) for name, values in columns.items()}

    temporary = out.parent / f".{out.name}.lerobot-{uuid.uuid4().hex[:8]}"
    try:
        video_info, image_columns = _image_features(steps, image_keys, meta, images, temporary, fps, features, stats)
        starts = _write_data(temporary, features, columns, image_columns, episodes["length"].to_numpy())
        _write_episodes(temporary, episodes, starts, task, fps, video_info, columns)
        _write_meta(temporary, task, len(episodes), len(steps), fps, video_info, features, stats)
        if out.exists():
            out.rmdir()
        temporary.rename(out)
        return out
    finally:
        if temporary.exists():
            shutil.rmtree(temporary, ignore_errors=True)


def _observation_columns(steps, vector_keys: list[str]) -> tuple[dict, dict]:
    """(features, columns) of the vector observations, each as its own feature and all of them concatenated
    as `observation.state` (the name LeRobot's policies read)."""
    from ..cell.arm.panda import JOINT_NAMES

    n = len(steps)
    features, columns = {}, {}
    state_parts, state_names = [], []
    for key in vector_keys:
        values = steps[f"observation.{key}"]
        if isinstance(values.iloc[0], (list, np.ndarray)):
            array = np.stack(values.to_numpy()).astype(np.float32)
            names = _names(key, array.shape[1], list(JOINT_NAMES))
            features[f"observation.{key}"] = {"dtype": "float32", "shape": [array.shape[1]], "names": names}
            columns[f"observation.{key}"] = array
        else:  # a scalar (gripper_open)
            array = values.to_numpy().astype(np.int64)
            features[f"observation.{key}"] = {"dtype": "int64", "shape": [1], "names": None}
            columns[f"observation.{key}"] = array
            names = [key]
        state_parts.append(array.reshape(n, -1).astype(np.float32))
        state_names += [f"{key}.{name}" if array.ndim > 1 else key for name in names]
    if state_parts:
        state = np.concatenate(state_parts, axis=1)
        features["observation.state"] = {"dtype": "float32", "shape": [state.shape[1]], "names": state_names}
        columns["observation.state"] = state
    return features, columns


def _step_columns(steps, meta: dict, fps: int, features: dict, columns: dict) -> None:
    """The action, the step's outcome (`next.*`) and LeRobot's indices and timestamps, added in place."""
    n = len(steps)
    actions = np.stack(steps["action"].to_numpy()).astype(np.float32)
    features["action"] = {"dtype": "float32", "shape": [actions.shape[1]],
                          "names": ACTION_NAMES.get(meta["env"], [f"action_{i}" for i in range(actions.shape[1])])}
    columns["action"] = actions
    features["next.reward"] = {"dtype": "float32", "shape": [1], "names": None}
    columns["next.reward"] = steps["reward"].to_numpy(np.float32)
    features["next.done"] = {"dtype": "bool", "shape": [1], "names": None}
    columns["next.done"] = (steps["terminated"] | steps["truncated"]).to_numpy(bool)
    features["next.truncated"] = {"dtype": "bool", "shape": [1], "names": None}
    columns["next.truncated"] = steps["truncated"].to_numpy(bool)
    frame_index = steps["step"].to_numpy(np.int64)
    columns["timestamp"] = (frame_index / fps).astype(np.float32)
    columns["frame_index"] = frame_index
    columns["episode_index"] = steps["episode"].to_numpy(np.int64)
    columns["index"] = np.arange(n, dtype=np.int64)
    columns["task_index"] = np.zeros(n, np.int64)


def _image_features(steps, image_keys: list[str], meta: dict, images: str, temporary: Path, fps: int,
                    features: dict, stats: dict) -> tuple[dict, dict]:
    """Each image observation as an MP4 video (rgb with images="mp4", written under `temporary`) or a column
    of PNGs; features and stats added in place. Returns (video info by key, PNG columns by key)."""
    n = len(steps)
    video_info, image_columns = {}, {}
    for key in image_keys:
        arrays = _image_arrays(steps[f"observation.{key}"], key, meta)
        height, width = arrays[0].shape[:2]
        channels = arrays[0].shape[2] if arrays[0].ndim == 3 else 1
        name = _image_key(key)
        # image stats on at most IMAGE_STATS_FRAMES frames spread over the dataset, as LeRobot samples them
        sample = np.stack([arrays[i] for i in np.linspace(0, n - 1, min(n, IMAGE_STATS_FRAMES)).astype(int)])
        if key == "depth":
            stats[name] = _stats(sample[..., None] / DEPTH_PNG_SCALE, image=True)
        else:
            stats[name] = _stats(sample / 255.0, image=True)
        if key == "rgb" and images == "mp4":
            path = temporary / VIDEO_PATH.format(video_key=name, chunk_index=0, file_index=0)
            video_info[name] = _write_video(path, arrays, fps)
            if path.stat().st_size > VIDEO_FILE_MB * 2**20:
                raise TooLarge(f"{name}'s video is over {VIDEO_FILE_MB} MB: split the dataset (nothing was written)")
            features[name] = {"dtype": "video", "shape": [height, width, channels],
                              "names": ["height", "width", "channels"], "info": video_info[name]}
        else:
            image_columns[name] = [{"bytes": _png(key, a), "path": None} for a in arrays]
            features[name] = {"dtype": "image", "shape": [height, width, channels],
                              "names": ["height", "width", "channels"]}
    return video_info, image_columns


def _write_data(temporary: Path, features: dict, columns: dict, image_columns: dict, lengths) -> np.ndarray:
    """data/: one Parquet file in Hugging Face datasets' schema for these features (as LeRobot's
    get_hf_features_from_features), one row group per episode. Returns each episode's first row (and the end)."""
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    hf = {}
    for name, feature in features.items():
        if feature["dtype"] == "video":
            continue
        if feature["dtype"] == "image":
            hf[name] = datasets.Image()
        elif feature["shape"] == [1]:
            hf[name] = datasets.Value(feature["dtype"])
        else:
            hf[name] = datasets.Sequence(datasets.Value(feature["dtype"]), length=feature["shape"][0])
    hf_features = datasets.Features(hf)
    arrays = {}
    for name in hf_features:
        if name in image_columns:
            arrays[name] = pa.array(image_columns[name], type=hf_features.arrow_schema.field(name).type)
        elif columns[name].ndim == 2:
            kind = hf_features.arrow_schema.field(name).type
            arrays[name] = pa.FixedSizeListArray.from_arrays(pa.array(columns[name].ravel(), kind.value_type),
                                                             kind.list_size)
        else:
            arrays[name] = pa.array(columns[name])
    table = pa.Table.from_pydict(arrays, schema=hf_features.arrow_schema)
    data_path = temporary / DATA_PATH.format(chunk_index=0, file_index=0)
    data_path.parent.mkdir(parents=True)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    with pq.ParquetWriter(str(data_path), table.schema, compression="snappy") as writer:
        for start, stop in zip(starts[:-1], starts[1:]):
            writer.write_table(table.slice(int(start), int(stop - start)))  # one row group per episode
    if data_path.stat().st_size > DATA_FILE_MB * 2**20:
        raise TooLarge(f"the data file is over {DATA_FILE_MB} MB: split the dataset (nothing was written)")
    return starts


def _write_episodes(temporary: Path, episodes, starts, task: str, fps: int, video_info: dict, columns: dict) -> None:
    """meta/episodes/: one row per episode, as LeRobot's save_episode records it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = []
    for number, episode in enumerate(episodes.to_dict("records")):
        start, stop = int(starts[number]), int(starts[number + 1])
        row = {"episode_index": int(episode["episode"]), "tasks": [task], "length": stop - start,
               "data/chunk_index": 0, "data/file_index": 0, "dataset_from_index": start, "dataset_to_index": stop}
        for name in video_info:
            row.update({f"videos/{name}/chunk_index": 0, f"videos/{name}/file_index": 0,
                        f"videos/{name}/from_timestamp": start / fps, f"videos/{name}/to_timestamp": stop / fps})
        for name, values in columns.items():
            for stat, value in _stats(values[start:stop]).items():
                row[f"stats/{name}/{stat}"] = value
        row.update({"meta/episodes/chunk_index": 0, "meta/episodes/file_index": 0, "seed": int(episode["seed"]),
                    "success": bool(episode["success"]), "return": float(episode["return"])})
        rows.append(row)
    episodes_path = temporary / EPISODES_PATH.format(chunk_index=0, file_index=0)
    episodes_path.parent.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), episodes_path)


def _write_meta(temporary: Path, task: str, episodes: int, frames: int, fps: int, video_info: dict,
                features: dict, stats: dict) -> None:
    """meta/: the one task, info.json (the layout and the features) and stats.json."""
    import pandas as pd

    pd.DataFrame({"task_index": [0]}, index=pd.Index([task], name="task")).to_parquet(temporary / TASKS_PATH)
    info = {"codebase_version": CODEBASE_VERSION, "robot_type": ROBOT_TYPE, "total_episodes": episodes,
            "total_frames": frames, "total_tasks": 1, "chunks_size": CHUNKS_SIZE, "data_files_size_in_mb": DATA_FILE_MB,
            "video_files_size_in_mb": VIDEO_FILE_MB, "fps": fps, "splits": {"train": f"0:{episodes}"},
            "data_path": DATA_PATH, "video_path": VIDEO_PATH if video_info else None, "features": features}
    (temporary / INFO_PATH).write_text(json.dumps(info, indent=4))
    (temporary / STATS_PATH).write_text(json.dumps(stats, indent=4))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m binpick_sim.datasets.lerobot", description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path, help="a rollouts dataset folder")
    parser.add_argument("--out", type=Path, required=True, help="LeRobot dataset folder to create")
    parser.add_argument("--images", default="mp4", choices=IMAGE_MODES, help="rgb as H.264 MP4 (default) or PNG")
    parser.add_argument("--task", default=None, help="the task text (default names the env and the policy)")
    args = parser.parse_args(argv)
    try:
        require("the LeRobot export", "datasets", "av")
        out = to_lerobot(args.dataset, args.out, args.images, args.task)
    except (FileNotFoundError, FileExistsError, ValueError, MissingExtra) as exc:
        print(f"lerobot export: error: {exc}", file=sys.stderr)
        return 2
    info = json.loads((out / INFO_PATH).read_text())
    print(f"LeRobot {CODEBASE_VERSION} dataset {out}: {info['total_episodes']} episodes, {info['total_frames']} frames "
          f"at {info['fps']} fps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
