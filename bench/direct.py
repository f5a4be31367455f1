"""The scene in this process without ROS, for the raw-PyBullet reference figures."""
from __future__ import annotations

import dataclasses

from binpick_sim.config import load_config
from binpick_sim.paths import default_config
from binpick_sim.sim import BinPickingSim

TIMESTEP = load_config(default_config()).simulation.timestep


def direct_sim(seed: int = 0, timestep: float | None = None, **camera_changes) -> BinPickingSim:
    """The same scene in this process, for the raw-PyBullet reference figures."""
    config = load_config(default_config())
    if timestep is not None:
        config = dataclasses.replace(config, simulation=dataclasses.replace(config.simulation, timestep=timestep))
    if camera_changes:
        config = dataclasses.replace(config, camera=dataclasses.replace(config.camera, **camera_changes))
    sim = BinPickingSim(config)
    sim.reset(seed=seed)
    return sim
