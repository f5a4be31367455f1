"""What binpick_sim imports against what each way of installing it provides: requirements files (the venv of
`make demo` / `make test`), package.xml (rosdep on Ubuntu 24.04 (noble) + Jazzy).

- Every package imported is pinned in a requirements file (requirements.txt or an extra's) or declared in
  package.xml. Issue 58: `record` imported rosidl_runtime_py, which neither provides; CI installed it with
  the ROS tools, so CI was green while the README's `make test` failed on every plain machine.

- What the code imports (every module of binpick_sim/, parsed with `ast`) and what the launch files start
  is declared: a ROS package as an exec_depend, a Python library by its rosdep key, and what is optional and
  left out (MoveIt, ros2_control, PyPI extras) is named in doc/ros.md with its install line. Nothing is
  declared that nothing uses.
- rosdep, simulated: every key resolves for noble, as the rosdep database and Jazzy's distribution file say
  (facts recorded below from ros/rosdistro at 8468e88ccd52, 2026-08-22: rosdep/base.yaml, rosdep/python.yaml,
  jazzy/distribution.yaml), and what it would run is what the docs prepare: the pip keys need
  PIP_BREAK_SYSTEM_PACKAGES (rosdep's src/rosdep2/platforms/pip.py, ros-infrastructure/rosdep: on Python >= 3.11
  outside a venv it refuses pip keys without it or pip.conf's break-system-packages, and passes it through
  sudo with --preserve-env), and pybullet, which has no wheel for noble's Python 3.12, compiles (g++, python3-dev)."""
import ast
import importlib.metadata
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import manual
import ros_env

REPO = ros_env.REPO
PACKAGE_XML = REPO / "package.xml"

# A module the code imports -> its package.xml key. ROS packages are imported by their own names.
ROS_MODULES = {"rclpy", "rcl_interfaces", "rosgraph_msgs", "builtin_interfaces", "std_msgs",
               "std_srvs", "sensor_msgs", "geometry_msgs", "trajectory_msgs", "visualization_msgs", "diagnostic_msgs",
               "ament_index_python", "cv_bridge", "control_msgs", "simulation_interfaces", "moveit_msgs", "shape_msgs",
               "tf2_msgs"}
PYTHON_KEYS = {"numpy": "python3-numpy", "cv2": "python3-opencv", "yaml": "python3-yaml",
               "pybullet": "python3-pybullet-pip", "pybullet_data": "python3-pybullet-pip",
               "pybullet_utils": "python3-pybullet-pip", "gymnasium": "python3-gymnasium-pip", "tqdm": "python3-tqdm",
               "scipy": "python3-scipy"}
# Optional to the code (imported where the feature is used) and not in package.xml: the PyPI distribution the
# docs' pip line names.
PYPI_EXTRAS = {"re2": "google-re2", "ray": "ray[data,tune]", "pyarrow": "pyarrow", "pandas": "ray[data,tune]",
               "rosbags": "rosbags", "minari": "minari", "datasets": "datasets", "av": "av"}
# Optional ROS packages the code imports where they are there (a feature off without): doc/ros.md says so.
OPTIONAL_ROS = {"control_msgs", "simulation_interfaces", "moveit_msgs", "shape_msgs", "tf2_msgs"}
# What the launch files run or import that the code does not: declared, or left out with an apt line.
LAUNCHED = {"launch", "launch_ros", "robot_state_publisher", "rviz2"}
LAUNCHED_OPTIONAL = {"moveit_ros_move_group": "ros-jazzy-moveit",
                     "controller_manager": "ros-jazzy-ros2-control ros-jazzy-ros2-controllers "
                                           "ros-jazzy-joint-state-topic-hardware-interface"}

