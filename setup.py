from glob import glob
from pathlib import Path

from setuptools import find_packages, setup

PACKAGE = "binpick_sim"

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*"]),
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*")),
        (f"share/{PACKAGE}/config", [f for f in glob("config/*") if Path(f).is_file()]),
        (f"share/{PACKAGE}/config/moveit", glob("config/moveit/*")),
        (f"share/{PACKAGE}/urdf", glob("urdf/*")),
    ],
    install_requires=["setuptools"],
    extras_require={"test": ["pytest"]},  # colcon test runs pytest only where pytest is a test dependency
    zip_safe=True,
    maintainer="binpick_sim developers",
    maintainer_email="binpick-sim@example.com",
    description="PyBullet bin-picking cell served as ROS 2 nodes, with Gymnasium envs.",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "sim = binpick_sim.nodes.process.entry:main",
            "demo = binpick_sim.demo:main",
            "description = binpick_sim.description:main",
            "rollouts = binpick_sim.rollouts:main",
        ],
    },
)
