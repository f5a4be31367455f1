"""What the rollouts tests share: one local Ray cluster per test module."""
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A local two-CPU Ray cluster whose workers import this checkout and this folder (rollout_policies.py),
    with BINPICK_KILL_DIR: a folder of its own, yielded, where a test tells a worker to die."""
    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    kill_dir = tmp_path_factory.mktemp("kills")
    path = os.pathsep.join([str(REPO), str(REPO / "test" / "rollouts"), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": path, "BINPICK_KILL_DIR": str(kill_dir)}})
    try:
        yield kill_dir
    finally:
        ray.shutdown()
