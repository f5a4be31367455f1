"""Every package binpick_sim imports is provided by what a user installs: a pin in requirements.txt or an
extra's requirements file (the venv of `make demo` / `make test`), or a dependency in package.xml (rosdep on
a ROS install). Issue 58: `record` imported rosidl_runtime_py, which neither provides; CI installed it with
the ROS tools, so CI was green while the README's `make test` failed on every plain machine.

Every `import` in the package counts, at the top of a module or inside a function: a lazy import is still
one that a command reaches.
"""
from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import xml.etree.ElementTree as ET

import ros_env

PACKAGE = ros_env.REPO / "binpick_sim"


def imported_modules() -> dict[str, set[str]]:
    """Top-level name of every module imported from outside the package -> the files that import it."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top != "binpick_sim" and top not in sys.stdlib_module_names and top != "__future__":
                    found.setdefault(top, set()).add(str(path.relative_to(ros_env.REPO)))
    return found


def pinned_distributions() -> set[str]:
    """The distributions every requirements file pins (`name==version`), normalised as PEP 503 names them."""
    names = set()
    for path in ros_env.REPO.glob("requirements*.txt"):
        for line in path.read_text().splitlines():
            if match := re.match(r"^([A-Za-z0-9_.\-]+)(\[[^\]]*\])?==", line.strip()):
                names.add(normalised(match.group(1)))
    return names


def normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def package_xml_dependencies() -> set[str]:
    root = ET.parse(ros_env.REPO / "package.xml").getroot()
    return {e.text.strip() for e in root if e.tag.endswith("depend") and e.text}


def test_every_imported_package_is_pinned_in_a_requirements_file_or_declared_in_package_xml():
    distributions = importlib.metadata.packages_distributions()  # module name -> the distributions holding it
    pinned, declared = pinned_distributions(), package_xml_dependencies()
    unprovided = {}
    for module, files in sorted(imported_modules().items()):
        if module in declared:  # a ROS package (module and package share the name)
            continue
        if any(normalised(d) in pinned for d in distributions.get(module, [])):
            continue
        unprovided[module] = sorted(files)
    assert unprovided == {}, ("imported, but neither pinned in a requirements file nor declared in package.xml "
                              "(a module of no distribution installed here is not pinned either)")


def test_the_check_knows_the_packages_it_must_find():
    """The search above sees lazy imports and maps ROS wheels and renamed modules to their distributions."""
    imported = imported_modules()
    assert {"rclpy", "pybullet", "numpy", "gymnasium", "rosbags", "cv2", "yaml"} <= set(imported)
    assert "binpick_sim/recording.py" in imported["rosbags"]  # imported inside a function only
    distributions = importlib.metadata.packages_distributions()
    pinned = pinned_distributions()
    assert any(normalised(d) in pinned for d in distributions["cv2"])  # opencv-python-headless
    assert any(normalised(d) in pinned for d in distributions["rclpy"])  # a ROS 2 wheel from the registry
