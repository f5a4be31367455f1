"""The launch_testing checks without launch: the same `sim` executable with the parameters
sim.launch.py gives it, in the same namespace, and the description executable robot_state_publisher
would be fed from."""
import subprocess
import sys

import pytest
from urdf_parser_py.urdf import URDF

from binpick_sim.nodes.spawn import SimProcess

from launch_checks import CHECKS, LAUNCH_PARAMETERS, NAMESPACE, make_client


@pytest.fixture(scope="module")
def launched(tmp_path_factory):
    import rclpy
    from rclpy.context import Context

    context = Context()
    rclpy.init(context=context)
    sim = SimProcess(LAUNCH_PARAMETERS, log=tmp_path_factory.mktemp("twin") / "sim.log", namespace=NAMESPACE)
    client = make_client(context)
    yield client
    client.close()
    sim.stop()
    rclpy.try_shutdown(context=context)


@pytest.mark.parametrize("check", CHECKS, ids=[c.__name__ for c in CHECKS])
def test_launched_simulation(launched, check):
    check(launched)


def test_the_description_robot_state_publisher_gets():
    urdf = subprocess.run([sys.executable, "-m", "binpick_sim.description"], capture_output=True, text=True,
                          check=True, timeout=60).stdout
    robot = URDF.from_xml_string(urdf.encode())
    assert {"world", "panda_link0", "scene", "camera_optical_frame"} <= set(robot.link_map)
