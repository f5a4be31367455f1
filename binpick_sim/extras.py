"""The optional extras: packages some commands need beyond requirements.txt, each pinned in a requirements
file of its own, and the one line such a command prints when its extra is not installed.

Why one place: without their extra the commands failed each their own way (`record` with a
ModuleNotFoundError traceback, `rollouts` with a pip line of its own); each now names the file that pins
what it needs, and stops before it has written anything (issue 53).
"""
from __future__ import annotations

import importlib

# importable module -> the requirements file (at the top of binpick_sim's source) that pins it
EXTRAS = {
    "rosbags": "requirements-datasets.txt",
    "minari": "requirements-datasets.txt",
    "datasets": "requirements-datasets.txt",
    "av": "requirements-datasets.txt",
    "moviepy": "requirements-video.txt",
    "panda_gym": "requirements-bench.txt",
    "sklearn": "requirements-bench.txt",
    "stable_baselines3": "requirements-her.txt",
    "torch": "requirements-her.txt",
    "ompl": "requirements-planning.txt",
}
# ROS packages no requirements file can pin (not on PyPI): a ROS 2 Jazzy install has them
ROS_PACKAGES = {"control_msgs", "moveit_msgs", "simulation_interfaces", "tf2_ros", "tf2_msgs"}


class MissingExtra(ImportError):
    """A command's optional extra is not installed; the message is the one line to show."""


def require(command: str, *modules: str) -> None:
    """MissingExtra naming what `command` needs and the files that pin it, unless every module imports."""
    missing = []
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(module)
    if missing:
        files = sorted({EXTRAS[module] for module in missing if module in EXTRAS})
        how = [f"pip install {' '.join('-r ' + f for f in files)} (the file{'s' * (len(files) > 1)} at the top of "
               "binpick_sim's source)"] if files else []
        ros = [module for module in missing if module in ROS_PACKAGES]
        how += [f"apt install {' '.join('ros-jazzy-' + m.replace('_', '-') for m in ros)} (ROS 2 Jazzy)"] if ros else []
        raise MissingExtra(f"{command} needs {', '.join(missing)}, not installed: {'; '.join(how)}")
