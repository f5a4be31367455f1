"""The package's Fast DDS profile (config/fastdds.xml), which the `sim` process loads.

Fast DDS drops a fragment of a large message now and then (a 1-3 MB frame does not fit its 512 KB
shared-memory segment while the previous frame is still being read), and a reliable writer resends
it only when its reader answers the writer's next heartbeat: 3 s later by default. A gym env stepping
the sim in lock-step waits for that frame, so an image step took up to 3 s about once in a hundred.
The profile shortens the writers' heartbeat period; transports, discovery and QoS stay as ROS sets
them. A profile of the user's own (FASTRTPS_DEFAULT_PROFILES_FILE) or another RMW is left alone.

Fast DDS reads the variable when the process's first participant is made: call this before
`rclpy.init`.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import MutableMapping

from ...paths import share_dir

PROFILE_VARIABLE = "FASTRTPS_DEFAULT_PROFILES_FILE"  # Fast DDS 2.x, which Jazzy's rmw_fastrtps uses
FAST_DDS_RMWS = ("rmw_fastrtps_cpp", "rmw_fastrtps_dynamic_cpp")  # the first is ROS 2's default RMW


def profile_path() -> Path:
    return share_dir() / "config" / "fastdds.xml"


def use_package_profile(environ: MutableMapping[str, str] = os.environ) -> Path | None:
    """Point Fast DDS at the package's profile, unless the user chose a profile or another RMW;
    returns the profile set, or None."""
    if environ.get(PROFILE_VARIABLE) or rmw(environ) not in FAST_DDS_RMWS:
        return None
    path = profile_path()
    environ[PROFILE_VARIABLE] = str(path)
    return path


def profile_in_use(environ: MutableMapping[str, str] = os.environ) -> str:
    """What this process's Fast DDS reads its settings from (the camera node reports it on /diagnostics)."""
    if rmw(environ) not in FAST_DDS_RMWS:
        return f"none ({rmw(environ)})"
    return environ.get(PROFILE_VARIABLE) or "none (Fast DDS defaults)"


def rmw(environ: MutableMapping[str, str]) -> str:
    return environ.get("RMW_IMPLEMENTATION") or FAST_DDS_RMWS[0]  # unset or empty: ROS 2's default
