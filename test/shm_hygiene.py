"""Fast DDS's shared memory that the run's SIGKILLed participants left, deleted when the run ends.

Several tests kill processes on purpose (SIGKILL mid-episode, a crashed `sim`); Fast DDS cannot clean up
after those, and nobody reuses a dead participant's segment (each is named at random). One `make test`
left about six of them, ~0.5 MB each, for good: a container with Docker's 64 MB /dev/shm filled up in
about twenty runs. So the controller (or a run without workers), at the end, deletes what
`fastdds shm clean` would (binpick_sim.nodes.common.shm.dead_participant_segments) among the segments
that appeared during the run: never one that was there before it, nor one a live process holds.
"""
from __future__ import annotations

import os

from hang_watchdog import worker

from binpick_sim.nodes.common import shm


def _listing() -> set[str]:
    try:
        return set(os.listdir(shm.SHM))
    except OSError:
        return set()


_BEFORE = _listing()  # conftest.py imports this module as the run starts, before any test


def pytest_sessionfinish(session) -> None:
    if worker(session.config):
        return  # the workers' participants are gone only when the controller ends
    for path in shm.dead_participant_segments():
        if path.name not in _BEFORE:
            try:
                path.unlink()
            except OSError:
                pass  # another run's clean-up got there first
