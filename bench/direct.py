"""The scene in this process without ROS, for the raw-PyBullet reference figures."""
from __future__ import annotations

from pathlib import Path

import yaml

from binpick_sim.config import load_config, with_changes
from binpick_sim.paths import default_config
from binpick_sim.cell.bin_picking_sim import BinPickingSim

TIMESTEP = load_config(default_config()).simulation.timestep


def direct_sim(seed: int = 0, timestep: float | None = None, renderer: str | None = None,
               **camera_changes) -> BinPickingSim:
    """The same scene in this process, for the raw-PyBullet reference figures."""
    config = load_config(default_config())
    if renderer is not None:
        config = with_changes(config, simulation={"renderer": renderer})
    if timestep is not None:
        config = with_changes(config, simulation={"timestep": timestep})
    if camera_changes:
        config = with_changes(config, camera=camera_changes)
    sim = BinPickingSim(config)
    sim.reset(seed=seed)
    return sim


def scene_data(changes: dict, base: Path | None = None) -> dict:
    """A scene file's contents (default: the package's) with `changes` applied, keyed by dotted paths
    such as `arm.finger_gear`."""
    data = yaml.safe_load((base or default_config()).read_text())
    for dotted, value in changes.items():
        *parents, last = dotted.split(".")
        node = data
        for key in parents:
            node = node[key]
        node[last] = value
    return data
