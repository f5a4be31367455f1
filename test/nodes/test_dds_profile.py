"""The Fast DDS profile the sim process loads (nodes/common/dds.py, config/fastdds.xml): what it sets,
and that a user's own profile or another RMW is left alone. That a started `sim` really runs with it
is checked through its /diagnostics (vision/test_renderers.py)."""
import xml.etree.ElementTree as ET

from binpick_sim.nodes.common.dds import PROFILE_VARIABLE, profile_in_use, profile_path, use_package_profile

NS = {"p": "http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles"}


def test_the_package_profile_is_used_where_nothing_else_was_chosen():
    environ = {}
    assert use_package_profile(environ) == profile_path()
    assert environ == {PROFILE_VARIABLE: str(profile_path())}
    assert profile_in_use(environ) == str(profile_path())
    fast_dds = {"RMW_IMPLEMENTATION": "rmw_fastrtps_cpp"}
    assert use_package_profile(fast_dds) == profile_path() and fast_dds[PROFILE_VARIABLE] == str(profile_path())


def test_a_profile_of_the_users_own_or_another_rmw_is_left_alone():
    own = {PROFILE_VARIABLE: "/home/me/whitelist.xml"}
    assert use_package_profile(own) is None and own == {PROFILE_VARIABLE: "/home/me/whitelist.xml"}
    assert profile_in_use(own) == "/home/me/whitelist.xml"
    cyclone = {"RMW_IMPLEMENTATION": "rmw_cyclonedds_cpp"}
    assert use_package_profile(cyclone) is None and cyclone == {"RMW_IMPLEMENTATION": "rmw_cyclonedds_cpp"}
    assert profile_in_use(cyclone) == "none (rmw_cyclonedds_cpp)"
    assert profile_in_use({}) == "none (Fast DDS defaults)"


def test_the_profile_shortens_the_writers_heartbeat_and_nothing_else():
    """A default data-writer profile with a 0.1 s heartbeat; no participant or transport settings, so
    discovery (ROS_AUTOMATIC_DISCOVERY_RANGE) and transports stay as ROS sets them."""
    root = ET.parse(profile_path()).getroot()
    assert [child.tag.split("}")[1] for child in root] == ["data_writer"]
    writer = root.find("p:data_writer", NS)
    assert writer.get("is_default_profile") == "true"
    period = writer.find("p:times/p:heartbeatPeriod", NS)
    seconds = int(period.find("p:sec", NS).text) + int(period.find("p:nanosec", NS).text) / 1e9
    assert seconds == 0.1
