"""What a launched simulation must do, checked from outside by a ROS client: shared by the
launch_testing suite (test_launch_sim.py, on a ROS 2 install) and its twin without launch
(test_launch_checks_without_launch.py, run everywhere)."""
import numpy as np
from builtin_interfaces.msg import Duration
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from binpick_sim.cell.arm.panda import JOINT_NAMES
from binpick_sim.nodes.clients.client import TOPICS, SimClient

NAMESPACE = "/launched"
# the parameters sim.launch.py hands the `sim` executable, for the twin to use the same
LAUNCH_PARAMETERS = {"gui": False, "camera": True, "reasoning": False, "realtime_factor": 0.0}


def make_client(context, namespace: str = NAMESPACE) -> SimClient:
    topics = {t: TOPICS[t] for t in ("joint_states", "camera/image_raw", "camera/depth/image_raw",
                                     "camera/camera_info")}
    topics["camera/depth/camera_info"] = CameraInfo
    client = SimClient("launch_check", namespace=namespace, context=context, topics=topics)
    client.wait_for_topics(["joint_states"], timeout=120)
    return client


def check_clock_advances(client: SimClient) -> None:
    ticks = []
    client.node.create_subscription(Clock, "/clock", lambda m: ticks.append(m.clock.sec + m.clock.nanosec * 1e-9), 10)
    client.spin_until(lambda: len(ticks) >= 2 and ticks[-1] > ticks[0], 30, "/clock advancing")


def check_joint_states_name_nine_joints(client: SimClient) -> None:
    msg = client.latest["joint_states"]
    assert list(msg.name) == list(JOINT_NAMES), msg.name
    assert len(msg.position) == len(msg.velocity) == len(msg.effort) == 9


def check_camera_images_match_their_info(client: SimClient) -> None:
    topics = ["camera/image_raw", "camera/depth/image_raw", "camera/camera_info", "camera/depth/camera_info"]
    client.wait_for_topics(topics, timeout=120)
    client.spin_until(lambda: len({client.stamp(t) for t in topics}) == 1, 60, "one frame on all four topics")
    rgb, depth = client.latest["camera/image_raw"], client.latest["camera/depth/image_raw"]
    info, depth_info = client.latest["camera/camera_info"], client.latest["camera/depth/camera_info"]
    assert (rgb.encoding, depth.encoding) == ("rgb8", "32FC1")
    assert (rgb.width, rgb.height) == (depth.width, depth.height) == (info.width, info.height)
    assert list(info.k) == list(depth_info.k) and info.k[0] > 0
    assert rgb.header.frame_id == info.header.frame_id == "camera_optical_frame"


def check_trajectory_is_followed(client: SimClient) -> None:
    publisher = client.node.create_publisher(JointTrajectory, "arm/joint_trajectory", 10)
    client.spin_until(lambda: publisher.get_subscription_count() > 0, 30, "arm/joint_trajectory subscriber")
    goal = client.joint_positions()[:7] + [0.2, -0.1, 0.1, 0.1, 0.0, 0.1, 0.0]
    publisher.publish(JointTrajectory(joint_names=list(JOINT_NAMES[:7]), points=[
        JointTrajectoryPoint(positions=goal.tolist(), time_from_start=Duration(sec=1))]))
    client.spin_until(lambda: np.abs(client.joint_positions()[:7] - goal).max() < 0.01, 60, "the trajectory's end")


def check_reset_works(client: SimClient) -> None:
    answer = client.call("world/reset", timeout=60)
    assert answer.success and answer.message.startswith("episode"), answer.message


CHECKS = [check_clock_advances, check_joint_states_name_nine_joints, check_camera_images_match_their_info,
          check_trajectory_is_followed, check_reset_works]
