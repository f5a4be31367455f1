"""The Fast DDS profile the sim process loads (nodes/common/dds.py, config/fastdds.xml): what it sets,
and that a user's own profile or another RMW is left alone. That a started `sim` really runs with it
is checked through its /diagnostics (vision/test_renderers.py); that Fast DDS's own parser takes both
profiles, here. The client profile (config/fastdds_client.xml) is the one a gym env's ROS backend and
the tests make their first participant with."""
import xml.etree.ElementTree as ET

from binpick_sim.nodes.common.dds import (PROFILE_VARIABLE, client_profile, client_profile_path, profile_in_use,
                                          profile_path, use_package_profile)

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


def test_the_client_profile_is_set_only_while_the_first_participant_is_made_and_only_where_nothing_was_chosen():
    environ = {}
    with client_profile(environ) as path:
        assert path == client_profile_path() and environ == {PROFILE_VARIABLE: str(path)}
    assert environ == {}  # the `sim`s started afterwards do not inherit it
    for chosen in ({PROFILE_VARIABLE: "/home/me/mine.xml"}, {"RMW_IMPLEMENTATION": "rmw_cyclonedds_cpp"}):
        before = dict(chosen)
        with client_profile(chosen) as path:
            assert path is None and chosen == before
        assert chosen == before


def test_the_client_profile_shortens_the_participants_announcements_and_nothing_else():
    root = ET.parse(client_profile_path()).getroot()
    assert [child.tag.split("}")[1] for child in root] == ["participant"]
    participant = root.find("p:participant", NS)
    assert participant.get("is_default_profile") == "true"
    discovery = participant.find("p:rtps/p:builtin/p:discovery_config", NS)
    assert [child.tag.split("}")[1] for child in discovery] == ["leaseAnnouncement"]
    period = discovery.find("p:leaseAnnouncement", NS)
    assert int(period.find("p:sec", NS).text) + int(period.find("p:nanosec", NS).text) / 1e9 == 0.5


PARTICIPANT = ("import rclpy; from rclpy.context import Context; c = Context(); rclpy.init(context=c); "
               "rclpy.create_node('profile_check', context=c).destroy_node(); rclpy.try_shutdown(context=c)")


