"""The temporary folder that holds spawned URDFs as they were loaded, and the clean-up of stale ones.

Each `Entities` keeps its URDFs in `<tmp>/binpick_spawned_<random>/` and removes the folder when it
closes. A process killed with SIGKILL cannot remove it, so each folder carries a lock file that its
owner holds (an `flock`, which the kernel releases however the process ends) and every new folder
first removes the stale ones of this user: a folder whose lock can be taken has no owner any more.
Folders without a lock file (older versions, or one whose owner is creating it) are left alone. A lock
works across PID namespaces sharing /tmp, where a process id could not be trusted.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import weakref
from pathlib import Path

PREFIX = "binpick_spawned_"
LOCK = ".owner.lock"


def remove_stale(parent: str | Path | None = None) -> list[Path]:
    """Remove this user's spawn folders in `parent` (the temp folder) whose owner is gone; returns them."""
    parent = Path(parent or tempfile.gettempdir())
    removed = []
    try:
        candidates = [p for p in parent.iterdir() if p.name.startswith(PREFIX)]
    except OSError:
        return removed
    for folder in candidates:
        try:
            if folder.is_symlink() or not folder.is_dir() or folder.stat().st_uid != os.getuid():
                continue
            fd = os.open(folder / LOCK, os.O_RDWR | os.O_NOFOLLOW)
        except OSError:  # no lock file: not ours to judge
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # its owner holds it: alive
            os.close(fd)
            continue
        try:
            shutil.rmtree(folder, ignore_errors=True)  # under the lock: a starting owner waits for it
            removed.append(folder)
        finally:
            os.close(fd)
    return removed


class SpawnFolder:
    """A fresh folder, locked for this process's lifetime; stale folders of dead owners removed first."""

    def __init__(self, parent: str | Path | None = None):
        remove_stale(parent)
        while True:
            path = Path(tempfile.mkdtemp(prefix=PREFIX, dir=parent))
            self._fd = os.open(path / LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            fcntl.flock(self._fd, fcntl.LOCK_EX)  # blocks while another process's clean-up holds it
            if path.is_dir():
                break
            os.close(self._fd)  # removed by a clean-up that took the lock first: take another name
        self.path = path
        # removed at close, or when garbage-collected or at exit like a TemporaryDirectory
        self._finalizer = weakref.finalize(self, _remove, path, self._fd)

    def close(self) -> None:
        self._finalizer()


def _remove(path: Path, fd: int) -> None:
    shutil.rmtree(path, ignore_errors=True)
    os.close(fd)
