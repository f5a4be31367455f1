import os
import sys
from glob import glob
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.develop import develop
from setuptools.command.install_scripts import install_scripts

PACKAGE = "binpick_sim"

# The executables (`ros2 run binpick_sim <name>`): name -> module:function.
EXECUTABLES = {
    "sim": "binpick_sim.nodes.process.entry:main",
    "demo": "binpick_sim.demo:main",
    "description": "binpick_sim.description:main",
    "rollouts": "binpick_sim.rollouts:main",
    "record": "binpick_sim.recording:main",
}


def panda_meshes() -> list[tuple[str, list[str]]]:
    """pybullet_data's Panda meshes (and their licence) for share/binpick_sim/meshes/franka_panda/, the folder
    the robot description's `package://binpick_sim/meshes/franka_panda/...` URIs name (description.py), so
    RViz and MoveIt anywhere the package is installed find them through the ament index. Read from the
    pybullet that rosdep installed before the build (package.xml's build_depend python3-pybullet-pip). Without
    it (pip's isolated build of an editable install, where nothing reads the share) none are installed, and
    description.local_meshes reads pybullet_data's own."""
    try:
        import pybullet_data
    except ImportError:
        print("binpick_sim: pybullet is not installed: no meshes in share/binpick_sim/meshes (RViz and MoveIt "
              "need them: rosdep install --from-paths src ... installs pybullet before the build)", file=sys.stderr)
        return []
    panda = Path(pybullet_data.getDataPath()) / "franka_panda"
    here = Path(__file__).resolve().parent

    def relative(path: Path) -> str:  # colcon takes data_files relative to the package only
        return os.path.relpath(path, here)
    target = f"share/{PACKAGE}/meshes/franka_panda"
    return [(target, [relative(panda / "LICENSE.txt")])] + [
        (f"{target}/{kind}", sorted(relative(f) for f in (panda / "meshes" / kind).iterdir() if f.is_file()))
        for kind in ("visual", "collision")]


def executable_script(target: str, python: str) -> str:
    """An executable that imports its function and calls it, as pip writes console scripts. setuptools'
    own wrappers (what `colcon build` gets from `setup.py install`/`develop`) first look the distribution
    up in the installed metadata (`load_entry_point('binpick-sim==0.1.0', ...)`): they fail with
    PackageNotFoundError wherever the package imports but its egg-info is not on the path, or pick the
    entry points of another copy of the package that is. This one needs only `binpick_sim` importable."""
    module, function = target.split(":")
    return (f"#!{python}\n"
            f"# {PACKAGE}: {target}, imported directly (written by setup.py)\n"
            "import sys\n\n"
            f"from {module} import {function}\n\n"
            "if __name__ == '__main__':\n"
            f"    sys.exit({function}())\n")


class InstallScripts(install_scripts):
    """`setup.py install` (colcon build): the executables of `executable_script` into lib/binpick_sim
    (setup.cfg's [install] install_scripts, which colcon passes on) instead of setuptools' wrappers."""

    def run(self):
        write_entry_points, self.no_ep = not self.no_ep, True  # setuptools' own ones: not written
        super().run()
        if write_entry_points:  # (no_ep was set by bdist_wheel/editable_wheel: pip writes those scripts)
            python = self.get_finalized_command("build_scripts").executable or os.path.normpath(sys.executable)
            for name, target in EXECUTABLES.items():
                self.write_script(name, executable_script(target, python))


class Develop(develop):
    """`setup.py develop` (colcon build --symlink-install, setup.cfg's [develop] script_dir): the same."""

    def install_wrapper_scripts(self, dist):
        if not self.exclude_scripts:
            for name, target in EXECUTABLES.items():
                self.write_script(name, executable_script(target, os.path.normpath(sys.executable)))


setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*", "bench", "bench.*"]),  # the benchmarks run from a checkout
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*")),
        (f"share/{PACKAGE}/config", [f for f in glob("config/*") if Path(f).is_file()]),
        (f"share/{PACKAGE}/urdf", glob("urdf/*")),
    ] + panda_meshes(),
    install_requires=["setuptools"],
    extras_require={"test": ["pytest"]},  # colcon test runs pytest only where pytest is a test dependency
    zip_safe=True,
    maintainer="binpick_sim developers",
    maintainer_email="binpick-sim@example.com",
    description="PyBullet bin-picking cell served as ROS 2 nodes, with Gymnasium envs.",
    license="Apache-2.0",
    # Still declared: pip (`pip install -e .`) writes its own scripts from them into the venv's bin/.
    entry_points={"console_scripts": [f"{name} = {target}" for name, target in EXECUTABLES.items()]},
    cmdclass={"install_scripts": InstallScripts, "develop": Develop},
)