def fast_dds_parse_errors(profile, tmp_path) -> list[str]:
    """What Fast DDS's own XML parser says of `profile`, read as a process's default profile when its first
    participant is made (it logs an XMLPARSER error for anything it cannot take, and goes on without it)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, PROFILE_VARIABLE: str(profile)}  # (this test process's own domain)
    done = subprocess.run([sys.executable, "-c", PARTICIPANT], capture_output=True, text=True, timeout=60, env=env,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    return [line for line in (done.stdout + done.stderr).splitlines() if "XMLPARSER" in line]


def test_fast_dds_takes_both_profiles_without_a_parse_error(tmp_path):
    assert fast_dds_parse_errors(profile_path(), tmp_path) == []
    assert fast_dds_parse_errors(client_profile_path(), tmp_path) == []
    broken = tmp_path / "misspelt.xml"  # the check can fail: one misspelt tag is reported
    broken.write_text(client_profile_path().read_text().replace("leaseAnnouncement>", "leaseAnouncement>"))
    assert fast_dds_parse_errors(broken, tmp_path)


def test_the_profile_sets_the_writers_heartbeat_and_the_readers_samples_and_nothing_else():
    """A default data-writer profile with a 0.1 s heartbeat and a default data-reader profile of at most 16
    samples (issue 53: memory under bursts of huge messages); no participant or transport settings, so
    discovery (ROS_AUTOMATIC_DISCOVERY_RANGE) and transports stay as ROS sets them."""
    root = ET.parse(profile_path()).getroot()
    assert [child.tag.split("}")[1] for child in root] == ["data_writer", "data_reader"]
    reader = root.find("p:data_reader", NS)
    assert reader.get("is_default_profile") == "true"
    limits = reader.find("p:topic/p:resourceLimitsQos", NS)
    assert [(e.tag.split("}")[1], e.text) for e in limits] == [("max_samples", "16"), ("allocated_samples", "16")]
    writer = root.find("p:data_writer", NS)
    assert writer.get("is_default_profile") == "true"
    period = writer.find("p:times/p:heartbeatPeriod", NS)
    seconds = int(period.find("p:sec", NS).text) + int(period.find("p:nanosec", NS).text) / 1e9
    assert seconds == 0.1


# --- a gym env's private sim, with frames larger than Fast DDS's shared-memory segment ------------------------

def test_a_frame_profile_is_written_only_for_frames_that_do_not_fit_the_default_segment(tmp_path, monkeypatch):
    import os

    from binpick_sim.nodes.common import dds

    small, large = 64 * 64 * 7, 640 * 480 * 7  # rgb + depth bytes
    assert dds.frame_profile(tmp_path, small, {}) is None  # 4 frames fit 512 KB
    assert dds.frame_profile(tmp_path, large, {PROFILE_VARIABLE: "/home/me/mine.xml"}) is None
    assert dds.frame_profile(tmp_path, large, {"RMW_IMPLEMENTATION": "rmw_cyclonedds_cpp"}) is None
    assert dds.frame_profile(tmp_path, large, {}, shm=str(tmp_path / "absent")) is None
    def free(megabytes: int):  # a /dev/shm with that much free, in 4 KiB blocks
        blocks = megabytes * 256
        return os.statvfs_result((4096, 4096, blocks, blocks, blocks, 1000, 1000, 1000, 0, 255))

    monkeypatch.setattr(os, "statvfs", lambda path: free(64))  # Docker's default: 9 MiB is more than an eighth
    assert dds.frame_profile(tmp_path, large, {}) is None
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(os, "statvfs", lambda path: free(72))  # 9 MiB is an eighth of 72
    assert dds.frame_profile(tmp_path, large, {}) == tmp_path / "fastdds.xml"


def test_the_frame_profile_keeps_the_package_profile_and_sizes_the_shared_memory_segment(tmp_path):
    """The package's writer settings, and the transports Fast DDS builds in (shared memory, UDPv4) as user
    transports, the segment holding four 640x480 frames (2.15 MB each) in whole MiB."""
    from binpick_sim.nodes.common import dds

    path = dds.frame_profile(tmp_path, 640 * 480 * 7, {})
    root = ET.parse(path).getroot()
    package = ET.parse(profile_path()).getroot()
    assert ET.tostring(root.find("p:data_writer", NS)) == ET.tostring(package.find("p:data_writer", NS))
    shm, udp = root.findall("p:transport_descriptors/p:transport_descriptor", NS)
    assert (shm.find("p:type", NS).text, udp.find("p:type", NS).text) == ("SHM", "UDPv4")
    assert int(shm.find("p:segment_size", NS).text) == 9 * 1024 * 1024
    rtps = root.find("p:participant/p:rtps", NS)
    assert rtps.find("p:useBuiltinTransports", NS).text == "false"
    assert [t.text for t in rtps.findall("p:userTransports/p:transport_id", NS)] == \
        [shm.find("p:transport_id", NS).text, udp.find("p:transport_id", NS).text]


def test_a_640x480_image_env_over_ros_runs_its_sim_with_the_large_segment():
    """Fast DDS really maps the larger segment in the env's sim (its /proc maps), and frames arrive whole.
    Where /dev/shm is small (a Docker container's 64 MB), or this run has a profile or RMW of its own, the
    sim keeps that instead."""
    import os
    import re

    import gymnasium as gym
    import numpy as np

    import binpick_sim.envs  # noqa: F401
    from binpick_sim.nodes.common import dds

    env = gym.make("binpick_sim/FrankaPosition-v0", backend="ros", observation="image", camera_size=(640, 480),
                   renderer="tiny")
    try:
        observation, _ = env.reset(seed=0)
        observation, *_ = env.step(env.action_space.sample())
        assert observation["rgb"].shape == (480, 640, 3) and np.isfinite(observation["depth"]).all()
        pid = env.unwrapped.backend.process.process.pid
        environ = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
        profile = f"{PROFILE_VARIABLE}={env.unwrapped.backend.folder.name}/fastdds.xml".encode()
        assert not [e for e in environ if b"fastdds_client.xml" in e]  # the env's own profile stayed with it
        usage = os.statvfs(dds.SHM_FOLDER)
        if dds.SHM_SHARE * 9 * 1024 * 1024 > usage.f_bavail * usage.f_frsize or os.environ.get(PROFILE_VARIABLE) \
                or dds.rmw(os.environ) not in dds.FAST_DDS_RMWS:
            assert profile not in environ  # no room, or the user's choice: kept, as in every sim
            return
        assert profile in environ
        segments = [int(end, 16) - int(start, 16) for start, end in
                    re.findall(r"^([0-9a-f]+)-([0-9a-f]+) .*/dev/shm/fastrtps_[0-9a-f]+$",
                               open(f"/proc/{pid}/maps").read(), re.M)]
        assert max(segments) >= 9 * 1024 * 1024, segments  # the default's are 512 KB and a little
    finally:
        env.close()
