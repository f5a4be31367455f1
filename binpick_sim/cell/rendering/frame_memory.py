"""glibc's heap and camera frames: large frames' buffers kept from one frame to the next, and freed memory
handed back to the system when asked.

glibc maps a block above its mmap threshold (128 KiB at first) and unmaps it when it is freed; after such a
block is freed it raises the threshold to that block's size (up to 32 MiB) and its trim threshold (the
free memory at the top of the heap that it hands back) to twice that. So whether a frame's buffers
(PyBullet's RGBA and depth, the RGB, the metres and the float64 between them: about 17 MB at 1024 x 768)
are mapped afresh, or taken from the heap and trimmed off again, for every frame depends on what the
process freed before, and each new page costs a fault and its zeroing. Measured with egl at 1024 x 768 in
one process: a raw getCameraImage took 3,224 minor faults a frame in one state and none in another, and
Camera.render 3,594 a frame after two calls with the segmentation mask (4,688 in a fresh process), a tenth
of a 42 ms frame. `keep_frame_buffers` fixes both thresholds, so such buffers come from the heap and the
heap keeps what one frame frees for the next: 1024 x 768 Camera.render went from 0.78 to 0.89-0.95 of raw
in the `camera` group of `make bench`, which sets it in its own process for the raw call and Camera.render
alike. It is process-wide, so only processes that draw or publish frames set it: the render worker (at
start) and the process hosting the camera node (the `sim` process, or a SimStack's) once it publishes
frames of KEEP_FROM pixels or more; Camera.render in a caller's process leaves that process's allocator
alone (call `keep_frame_buffers` there to have the same).
`give_back_freed_memory` returns the kept memory when nobody watches a camera.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import gc

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # mallopt's parameters (malloc.h)
MMAP_THRESHOLD = 32 << 20  # glibc's own ceiling for the threshold it raises by itself (64-bit)
TRIM_THRESHOLD = 64 << 20  # free memory kept at the heap's top for the next frames (a 2048 x 1536 frame's worth)
KEEP_FROM = 640 * 480  # pixels: frames this large make the camera node's process keep its buffers
_kept = False


def _libc():
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None


def keep_frame_buffers() -> bool:
    """Blocks up to MMAP_THRESHOLD from the heap, and up to TRIM_THRESHOLD of free memory kept at its top, for
    this whole process (once; later calls do nothing). False where there is no glibc."""
    global _kept
    if _kept:
        return True
    libc = _libc()
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None:
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    _kept = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return _kept


def give_back_freed_memory() -> bool:
    """Collect Python's garbage, then ask glibc to return free heap pages (whatever the trim threshold, and
    from the unused pages of its arenas too); False where there is no glibc."""
    gc.collect()
    trim = getattr(_libc(), "malloc_trim", None)
    if trim is None:
        return False
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return bool(trim(0))