# --- facts from ros/rosdistro (8468e88ccd52) -------------------------------------------------------------------
# jazzy/distribution.yaml: package -> the repository release that has it (rosdep resolves a ROS package on
# noble to the apt package ros-jazzy-<name, _ as ->).
JAZZY_RELEASED = {
    "rclpy": "rclpy 7.1.11-1", "rcl_interfaces": "rcl_interfaces 2.0.4-1", "rosgraph_msgs": "rcl_interfaces 2.0.4-1",
    "builtin_interfaces": "rcl_interfaces 2.0.4-1",
    "std_msgs": "common_interfaces 5.3.8-1", "std_srvs": "common_interfaces 5.3.8-1",
    "sensor_msgs": "common_interfaces 5.3.8-1", "geometry_msgs": "common_interfaces 5.3.8-1",
    "trajectory_msgs": "common_interfaces 5.3.8-1", "visualization_msgs": "common_interfaces 5.3.8-1",
    "diagnostic_msgs": "common_interfaces 5.3.8-1", "shape_msgs": "common_interfaces 5.3.8-1",
    "ament_index_python": "ament_index 1.8.4-1", "cv_bridge": "vision_opencv 4.1.0-1",
    "control_msgs": "control_msgs 5.9.0-1", "simulation_interfaces": "simulation_interfaces 1.5.1-1",
    "moveit_msgs": "moveit_msgs 2.6.0-1", "tf2_msgs": "geometry2 0.36.22-1", "tf2_ros_py": "geometry2 0.36.22-1",
    "launch": "launch 3.4.11-1", "launch_ros": "launch_ros 0.26.12-1", "launch_testing": "launch 3.4.11-1",
    "launch_testing_ros": "launch_ros 0.26.12-1", "robot_state_publisher": "robot_state_publisher 3.3.4-1",
    "rviz2": "rviz 14.1.23-1", "ros2cli_common_extensions": "ros2cli_common_extensions 0.3.1-1",
    "urdfdom_py": "urdf_parser_py 1.2.1-3",
    # the optional ones the docs name
    "moveit_ros_move_group": "moveit 2.12.4-1", "controller_manager": "ros2_control 4.47.0-1",
    "joint_state_topic_hardware_interface": "topic_based_hardware_interfaces 1.1.0-1",
}
# rosdep/base.yaml + rosdep/python.yaml: system keys -> (installer, packages) for ubuntu, noble included
NOBLE_KEYS = {
    "python3-numpy": ("apt", "python3-numpy"), "python3-opencv": ("apt", "python3-opencv"),
    "python3-yaml": ("apt", "python3-yaml"), "python3-tqdm": ("apt", "python3-tqdm"),
    "python3-scipy": ("apt", "python3-scipy"), "python3-pytest": ("apt", "python3-pytest"),
    "python3-pytest-timeout": ("apt", "python3-pytest-timeout"),
    "python3-pybullet-pip": ("pip", "pybullet"), "python3-gymnasium-pip": ("pip", "gymnasium"),  # ubuntu '*' (focal: none)
}
NO_WHEEL_FOR_PY312 = {"pybullet"}  # PyPI has pybullet 3.2.7 wheels up to cp311 only: pip compiles it on noble


def declared() -> dict[str, set[str]]:
    """package.xml's keys by tag."""
    root = ET.parse(PACKAGE_XML).getroot()
    tags: dict[str, set[str]] = {}
    for element in root:
        if element.tag.endswith("depend"):
            tags.setdefault(element.tag, set()).add(element.text.strip())
    return tags


def imported_modules(folder: Path) -> set[str]:
    """The top-level modules every file under `folder` imports (absolute imports, anywhere in the file)."""
    modules = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                modules |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    return modules - set(sys.stdlib_module_names) - {"binpick_sim"}


def pins(path: Path) -> list[tuple[str, str]]:
    """(distribution as PEP 503 normalises it, version) of every `name==version` line of a requirements file."""
    return [(normalised(match.group(1)), match.group(3)) for line in path.read_text().splitlines()
            if (match := re.match(r"^([A-Za-z0-9_.\-]+)(\[[^\]]*\])?==([^\s;#]+)", line.strip()))]


def pinned_distributions() -> set[str]:
    """The distributions every requirements file pins (`name==version`), named as PEP 503 normalises them."""
    return {name for path in REPO.glob("requirements*.txt") for name, _ in pins(path)}


def normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_a_package_pinned_for_the_one_venv_has_one_version():
    """The requirements files the Makefile installs into the project's venv (`$(PY) -m pip install --requirement`:
    requirements.txt and the extras) pin a package they share at one version: two pins would leave the later
    install to break the earlier extra (pillow 13 for bench-her's matplotlib under moviepy's < 12). The docs'
    venv is its own."""
    makefile = (REPO / "Makefile").read_text()
    files = re.findall(r"^\t(?:[A-Z_]+=\S+ )*\$\(PY\) -m pip install --quiet --requirement (\S+)$", makefile, re.MULTILINE)
    assert {"requirements.txt", "requirements-her.txt", "requirements-video.txt"} <= set(files)
    versions: dict[str, set[tuple[str, str]]] = {}
    for path in (REPO / name for name in files):
        for name, version in pins(path):
            versions.setdefault(name, set()).add((version, path.name))
    conflicting = {name: sorted(pins) for name, pins in versions.items() if len({v for v, _ in pins}) > 1}
    assert conflicting == {}


def test_every_imported_package_is_pinned_in_a_requirements_file_or_declared_in_package_xml():
    """Every import counts, at the top of a module or in a function: a lazy import is still one a command
    reaches. A module of no distribution installed here is not pinned either."""
    distributions = importlib.metadata.packages_distributions()  # module -> the distributions holding it
    pinned, ros = pinned_distributions(), set().union(*declared().values())
    unprovided = sorted(module for module in imported_modules(REPO / "binpick_sim") if module not in ros
                        and not any(normalised(d) in pinned for d in distributions.get(module, [])))
    assert unprovided == [], "imported, neither pinned in a requirements file nor declared in package.xml"


