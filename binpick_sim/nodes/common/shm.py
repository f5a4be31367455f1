"""Fast DDS's shared-memory files that would stop `sim` at start, found before its participant is made.

Under ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST (how this package runs DDS) rmw_fastrtps always adds
Fast DDS's shared-memory (SHM) transport itself, whatever the XML profile says, so the profile cannot
turn SHM off. Fast DDS opens `/dev/shm/fastrtps_port<N>` (a segment), `fastrtps_port<N>_el` (a file a
live owner holds an exclusive flock on) and `sem.fastrtps_port<N>_mutex` (a POSIX named semaphore) for
port 7000 (every LOCALHOST participant listens there, whatever its domain) and for its domain's ports
(7400 + 250 * domain ...). A stale segment that still has its `_el` file it recognises as left by a dead
process and makes again; but, measured with Fast DDS 2.14 (Jazzy):

- a semaphore file of fewer than 32 bytes: SIGBUS; one of random bytes: SIGABRT ("The futex facility
  returned an unexpected error code");
- a segment without its `_el` file (which a live port also lacks for moments, while processes come and
  go): a hang for good when it is empty or its header says "not yet initialised", SIGSEGV when the
  header says "initialised" over zeros. Random bytes there Fast DDS takes as corrupt and makes anew.

None of these can be caught once inside Fast DDS, so `sim` looks first and stops with one line naming
the files to delete. Only files no live process holds are judged (a held `_el` lock means a running
participant owns the port), and only what is still wrong a moment later (RECHECK), so a running ROS
graph whose processes come and go is never reported; the files are only read.
"""
from __future__ import annotations

import errno
import fcntl
import os
import re
import struct
import time
from pathlib import Path

SHM = Path("/dev/shm")
SHARED_PORT = 7000  # Fast DDS 2.14's SHM port of every participant in ROS's LOCALHOST set-up
PORT_BASE, DOMAIN_GAIN = 7400, 250  # the RTPS port formula: a domain's ports start at 7400 + 250 * domain
_NAME = re.compile(r"^(?:sem\.)?fastrtps_port(\d+)(?:_el|_mutex)?$")
SEMAPHORE_SIZE = 32  # glibc's sem_t on 64-bit Linux
HEADER = 128  # bytes of a segment's header looked at: boost.interprocess's state word, then its manager
INITIALISED = 2  # the state word of a segment made in full (0: not yet, 1: being made)
RECHECK = 0.5  # s: suspects are looked at again after this, and only those still wrong are reported
_PRIVATE_FLAGS = (0, 128)  # the semaphore's futex flag: shared, or FUTEX_PRIVATE_FLAG


def domain_ports(domain: int) -> range:
    return range(PORT_BASE + DOMAIN_GAIN * domain, PORT_BASE + DOMAIN_GAIN * (domain + 1))


def bad_files(domain: int, directory: Path = SHM) -> list[Path]:
    """The Fast DDS files in `directory` a participant of `domain` would open that no live process holds
    and that Fast DDS would abort, crash or hang on (module docstring); [] if there are none."""
    try:
        names = os.listdir(directory)
    except OSError:  # no /dev/shm: Fast DDS runs without SHM, nothing to judge
        return []
    wanted = {SHARED_PORT, *domain_ports(domain)}
    ports = sorted({int(m.group(1)) for m in map(_NAME.match, names) if m and int(m.group(1)) in wanted})
    bad: list[Path] = []
    for port in ports:
        segment = directory / f"fastrtps_port{port}"
        lock = directory / f"fastrtps_port{port}_el"
        semaphore = directory / f"sem.fastrtps_port{port}_mutex"
        if _held(lock):
            continue  # a running participant's port
        broken = (segment.exists() and not lock.exists() and not _segment_ok(segment)) or \
            (semaphore.exists() and not _semaphore_ok(semaphore))
        if broken:
            bad.extend(p for p in (segment, lock, semaphore) if p.exists())
    return bad


