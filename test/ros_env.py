"""The ROS environment the tests that use the real ROS tools need (launch, launch_testing, ros2cli,
control_msgs — on a ROS 2 install, or from ../shared/ros-tools in CI).

- `missing(...)`: the reason to skip, naming what is not installed, on a plain machine.
- `isolate()`: a ROS domain of this test process's own and DDS on loopback (before rclpy starts).
- `prefixes()`: ament prefixes in which `ros2 run/launch binpick_sim`, launch_ros and the ament index
  find this package — the workspace the ament index already knows (a sourced workspace, as under
  `colcon test`), else a real `colcon build` of this checkout, as a ROS user's workspace has it — and
  stand-ins for the C++ executables the launch file starts (robot_state_publisher, rviz2, see
  stand_ins/) where the real ones are absent. They go on this process's AMENT_PREFIX_PATH and their
  site-packages on its PYTHONPATH, as `source install/setup.bash` puts them, so every process a test
  starts (subprocess, launch, `ros2 ...`) has them.
- `shell_env()`: the environment of a terminal that has sourced that workspace.
"""
from __future__ import annotations

import atexit
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STAND_INS = Path(__file__).resolve().parent / "stand_ins"
VENV_BIN = Path(sys.executable).parent
HINT = "it comes with ROS 2; CI installs ../shared/ros-tools"


def missing(*modules: str) -> str | None:
    """Why a test cannot run here (the Python modules it needs that are not installed), or None."""
    absent = [m for m in modules if importlib.util.find_spec(m) is None]
    return f"needs {', '.join(absent)} ({HINT})" if absent else None


def isolate() -> None:
    """A ROS domain of this process's own (parallel runs and a user's stack are not heard) on loopback,
    and no Fast DDS profile of the user's. `BINPICK_TEST_DOMAIN_ID` picks the domain instead of the
    process id, for developers who run several suites side by side and want them apart for certain."""
    os.environ["ROS_DOMAIN_ID"] = str(domain())
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    from binpick_sim.nodes.common.dds import PROFILE_VARIABLE  # (imports no ROS)

    os.environ.pop(PROFILE_VARIABLE, None)  # Fast DDS as the sim sets it up
    if (Path(sys.prefix) / "share" / "ament_index").is_dir():  # the venv is the ROS wheels' ament prefix
        _prepend("AMENT_PREFIX_PATH", sys.prefix, os.environ)


def announce_often() -> None:
    """This process's participants announce themselves every 0.5 s, as a gym env's ROS backend has its own do
    (binpick_sim/nodes/common/dds.py `client_profile`: a `sim` started after a test's participant otherwise
    was discovered ~2.5 s late, about one start in three): a first participant made and let go under the
    package's client profile, which Fast DDS keeps as this process's defaults. The `sim`s a test starts do
    not inherit it. After rclpy can load (the session's first test), before any other participant."""
    import rclpy
    from rclpy.context import Context

    from binpick_sim.nodes.common.dds import client_profile

    context = Context()
    with client_profile():
        rclpy.init(context=context)
        try:
            rclpy.create_node("binpick_test_first_participant", context=context).destroy_node()
        finally:
            rclpy.try_shutdown(context=context)


def domain() -> int:
    """This process's ROS domain. Under pytest-xdist (`make test` runs two workers) each worker gets its own,
    counted from the run's controller process, so two workers of one run never share one; a developer's
    `BINPICK_TEST_DOMAIN_ID` is the base that the worker's number is added to."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw0", "gw1", ... in a worker, unset otherwise
    number = int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else 0
    if os.environ.get("BINPICK_TEST_DOMAIN_ID"):
        return int(os.environ["BINPICK_TEST_DOMAIN_ID"]) + number
    run = os.getppid() if worker else os.getpid()
    return 1 + (run % 50) * 4 + number % 4  # 1..200: Fast DDS's ports stay valid below domain 232


def _installed(package: str) -> Path | None:
    """The ament prefix that holds `package` (found through AMENT_PREFIX_PATH), or None."""
    from ament_index_python.packages import PackageNotFoundError, get_package_prefix

    try:
        return Path(get_package_prefix(package))
    except PackageNotFoundError:
        return None


_PREFIXES: list[Path] | None = None


def prefixes() -> list[Path]:
    """Build (once per process) and put on AMENT_PREFIX_PATH what the launch file and `ros2` need."""
    global _PREFIXES
    if _PREFIXES is None:
        base = Path(tempfile.mkdtemp(prefix="binpick_ament_"))
        atexit.register(shutil.rmtree, base, ignore_errors=True)
        _PREFIXES = [_installed("binpick_sim") or colcon_build(REPO, base / "ws")]
        for package, executable in (("robot_state_publisher", "robot_state_publisher"), ("rviz2", "rviz2")):
            if not _installed(package):
                _PREFIXES.append(stand_in(package, executable, base / "stand_ins"))
        for prefix in reversed(_PREFIXES):  # a sourced workspace's own order is kept: only what is missing
            _add("AMENT_PREFIX_PATH", str(prefix), os.environ)
            for folder in _site_packages(prefix):
                _add("PYTHONPATH", folder, os.environ)
    return _PREFIXES


def colcon_build(source: Path, workspace: Path) -> Path:
    """`colcon build` of the package at `source`, as a user's workspace would; its install prefix."""
    workspace.mkdir(parents=True, exist_ok=True)
    result = subprocess.run([str(VENV_BIN / "colcon"), "--log-base", str(workspace / "log"), "build",
                             "--base-paths", str(source), "--build-base", str(workspace / "build"),
                             "--install-base", str(workspace / "install"), "--event-handlers", "console_direct-"],
                            cwd=workspace, capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise RuntimeError(f"colcon build failed:\n{result.stdout}\n{result.stderr}")
    return workspace / "install" / "binpick_sim"


def stand_in(package: str, executable: str, root: Path) -> Path:
    """An ament prefix holding `lib/<package>/<executable>`: the stand-in script run by this Python."""
    prefix = root / package
    marker = prefix / "share" / "ament_index" / "resource_index" / "packages" / package
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text("")
    script = prefix / "lib" / package / executable
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(f"#!{sys.executable}\n" + (STAND_INS / f"{executable}.py").read_text())
    script.chmod(0o755)
    return prefix


def _site_packages(prefix: Path) -> list[str]:
    return [str(p) for p in sorted((prefix / "lib").glob("python3*/site-packages"))]


def shell_env() -> dict[str, str]:
    """A terminal's environment after `source install/setup.bash` of the workspace (and the venv)."""
    prefixes()
    env = dict(os.environ)
    _prepend("PATH", str(VENV_BIN), env)
    return env


def _prepend(name: str, value: str, env) -> None:
    parts = [p for p in env.get(name, "").split(os.pathsep) if p and p != value]
    env[name] = os.pathsep.join([value, *parts])


def _add(name: str, value: str, env) -> None:
    """`value` first in the path list `name` unless it is there already (then its place is kept)."""
    if value not in env.get(name, "").split(os.pathsep):
        _prepend(name, value, env)
