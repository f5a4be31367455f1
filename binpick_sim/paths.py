"""Where the package's shared files (config/, urdf/, launch/) are, in a checkout or an install."""
from __future__ import annotations

from pathlib import Path

PACKAGE = "binpick_sim"


def share_dir() -> Path:
    """The folder holding config/ and urdf/: the source tree if run from it, else the ament index."""
    source_tree = Path(__file__).resolve().parent.parent
    if (source_tree / "package.xml").is_file() and (source_tree / "config").is_dir():
        return source_tree
    from ament_index_python.packages import get_package_share_directory  # installed with ROS, no rclpy

    return Path(get_package_share_directory(PACKAGE))


def default_config() -> Path:
    return share_dir() / "config" / "scene.yaml"
