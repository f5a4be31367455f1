"""A `sim` process and a ROS client in this one, for benchmarks that watch the stack from outside."""
from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

import rclpy
import yaml
from rclpy.context import Context

from binpick_sim.nodes.clients.client import SimClient
from binpick_sim.nodes.process.spawn import SimProcess

from .direct import scene_data


@contextlib.contextmanager
def sim_and_client(parameters: dict, topics: dict, config_changes: dict | None = None, context: Context | None = None,
                   **client_options):
    """Start `sim` with `parameters` (and a scene file with `config_changes` merged in); yield the
    process and a connected client (`client_options`: SimClient's, e.g. its executor). `context`: the
    client's ROS context (a test's; shut down by its owner), else one of its own for this block."""
    with tempfile.TemporaryDirectory() as folder:
        config_path = scene_file(Path(folder), config_changes or {})
        own_context = context is None
        if own_context:
            context = Context()
            rclpy.init(context=context)
        process = SimProcess({"config": config_path, **parameters}, log=Path(folder) / "sim.log")
        client = SimClient("bench", context=context, topics=topics, **client_options)
        try:
            client.wait_for_topics(list(topics), timeout=120)
            yield process, client
        finally:
            client.close()
            process.stop()
            if own_context:
                rclpy.try_shutdown(context=context)


def scene_file(folder: Path, changes: dict) -> Path:
    path = folder / "scene.yaml"
    path.write_text(yaml.safe_dump(scene_data(changes)))
    return path
