"""The ROS user's path: `colcon build` installs the package the way `ros2 run` / `ros2 launch` expect,
and the installed executable runs from the install tree with its shared files."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rcl_interfaces.srv import GetParameters

from binpick_sim.nodes.clients.client import TOPICS, SimClient

REPO = Path(__file__).resolve().parents[2]
FILES = ("binpick_cell.srdf", "kinematics.yaml", "joint_limits.yaml", "ompl_planning.yaml", "moveit_controllers.yaml",
         "sensors_3d.yaml", "pilz_cartesian_limits.yaml")  # launch/moveit.launch.py's FILES
COLCON = Path(sys.executable).parent / "colcon"


@pytest.fixture(scope="module")
def install(tmp_path_factory):
    workspace = tmp_path_factory.mktemp("ws")
    (workspace / "src").mkdir()
    shutil.copytree(REPO, workspace / "src" / "binpick_sim",
                    ignore=shutil.ignore_patterns(".venv", ".git", "build", "install", "log", "__pycache__"))
    result = subprocess.run([str(COLCON), "build", "--event-handlers", "console_direct-"], cwd=workspace,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return workspace / "install" / "binpick_sim"


def test_colcon_installs_what_ros2_tools_look_for(install):
    share = install / "share" / "binpick_sim"
    assert (install / "share" / "ament_index" / "resource_index" / "packages" / "binpick_sim").is_file()
    for relative in ("package.xml", "config/scene.yaml", "launch", "urdf", "config/ros2_controllers.yaml"):
        assert (share / relative).exists(), relative
    for name in FILES:  # the MoveIt files, where MoveItConfigsBuilder looks (test_moveit_config.py)
        assert (share / "config" / name).is_file(), name
    # every mesh the description names by package:// URI is in the share, as RViz resolves it there
    from binpick_sim.config import load_config
    from binpick_sim.description import MESH_URI, cell_description

    meshes = re.findall(r'filename="([^"]+)"', cell_description(load_config(share / "config" / "scene.yaml")))
    assert meshes and all(m.startswith(MESH_URI) for m in meshes)
    for uri in meshes:
        assert (share / "meshes" / "franka_panda" / uri.removeprefix(MESH_URI)).is_file(), uri
    assert (share / "meshes" / "franka_panda" / "LICENSE.txt").is_file()
    assert (share / "meshes" / "franka_panda" / "visual" / "link1.mtl").is_file()  # the OBJ's materials beside it
    for executable in ("sim", "demo", "rollouts"):
        assert os.access(install / "lib" / "binpick_sim" / executable, os.X_OK), executable


def test_installed_executable_runs_from_the_install_tree(install, ros_context):
    site = next((install / "lib").glob("python3*/site-packages"))
    env = dict(os.environ, PYTHONPATH=f"{site}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
               AMENT_PREFIX_PATH=str(install))
    process = subprocess.Popen([str(install / "lib" / "binpick_sim" / "sim"), "--ros-args",
                                "-p", "camera:=false", "-p", "realtime_factor:=0.0"],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    client = SimClient("probe", context=ros_context, topics={"joint_states": TOPICS["joint_states"]})
    try:
        client.wait_for_topics(["joint_states"], timeout=60)
        get = client.node.create_client(GetParameters, "world/get_parameters")
        client.spin_until(get.service_is_ready, 20, "world/get_parameters")
        future = get.call_async(GetParameters.Request(names=["config"]))
        client.spin_until(future.done, 20, "the config parameter")
        assert future.result().values[0].string_value == str(install / "share" / "binpick_sim" / "config" / "scene.yaml")
    finally:
        client.close()
        process.terminate()
        output, _ = process.communicate(timeout=10)
    assert process.returncode == 0, output


def test_installed_executables_need_no_package_metadata(install, tmp_path):
    """colcon's `setup.py install` would write setuptools' wrappers, which look the distribution up first
    (`load_entry_point('binpick-sim==0.1.0', ...)`) and die with PackageNotFoundError where the package
    imports but its egg-info is not on the path; setup.py writes executables that only import it. Run
    here with the package importable from a folder without any metadata beside it."""
    for executable in ("sim", "demo", "description", "rollouts"):
        text = (install / "lib" / "binpick_sim" / executable).read_text()
        assert text.startswith("#!") and "from binpick_sim." in text, text
        assert "load_entry_point" not in text and "importlib" not in text, text
    site = next((install / "lib").glob("python3*/site-packages"))
    (tmp_path / "binpick_sim").symlink_to(site / "binpick_sim")  # the modules alone, no egg-info
    result = subprocess.run([str(install / "lib" / "binpick_sim" / "description")], capture_output=True, text=True,
                            timeout=120, env=dict(os.environ, PYTHONPATH=str(tmp_path), AMENT_PREFIX_PATH=str(install)))
    assert result.returncode == 0 and "<robot" in result.stdout, result.stderr


def test_the_tests_give_a_sourced_workspace_to_their_processes(install):
    """Under `colcon test` the package is already installed (the user sourced the workspace): ros_env finds
    that prefix through the ament index, builds nothing, and every process a test starts imports the
    installed package from its site-packages, as in a sourced terminal (issue 34: it was left out, and the
    installed executables died for want of it). Probed in a fresh process whose ament index knows the
    workspace while its PYTHONPATH holds only the checkout, as pytest's own sys.path does."""
    probe = ("import subprocess, sys\n"
             "import ros_env\n"
             "print(ros_env.prefixes()[0])\n"
             "child = 'import binpick_sim; print(binpick_sim.__file__)'\n"
             "print(subprocess.run([sys.executable, '-c', child], env=ros_env.shell_env(), capture_output=True, "
             "text=True, check=True).stdout.strip())\n"
             "description = str(ros_env.prefixes()[0] / 'lib' / 'binpick_sim' / 'description')\n"
             "print(subprocess.run([description], env=ros_env.shell_env(), capture_output=True, text=True).returncode)")
    env = dict(os.environ, AMENT_PREFIX_PATH=os.pathsep.join([str(install), os.environ.get("AMENT_PREFIX_PATH", "")]),
               PYTHONPATH=os.pathsep.join([str(REPO / "test"), str(REPO)]))
    result = subprocess.run([sys.executable, "-c", probe], env=env, cwd=install, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    prefix, module, returncode = result.stdout.split()
    assert Path(prefix) == install
    assert Path(module).is_relative_to(install), module
    assert returncode == "0", result.stdout


def test_colcon_test_runs_the_package_tests(install):
    """`colcon test` finds pytest as the package's test runner (setup.py's test extra) and runs its tests;
    here one quick file, to keep the suite short (a user's `colcon test` runs them all)."""
    workspace = install.parent.parent
    subprocess.run([str(COLCON), "test", "--packages-select", "binpick_sim", "--event-handlers", "console_direct-",
                    "--pytest-args", "test/robustness/test_bad_scene_files.py"], cwd=workspace, capture_output=True,
                   text=True, timeout=300)
    summary = subprocess.run([str(COLCON), "test-result", "--all", "--verbose"], cwd=workspace, capture_output=True,
                             text=True, timeout=60).stdout
    match = re.search(r"Summary: (\d+) tests, (\d+) errors, (\d+) failures, (\d+) skipped", summary)
    assert match, summary
    tests, errors, failures, _ = map(int, match.groups())
    assert tests > 10 and errors == failures == 0, summary
