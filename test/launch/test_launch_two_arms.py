"""launch_testing: `sim.launch.py config:=<share>/config/scene_two_arms.yaml` — each arm's node under its own
namespace with its own joint_states, and one robot_state_publisher for the cell with the whole cell's
description (both arms' links prefixed), fed by the cell's joint_states where both arms send theirs,
checked from outside by a ROS client.

Runs under pytest's launch_testing plugin (`make test`, `colcon test`) and as `launch_test
test/launch/test_launch_two_arms.py`. Needs launch_testing and launch_ros (a ROS 2 install; CI installs
../shared/ros-tools); where robot_state_publisher is not installed a stand-in takes its place (see
test_launch_sim.py).
"""
import sys
import unittest
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # ros_env (in test/): also under `launch_test`

import ros_env  # noqa: E402

ros_env.isolate()  # conftest does this under pytest; `launch_test` loads no conftest

launch_testing = pytest.importorskip(  # only this file: without launch_testing its pytest plugin is absent
    "launch_testing", reason="launch_testing is not installed here (it comes with ROS 2; CI installs "
                             "../shared/ros-tools); nodes/test_two_arms.py drives the two-arm stack without launch")

import launch  # noqa: E402
import launch_testing.actions  # noqa: E402
import launch_testing.asserts  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402

ARMS = ("left", "right")


@pytest.mark.launch_test
def generate_test_description():
    # binpick_sim and robot_state_publisher in the ament index, their site-packages on PYTHONPATH, as in a sourced
    # workspace: the launched processes inherit both (PYTHONPATH is not replaced: on a ROS install it holds rclpy)
    ros_env.prefixes()
    from ament_index_python.packages import get_package_share_directory

    share = Path(get_package_share_directory("binpick_sim"))
    arguments = {"config": str(share / "config" / "scene_two_arms.yaml"), "camera": "false",
                 "realtime_factor": "0.0"}
    return launch.LaunchDescription([
        launch.actions.IncludeLaunchDescription(PythonLaunchDescriptionSource(str(share / "launch" / "sim.launch.py")),
                                                launch_arguments=arguments.items()),
        launch_testing.actions.ReadyToTest()])


class TheLaunchedTwoArmCell(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import rclpy
        from rclpy.context import Context
        from sensor_msgs.msg import JointState

        from binpick_sim.nodes.clients.client import SimClient

        cls.context = Context()
        rclpy.init(context=cls.context)
        cls.clients = {name: SimClient(f"launch_check_{name}", namespace=f"/{name}", context=cls.context,
                                       topics={"joint_states": JointState}) for name in ARMS}
        cls.cell = SimClient("launch_check_cell", context=cls.context, topics={})

    @classmethod
    def tearDownClass(cls):
        import rclpy

        for client in [*cls.clients.values(), cls.cell]:
            client.close()
        rclpy.try_shutdown(context=cls.context)

    def test_each_arm_publishes_its_own_joint_states(self):
        for name, client in self.clients.items():
            client.wait_for_topics(["joint_states"], timeout=120)
            names = list(client.latest["joint_states"].name)
            self.assertEqual(len(names), 9)
            self.assertTrue(all(n.startswith(f"{name}_panda_") for n in names), names)

    def test_one_robot_state_publisher_for_the_cell_fed_by_both_arms(self):
        from rclpy.qos import DurabilityPolicy, QoSProfile
        from sensor_msgs.msg import JointState
        from std_msgs.msg import String

        from binpick_sim.config import load_config
        from binpick_sim.description import cell_description
        from binpick_sim.paths import default_config

        cell = self.cell
        expected = cell_description(load_config(default_config().parent / "scene_two_arms.yaml"))
        received, joints = [], set()
        cell.node.create_subscription(String, "/robot_description", lambda m: received.append(m.data),
                                      QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        cell.node.create_subscription(JointState, "/joint_states", lambda m: joints.update(m.name), 10)
        cell.spin_until(lambda: received, 60, "/robot_description from robot_state_publisher")
        self.assertEqual(received[0], expected)
        self.assertIn('name="right_panda_joint1"', received[0])
        cell.spin_until(lambda: {"left_panda_joint1", "right_panda_joint1"} <= joints, 60,
                        "both arms' joints on the cell's /joint_states")
        # one publisher per description and per fixed frame: none left in the arms' namespaces
        self.assertEqual(cell.node.count_publishers("/robot_description"), 1)
        for name in ARMS:
            self.assertEqual(cell.node.count_publishers(f"/{name}/robot_description"), 0)
        try:
            import tf2_msgs  # noqa: F401  (robot_state_publisher sends /tf_static only with it)
        except ImportError:
            return
        self.assertEqual(cell.node.count_publishers("/tf_static"), 1)


@launch_testing.post_shutdown_test()
class AfterShutdown(unittest.TestCase):
    def test_every_process_exits_cleanly(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info)
