"""Camera presets for learning from pixels (doc/gym.md "Learning": image observations).

The scene file's camera looks at the whole cell from 0.85 m away: at 64×64 a 1–3 cm object there covers
a pixel or two, too few to learn a grasp from. A preset replaces the camera's pose and lens (never its
image size, which `camera_size` sets) with one that frames the pick bin: from the side facing the robot,
looking down at the bin's centre steeply enough to see into it over its far wall, the bin's inside
filling the image. The arm comes down on the bin from above, so the gripper is in view while it grasps.
"""
from __future__ import annotations

import math

from ..cell.vision.labels import CODES
from ..config import CameraConfig, Config, replaced, with_changes

PRESETS = ("pick_bin",)
SEGMENTATION_LOW = min(CODES.values())  # the lowest id a segmentation observation holds (labels.CELL)
PICK_BIN_DISTANCE = 0.40  # m from the bin floor's centre to the camera
PICK_BIN_PITCH_DEG = 62.0  # looking down from the horizontal
PICK_BIN_MARGIN = 1.2  # the field of view spans the bin's longer side times this


def pick_bin_camera(config: Config) -> CameraConfig:
    """The scene's camera with the pick-bin preset's pose and lens (pick_bin_view), checked as a scene file's."""
    return replaced(config.camera, "camera.", **pick_bin_view(config))


def pick_bin_view(config: Config) -> dict:
    """The camera keys of a world-fixed camera on the bin's +x side (away from the robot's base, which the bins face along
    x), aimed at the centre of the bin's floor along the bin's own x axis, so the bin's walls line up
    with the image's; its vertical field of view just wider than the bin."""
    pick = config.scene.pick_bin
    bx, by, bz = pick.position
    yaw = math.radians(pick.orientation_deg[2])
    pitch = math.radians(PICK_BIN_PITCH_DEG)
    across = PICK_BIN_DISTANCE * math.cos(pitch)
    position = (bx + across * math.cos(yaw), by + across * math.sin(yaw),
                bz + pick.wall_thickness + PICK_BIN_DISTANCE * math.sin(pitch))
    fov = math.degrees(2 * math.atan(max(pick.size[:2]) * PICK_BIN_MARGIN / 2 / PICK_BIN_DISTANCE))
    return {"parent": "world", "position": position,
            "orientation_deg": (0.0, PICK_BIN_PITCH_DEG, pick.orientation_deg[2] + 180.0),
            "fov_deg": fov, "near": 0.05, "far": 1.5}


def with_preset(config: Config, preset: str | None) -> Config:
    """`config` with its camera replaced by the preset's (None: unchanged); ValueError for an unknown name."""
    if preset is None:
        return config
    if preset not in PRESETS:
        raise ValueError(f"camera_preset must be one of {PRESETS} or None, got {preset!r}")
    return with_changes(config, camera=pick_bin_view(config))
