"""launch_testing: `sim.launch.py` brought up headless, checked from outside. Needs a ROS 2 install
(launch_testing, launch_ros); test_launch_twin.py runs the same checks everywhere without launch."""
import unittest

import pytest

launch_testing = pytest.importorskip(
    "launch_testing", reason="launch_testing is not installed here (it comes with ROS 2); "
                             "test_launch_twin.py runs the same checks without launch")

import launch  # noqa: E402
import launch_testing.actions  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402

from binpick_sim.paths import share_dir  # noqa: E402

from launch_checks import CHECKS, NAMESPACE, make_client  # noqa: E402


def robot_state_publisher_installed() -> bool:
    from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

    try:
        get_package_share_directory("robot_state_publisher")
        return True
    except PackageNotFoundError:
        return False


@pytest.mark.launch_test
def generate_test_description():
    arguments = {"namespace": NAMESPACE.strip("/"), "realtime_factor": "0.0", "rviz": "false", "gui": "false",
                 "publish_description": str(robot_state_publisher_installed()).lower()}
    included = launch.actions.IncludeLaunchDescription(
        PythonLaunchDescriptionSource(str(share_dir() / "launch" / "sim.launch.py")),
        launch_arguments=arguments.items())
    return launch.LaunchDescription([included, launch_testing.actions.ReadyToTest()])


class TheLaunchedSimulation(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import rclpy
        from rclpy.context import Context

        cls.context = Context()
        rclpy.init(context=cls.context)
        cls.client = make_client(cls.context)

    @classmethod
    def tearDownClass(cls):
        import rclpy

        cls.client.close()
        rclpy.try_shutdown(context=cls.context)

    def test_checks(self):
        for check in CHECKS:
            with self.subTest(check=check.__name__):
                check(self.client)


@launch_testing.post_shutdown_test()
class AfterShutdown(unittest.TestCase):
    def test_the_simulation_exits_cleanly(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info)