def _segment_ok(path: Path) -> bool:
    """A segment Fast DDS will not hang or crash on when it has no `_el` file (module docstring)."""
    head = _head(path, HEADER)
    if head is None:
        return True  # not ours to judge
    if len(head) < HEADER:
        return False
    state = struct.unpack_from("<I", head)[0]
    if state in (0, 1):
        return False
    return state != INITIALISED or any(head[8:])


def _head(path: Path, size: int) -> bytes | None:
    """The file's first `size` bytes (fewer if it is shorter), or None where it cannot be read."""
    try:
        with open(path, "rb") as f:
            return f.read(size)
    except OSError:
        return None


def report(files: list[Path]) -> str:
    """One line: what is wrong and the command that fixes it."""
    return (f"Fast DDS would abort on shared-memory files that no running process holds ({len(files)} in "
            f"{files[0].parent}, not in Fast DDS's format); delete them and start again: rm -f "
            + " ".join(str(f) for f in files))


def _held(lock: Path) -> bool:
    """Whether a live process holds the `_el` file's lock (Fast DDS's sign that the port is in use). A file
    this user may not open is taken as held: it is not ours to judge."""
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        return exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN)
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


_PARTICIPANT = re.compile(r"^fastrtps_[0-9a-f]{16}$")  # a participant's own segment (ports are fastrtps_port<N>)


def dead_participant_segments(directory: Path = SHM, settled: float = 2.0) -> list[Path]:
    """The segments of Fast DDS participants that died without cleaning up (SIGKILL), each with its `_el`
    file: what `fastdds shm clean` removes. Fast DDS never reuses them (a participant's segment is named
    at random), so each dead one keeps its ~0.5 MB of /dev/shm until someone deletes it. A segment counts
    only when its `_el` file exists, no live process holds its lock and it is older than `settled`
    seconds (a participant being made right now has not taken the lock yet)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    dead: list[Path] = []
    for name in filter(_PARTICIPANT.match, names):
        lock = directory / f"{name}_el"
        try:
            age = time.time() - lock.stat().st_mtime
        except OSError:
            continue  # no lock file: not judged
        if age >= settled and not _held(lock):
            dead += [directory / name, lock]
    return dead


def participant_segments(pid: int | str = "self", directory: Path = SHM) -> list[Path]:
    """The segments and `_el` files of the participants of process `pid` (this one by default): the `_el`
    files it holds open. A process that leaves with os._exit (`sim` interrupted while starting) deletes its
    own first: Fast DDS's own clean-up never runs then, and each would stay in /dev/shm for good (~0.5 MB)."""
    found: list[Path] = []
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return found
    for fd in fds:
        try:
            target = Path(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            continue
        if target.parent == directory and target.name.endswith("_el") and _PARTICIPANT.match(target.name[:-3]):
            found += [target.with_name(target.name[:-3]), target]
    return found


def _semaphore_ok(path: Path) -> bool:
    """A named semaphore as glibc lays it out: a 64-bit word (value, waiters), then the futex flag. Fast DDS
    uses it as a mutex, so its value is 0 or 1."""
    head = _head(path, SEMAPHORE_SIZE)
    if head is None:
        return True  # not ours to judge
    if len(head) < SEMAPHORE_SIZE:
        return False
    value, _waiters, private = struct.unpack_from("<IIi", head)
    return value <= 1 and private in _PRIVATE_FLAGS


def problem(environ=os.environ, directory: Path = SHM) -> str | None:
    """The line `sim` stops with when its Fast DDS participant would not survive the files in
    `directory`, or None (also for another RMW, whose files these are not)."""
    from .dds import FAST_DDS_RMWS, rmw

    if rmw(environ) not in FAST_DDS_RMWS:
        return None
    try:
        domain = int(environ.get("ROS_DOMAIN_ID") or 0)
    except ValueError:
        return None  # rclpy says what is wrong with it
    files = bad_files(domain, directory)
    if files:  # a port being made or given up right now can look wrong for a moment: look again
        time.sleep(RECHECK)
        files = [f for f in bad_files(domain, directory) if f in files]
    return report(files) if files else None