def test_the_pin_check_maps_modules_to_their_distributions():
    """Lazy imports are seen, and ROS wheels and renamed modules map to the distributions pinned for them."""
    assert {"rclpy", "pybullet", "numpy", "gymnasium", "rosbags", "cv2", "yaml"} <= imported_modules(REPO / "binpick_sim")
    distributions, pinned = importlib.metadata.packages_distributions(), pinned_distributions()
    for module in ("cv2", "rclpy", "yaml"):  # opencv-python-headless, a ROS 2 wheel, PyYAML
        assert any(normalised(d) in pinned for d in distributions[module]), module


def launched_packages() -> set[str]:
    """The packages of every launch_ros Node(package=...) in launch/*.py."""
    packages = set()
    for path in (REPO / "launch").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Node":
                packages |= {k.value.value for k in node.keywords if k.arg == "package" and isinstance(k.value, ast.Constant)}
    return packages - {"binpick_sim"}


def test_package_xml_declares_what_the_code_imports():
    imports = imported_modules(REPO / "binpick_sim")
    unknown = imports - ROS_MODULES - set(PYTHON_KEYS) - set(PYPI_EXTRAS)
    assert not unknown, f"imports nobody mapped to a package.xml key or an optional extra: {sorted(unknown)}"
    run = declared()["exec_depend"]
    needed = {m for m in imports if m in ROS_MODULES} | {PYTHON_KEYS[m] for m in imports if m in PYTHON_KEYS}
    assert needed <= run, f"imported, not declared: {sorted(needed - run)}"
    launch_imports = imported_modules(REPO / "launch")
    assert launch_imports <= {"launch", "launch_ros", "yaml", "ament_index_python"}, launch_imports
    started = launched_packages()
    assert started - set(LAUNCHED_OPTIONAL) <= run and started >= set(LAUNCHED_OPTIONAL), started
    assert run - needed - LAUNCHED == set(), f"declared, used by nothing: {sorted(run - needed - LAUNCHED)}"
    assert not run & (set(PYPI_EXTRAS.values()) | set(LAUNCHED_OPTIONAL))
    assert ET.parse(PACKAGE_XML).getroot().find("export/build_type").text == "ament_python"


def test_the_optional_ones_are_said_optional_in_the_docs():
    section = manual.section("What is optional", "ros.md")
    for package in sorted(OPTIONAL_ROS):
        assert f"`{package}`" in section, package
    for package, apt in LAUNCHED_OPTIONAL.items():
        assert f"sudo apt install {apt}" in section, package
    for distribution in set(PYPI_EXTRAS.values()):
        assert re.search(rf"pip install --break-system-packages [^\n]*{re.escape(distribution)}", section), distribution


def rosdep_plan() -> dict[str, set[str]]:
    """What `rosdep install --from-paths src --ignore-src -y` would install on noble for package.xml (every
    dependency tag, as rosdep takes them by default), by installer; a key it cannot resolve fails here."""
    plan: dict[str, set[str]] = {"apt": set(), "pip": set()}
    for tag, keys in declared().items():
        for key in keys:
            if key in NOBLE_KEYS:
                installer, package = NOBLE_KEYS[key]
                plan[installer].add(package)
            else:
                assert key in JAZZY_RELEASED, f"{tag} {key}: no rosdep rule and no Jazzy release (rosdep would stop)"
                plan["apt"].add("ros-jazzy-" + key.replace("_", "-"))
    return plan


def test_rosdep_on_noble_resolves_and_installs_as_the_docs_say():
    plan = rosdep_plan()
    assert plan["pip"] == {"pybullet", "gymnasium"} and "ros-jazzy-control-msgs" in plan["apt"]
    docs = {page: "\n".join(manual.blocks(manual.section(title, page), "bash")) for title, page in
            (("The ROS user's path in five commands", "README.md"), ("The ROS user's path", "ros.md"))}
    for page, commands in docs.items():
        rosdep = [line for line in commands.splitlines() if "rosdep install" in line]
        assert rosdep, page
        for line in rosdep:  # pip keys: refused on Python 3.12 outside a venv without it
            assert re.search(r"PIP_BREAK_SYSTEM_PACKAGES=1 rosdep install --from-paths src", line), (page, line)
        # pybullet compiles: its build tools come before rosdep
        prerequisites = commands.index("sudo apt install g++ python3-dev")
        assert prerequisites < commands.index("rosdep install") and plan["pip"] & NO_WHEEL_FOR_PY312
    assert "20 min" in manual.section("The ROS user's path", "ros.md")
    # the PyPI distributions rosdep's pip installs unpinned are the project's own requirements
    requirements = (REPO / "requirements.in").read_text()
    assert all(re.search(rf"^{name}$", requirements, re.M) for name in plan["pip"])


def test_the_documented_check_finds_the_dependencies(tmp_path):
    """doc/ros.md's check after the install, run as written in a sourced workspace's shell."""
    if ros_env.missing("colcon") is not None:
        pytest.skip(ros_env.missing("colcon"))
    line = next(line for line in "\n".join(manual.blocks(manual.section("The ROS user's path", "ros.md"), "bash"))
                .splitlines() if line.startswith("python3 -c "))
    result = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=ros_env.shell_env(), capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0 and "binpick_sim: dependencies found" in result.stdout, result.stderr
