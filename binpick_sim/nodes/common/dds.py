"""The package's Fast DDS profile (config/fastdds.xml), which the `sim` process loads.

Fast DDS drops a fragment of a large message now and then (a 1-3 MB frame does not fit its 512 KB
shared-memory segment while the previous frame is still being read), and a reliable writer resends
it only when its reader answers the writer's next heartbeat: 3 s later by default. A gym env stepping
the sim in lock-step waits for that frame, so an image step took up to 3 s about once in a hundred.
The profile shortens the writers' heartbeat period. It also bounds every reader to 16 samples: a reliable
reader keeps each sample's buffer at the size of the largest message it held, and Fast DDS allowed 5000, so
bursts of 8 MB messages on a command topic grew `sim` by ~130 MB a burst without end (issue 53; a queue
deeper than 16 still gets its depth). Transports, discovery and QoS stay as ROS sets them. A profile of the
user's own (FASTRTPS_DEFAULT_PROFILES_FILE) or another RMW is left alone.

Fast DDS reads the variable when the process's first participant is made: call this before
`rclpy.init`.

The client profile (config/fastdds_client.xml, `client_profile`) is for the other side: a process that
starts `sim`s and waits to discover them (a gym env's ROS backend) announces its participant every 0.5 s.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator, MutableMapping

from ...paths import share_dir

PROFILE_VARIABLE = "FASTRTPS_DEFAULT_PROFILES_FILE"  # Fast DDS 2.x, which Jazzy's rmw_fastrtps uses
FAST_DDS_RMWS = ("rmw_fastrtps_cpp", "rmw_fastrtps_dynamic_cpp")  # the first is ROS 2's default RMW


def profile_path() -> Path:
    return share_dir() / "config" / "fastdds.xml"


def users_choice(environ: MutableMapping[str, str]) -> bool:
    """Whether the user chose Fast DDS's settings (a profile of their own) or another RMW: then none of the
    package's profiles is set."""
    return bool(environ.get(PROFILE_VARIABLE)) or rmw(environ) not in FAST_DDS_RMWS


def use_package_profile(environ: MutableMapping[str, str] = os.environ) -> Path | None:
    """Point Fast DDS at the package's profile, unless the user chose a profile or another RMW;
    returns the profile set, or None."""
    if users_choice(environ):
        return None
    path = profile_path()
    environ[PROFILE_VARIABLE] = str(path)
    return path


def client_profile_path() -> Path:
    return share_dir() / "config" / "fastdds_client.xml"


@contextlib.contextmanager
def client_profile(environ: MutableMapping[str, str] = os.environ) -> Iterator[Path | None]:
    """Around making this process's first participant (rclpy.init and a first node), in a process that
    starts `sim`s and then waits to discover them (a gym env's ROS backend, the tests): the package's client
    profile (config/fastdds_client.xml: the participant announces itself every 0.5 s, not 3 s) in
    FASTRTPS_DEFAULT_PROFILES_FILE. Fast DDS reads that file once per process, at its first participant, and
    keeps it as the process's defaults; the variable is gone again afterwards, so the processes started
    later (the `sim`s, with a profile of their own) do not inherit it.

    Why: in about one start in three a `sim` and a participant made before it did not match until one of
    that participant's periodic announcements (every 3 s by default): 3.6 s after the spawn instead of
    about 1.1 s (measured in doc/how-it-is-built.md, "Discovery at start-up"); settings on the `sim`'s side
    did not end the wait. Nothing is set where the
    user chose a profile or another RMW; where this process made a participant before, Fast DDS has read
    its defaults already and this changes nothing."""
    if users_choice(environ):
        yield None
        return
    path = environ[PROFILE_VARIABLE] = str(client_profile_path())
    try:
        yield Path(path)
    finally:
        environ.pop(PROFILE_VARIABLE, None)


