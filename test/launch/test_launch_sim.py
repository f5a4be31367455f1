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

    def test_one_publisher_per_description_and_transform(self):
        """robot_state_publisher publishes robot_description and the URDF's fixed frames; the simulation neither
        (it would have doubled both), only the objects on /tf. Read with tf2_ros's own Buffer and
        TransformListener, as a user's node reads them. (The stand-in robot_state_publisher sends the fixed
        frames as the real one does.)"""
        missing = ros_env.missing("tf2_ros", "tf2_msgs")
        if missing:
            self.skipTest(missing)
        import rclpy.time
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from tf2_msgs.msg import TFMessage
        from tf2_ros import Buffer, TransformListener

        node = self.client.node
        buffer = Buffer()
        TransformListener(buffer, node, spin_thread=False)
        static, moving = [], []
        node.create_subscription(TFMessage, "/tf_static", static.append, QoSProfile(
            depth=100, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        node.create_subscription(TFMessage, "/tf", moving.append, 10)
        self.client.spin_until(lambda: static and moving, 60, "/tf_static and /tf")
        obj = moving[-1].transforms[0].child_frame_id
        latest = rclpy.time.Time()
        frames = ["scene", "panda_link0", "camera_link", "camera_optical_frame", obj]
        self.client.spin_until(lambda: all(buffer.can_transform("world", f, latest) for f in frames), 60,
                               "the cell's frames through tf2_ros")
        self.client.spin_for(1.0)  # (a second publisher's latched /tf_static would be in by now)
        children = [t.child_frame_id for message in static for t in message.transforms]
        self.assertEqual(len(children), len(set(children)), children)
        self.assertFalse(set(children) & {t.child_frame_id for m in moving for t in m.transforms})
        self.assertEqual(node.count_publishers("/robot_description"), 1)
        self.assertEqual(node.count_publishers("/tf_static"), 1)

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
