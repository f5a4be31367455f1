"""launch_testing: `sim.launch.py` with its default arguments — the simulation and robot_state_publisher
fed by the `description` executable through launch's `Command` — checked from outside by a ROS client.

Runs under pytest's launch_testing plugin (`make test`, `colcon test`) and as doc/testing.md says:
`launch_test test/launch/test_launch_sim.py`. It needs launch_testing and launch_ros (a ROS 2 install; CI
installs ../shared/ros-tools); test_launch_checks_without_launch.py runs the same checks everywhere
without launch. Where robot_state_publisher is not installed, a stand-in from stand_ins/ takes its place (it checks
and republishes its `robot_description` as the real one does); where binpick_sim is not installed,
ros_env builds it with colcon first.
"""
import sys
import unittest
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # launch_checks (here), ros_env (test/): also under `launch_test`

import ros_env  # noqa: E402

ros_env.isolate()  # conftest does this under pytest; `launch_test` loads no conftest

launch_testing = pytest.importorskip(  # only this file: without launch_testing its pytest plugin is absent
    "launch_testing", reason="launch_testing is not installed here (it comes with ROS 2; CI installs "
                             "../shared/ros-tools); test_launch_checks_without_launch.py runs the same checks "
                             "without launch")

import launch  # noqa: E402
import launch_testing.actions  # noqa: E402
import launch_testing.asserts  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402

from launch_checks import CHECKS, make_client  # noqa: E402


@pytest.mark.launch_test
def generate_test_description():
    # binpick_sim and robot_state_publisher in the ament index, their site-packages on PYTHONPATH, as in a sourced
    # workspace: the launched processes inherit both (PYTHONPATH is not replaced: on a ROS install it holds rclpy)
    ros_env.prefixes()
    from ament_index_python.packages import get_package_share_directory

    launch_file = Path(get_package_share_directory("binpick_sim")) / "launch" / "sim.launch.py"
    return launch.LaunchDescription([  # no launch arguments: the defaults, as a user starts it
        launch.actions.IncludeLaunchDescription(PythonLaunchDescriptionSource(str(launch_file))),
        launch_testing.actions.ReadyToTest()])


class TheLaunchedSimulation(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import rclpy
        from rclpy.context import Context

        cls.context = Context()
        rclpy.init(context=cls.context)
        cls.client = make_client(cls.context, namespace="")

    @classmethod
    def tearDownClass(cls):
        import rclpy

        cls.client.close()
        rclpy.try_shutdown(context=cls.context)

    def test_checks(self):
        for check in CHECKS:
            with self.subTest(check=check.__name__):
                check(self.client)

    def test_robot_state_publisher_got_the_cells_description(self):
        from rclpy.qos import DurabilityPolicy, QoSProfile
        from std_msgs.msg import String

        from binpick_sim.config import load_config
        from binpick_sim.description import cell_description
        from binpick_sim.paths import default_config

        received = []
        self.client.node.create_subscription(String, "robot_description", lambda m: received.append(m.data),
                                             QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self.client.spin_until(lambda: received, 60, "robot_description from robot_state_publisher")
        self.assertEqual(received[0], cell_description(load_config(default_config())))


@launch_testing.post_shutdown_test()
class AfterShutdown(unittest.TestCase):
    def test_every_process_exits_cleanly(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info)