def profile_in_use(environ: MutableMapping[str, str] = os.environ) -> str:
    """What this process's Fast DDS reads its settings from (the camera node reports it on /diagnostics)."""
    if rmw(environ) not in FAST_DDS_RMWS:
        return f"none ({rmw(environ)})"
    return environ.get(PROFILE_VARIABLE) or "none (Fast DDS defaults)"


def rmw(environ: MutableMapping[str, str]) -> str:
    return environ.get("RMW_IMPLEMENTATION") or FAST_DDS_RMWS[0]  # unset or empty: ROS 2's default


SHM_SEGMENT = 512 * 1024  # bytes: Fast DDS 2.x's default shared-memory segment, per participant
FRAMES_IN_SEGMENT = 4  # frames a gym env's sim's segment holds: the one being read, the next, and room
SHM_SHARE = 8  # a segment takes at most this fraction of /dev/shm's free space: 1/8 (see frame_profile)
SHM_FOLDER = "/dev/shm"


def frame_profile(folder: Path, frame_bytes: int, environ: MutableMapping[str, str] = os.environ,
                  shm: str = SHM_FOLDER) -> Path | None:
    """A profile for a gym env's private sim whose camera frames do not fit Fast DDS's default shared-memory
    segment: the package's profile plus the two transports Fast DDS builds in (shared memory, UDPv4), the
    shared memory's segment holding FRAMES_IN_SEGMENT frames. Written to `folder`; returns its path, or None
    where the package's profile serves as it is: frames that fit, a profile or RMW of the user's own, or a
    segment larger than an eighth of /dev/shm's free space. A segment's pages are used as frames pass, and
    a process writing a page that a full /dev/shm cannot give gets SIGBUS: an eighth leaves room for
    several envs starting at once (Docker's default 64 MB keeps 640x480's 9 MiB out; a host's /dev/shm,
    half its memory, does not).

    Why: a 640x480 frame (rgb + depth, 2.2 MB) does not fit 512 KB, and Fast DDS then sends it in fragments
    (doc/how-it-is-built.md, "DDS settings"); an image env step over ROS took 10 ms more than one with
    the frame in one piece. Under ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST rmw_fastrtps adds its own
    shared-memory and UDP transports after these; discovery stays as ROS sets it."""
    if users_choice(environ):
        return None
    if FRAMES_IN_SEGMENT * frame_bytes <= SHM_SEGMENT:
        return None
    mib = 1024 * 1024
    segment = -(-FRAMES_IN_SEGMENT * frame_bytes // mib) * mib  # whole MiB
    try:
        usage = os.statvfs(shm)
    except OSError:
        return None
    if SHM_SHARE * segment > usage.f_bavail * usage.f_frsize:
        return None
    import xml.etree.ElementTree as ElementTree

    namespace = "http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles"
    ElementTree.register_namespace("", namespace)
    tree = ElementTree.parse(profile_path())
    root = tree.getroot()

    def sub(parent, tag: str, text: str | None = None):
        element = ElementTree.SubElement(parent, f"{{{namespace}}}{tag}")
        element.text = text
        return element

    descriptors = ElementTree.Element(f"{{{namespace}}}transport_descriptors")
    root.insert(0, descriptors)
    for name, kind in (("binpick_shm", "SHM"), ("binpick_udp", "UDPv4")):
        descriptor = sub(descriptors, "transport_descriptor")
        sub(descriptor, "transport_id", name)
        sub(descriptor, "type", kind)
        if kind == "SHM":
            sub(descriptor, "segment_size", str(segment))
    participant = sub(root, "participant")
    participant.set("profile_name", "binpick_sim_participant")
    participant.set("is_default_profile", "true")
    rtps = sub(participant, "rtps")
    sub(rtps, "useBuiltinTransports", "false")
    transports = sub(rtps, "userTransports")
    for name in ("binpick_shm", "binpick_udp"):
        sub(transports, "transport_id", name)
    path = Path(folder) / "fastdds.xml"
    tree.write(path, encoding="UTF-8", xml_declaration=True)
    return path
