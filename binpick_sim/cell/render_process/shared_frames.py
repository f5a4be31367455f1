"""A rendered frame's arrays from the render worker to its owner through shared memory.

Why not the socket pair that carries the announcement (the arrays beside the pickle): a 640 x 480 frame with
depth is 2.1 MB, and a Unix socket holds about 200 KB (net.core.wmem_default), so the worker's write goes out
in ten or more pieces, each waiting until the node's frame thread, in a busy process
and behind the GIL, had read the one before: 1.5-2.5 ms a frame in which the worker drew nothing (measured
with bench.profile_published on a 2-core machine; the socket's buffer raised to 4 MB took 1.3 ms of it off).
So the owner makes a file in memory (`shared_file`: a memfd, nothing in /dev/shm to leak) and passes it to
the worker; the worker copies the arrays into one of its SLOTS slots there and sends only the announcement
(`InSharedMemory`: the frame's pickle without its arrays, and where each lies), and the owner copies them out
when it takes the announcement. One copy on each side, no waiting on the other.

Why SLOTS slots are enough: the owner copies a frame out as it takes the announcement, and a worker holds at
most its `ahead` requests (render_worker.AHEAD, 2), so when it writes a frame the one `ahead` before it has been
taken. A frame larger than the slots starts a new, larger set past the end of the file (the file grows, no slot
of the old set is moved under a frame not yet taken), and the old set's pages are handed back SLOTS - 1 frames
later, when by the same rule (with the spare slot's margin) every frame in it has been taken.
"""
from __future__ import annotations

import mmap
import os
import pickle
import tempfile
from dataclasses import dataclass
from multiprocessing.connection import Connection

import numpy as np

SLOTS = 3  # render_worker.AHEAD + 1: the frame being written, one not yet taken, and one spare
ALIGN = 64  # each array starts on a cache line


@dataclass(frozen=True)
class InSharedMemory:
    """Announces a frame whose arrays are in the shared file: the pickle of the frame (protocol 5, its arrays
    left out) and each array's (offset, size in bytes), in order."""

    pickled: bytes
    places: tuple[tuple[int, int], ...]


def shared_file() -> int:
    """A new file in memory, empty, as a file descriptor (close-on-exec; pass it to the worker with pass_fds).
    A memfd where the OS has them (Linux), otherwise an unlinked temporary file."""
    if hasattr(os, "memfd_create"):
        return os.memfd_create("binpick_frames")
    with tempfile.TemporaryFile() as file:
        return os.dup(file.fileno())


def _rounded(size: int, unit: int) -> int:
    return -(-size // unit) * unit


class _Mapped:
    """One side's descriptor of the shared file and its mapping of it (none until the first frame)."""

    def __init__(self, fd: int):
        self.fd = fd
        self.map: mmap.mmap | None = None

    def close(self) -> None:
        if self.map is not None:
            self.map.close()
        os.close(self.fd)


class FrameWriter(_Mapped):
    """The worker's side: `send` puts a frame's arrays into the next slot and announces it."""

    def __init__(self, fd: int):
        super().__init__(fd)
        self.base = 0  # where the current set of slots starts in the file
        self.slot = 0  # bytes per slot (0: none yet)
        self.sent = 0
        self.stale: list[tuple[int, int, int]] = []  # old sets: offset, size, when to hand back (sent)

    def send(self, connection: Connection, frame) -> None:
        buffers: list[pickle.PickleBuffer] = []
        pickled = pickle.dumps(frame, protocol=5, buffer_callback=buffers.append)
        views = [buffer.raw() for buffer in buffers]
        self._fit(sum(_rounded(view.nbytes, ALIGN) for view in views))
        self._hand_back()
        offset, places = self.base + (self.sent % SLOTS) * self.slot, []
        for view in views:
            self.map[offset:offset + view.nbytes] = view
            places.append((offset, view.nbytes))
            offset += _rounded(view.nbytes, ALIGN)
        self.sent += 1
        connection.send(InSharedMemory(pickled, tuple(places)))

    def _fit(self, need: int) -> None:
        """Slots of at least `need` bytes: a new set past the end of the file when the current one is too small
        (twice as large at least, so that frames growing a little at a time do not grow the file each time)."""
        if need <= self.slot:
            return
        old_base, old_size = self.base, SLOTS * self.slot
        self.base, self.slot = old_base + old_size, _rounded(max(need, 2 * self.slot), mmap.PAGESIZE)
        os.ftruncate(self.fd, self.base + SLOTS * self.slot)
        if self.map is not None:
            self.map.close()
        self.map = mmap.mmap(self.fd, self.base + SLOTS * self.slot)
        if old_size:
            self.stale.append((old_base, old_size, self.sent + SLOTS - 1))

    def _hand_back(self) -> None:
        """The pages of old sets whose frames have all been taken, back to the OS (where it can: Linux)."""
        while self.stale and self.sent >= self.stale[0][2]:
            offset, size, _ = self.stale.pop(0)
            if hasattr(mmap, "MADV_REMOVE"):
                self.map.madvise(mmap.MADV_REMOVE, offset, size)


class FrameReader(_Mapped):
    """The owner's side: `receive` copies an announced frame's arrays out of the shared file."""

    def receive(self, announced: InSharedMemory):
        end = max((offset + size for offset, size in announced.places), default=0)
        if announced.places and (self.map is None or len(self.map) < end):  # the worker grew the file: map it anew
            if self.map is not None:
                self.map.close()
            self.map = mmap.mmap(self.fd, os.fstat(self.fd).st_size, prot=mmap.PROT_READ)
        buffers = [np.frombuffer(self.map, np.uint8, size, offset).copy() for offset, size in announced.places]
        return pickle.loads(announced.pickled, buffers=buffers)
