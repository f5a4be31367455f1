"""Dataset sizes: bytes per episode of a 64 x 64 image dataset in each format `rollouts` writes.

EPISODES (100) scripted-picker episodes of FrankaDelta-v0 with image observations (rgb 64 x 64, the gripper
position and state), capped at EPISODE_STEPS steps, recorded once by `rollouts` (Parquet, PNG images) and
written from it as LeRobot v3.0 with H.264 MP4 video and with embedded PNG images. Sizes, not timings: the
same episodes give the same bytes on any machine (the encoders are deterministic), so these figures are
exact even where the machine is shared. `BENCH_DATASET_EPISODES` / `BENCH_DATASET_STEPS` make it smaller.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .figures import Figure

EPISODES = int(os.environ.get("BENCH_DATASET_EPISODES", "100"))
EPISODE_STEPS = int(os.environ.get("BENCH_DATASET_STEPS", "60"))


def folder_bytes(folder: Path, under: str = "") -> int:
    return sum(p.stat().st_size for p in (folder / under).rglob("*") if p.is_file())


def measure() -> list[Figure]:
    from binpick_sim.datasets.lerobot import CRF, GOP, VIDEO_CODEC, to_lerobot
    from binpick_sim.rollouts import RunSpec, rollouts

    note = f"{EPISODES} scripted FrankaDelta-v0 episodes of {EPISODE_STEPS} steps, rgb 64x64"
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    with tempfile.TemporaryDirectory(prefix="bench_datasets_") as temporary:
        folder = Path(temporary)
        result = rollouts(folder / "parquet", EPISODES, 2, 0, RunSpec(observation="image", policy="scripted",
                                                                      max_steps=EPISODE_STEPS), progress=False)
        frames = result.steps
        mp4 = to_lerobot(folder / "parquet", folder / "lerobot_mp4", images="mp4")
        png = to_lerobot(folder / "parquet", folder / "lerobot_png", images="png")
        sizes = {
            "Parquet (rollouts), PNG images": folder_bytes(folder / "parquet"),
            "LeRobot v3.0, embedded PNG images": folder_bytes(png),
            f"LeRobot v3.0, MP4 video ({VIDEO_CODEC} crf {CRF}, key frame every {GOP})": folder_bytes(mp4),
        }
        video = folder_bytes(mp4, "videos")
    figures = [Figure("datasets", f"{name} ({note})", size / EPISODES, "bytes/episode")
               for name, size in sizes.items()]
    figures.append(Figure("datasets", f"LeRobot MP4: the video alone ({note})", video / EPISODES, "bytes/episode"))
    figures.append(Figure("datasets", f"LeRobot MP4: video bytes per frame ({note})", video / frames, "bytes/frame"))
    png_size = sizes["LeRobot v3.0, embedded PNG images"]
    mp4_size = next(v for k, v in sizes.items() if k.startswith("LeRobot v3.0, MP4"))
    figures.append(Figure("datasets", "LeRobot PNG / LeRobot MP4 (whole dataset)", png_size / mp4_size, "x"))
    return figures


if __name__ == "__main__":
    for figure in measure():
        print(figure.as_dict())
