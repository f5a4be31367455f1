"""Handing freed memory back to the system.

glibc keeps freed heap memory for reuse instead of returning it, and after a large block is freed it
raises the size above which blocks are mapped (and unmapped on free) up to 32 MB, so the buffers of large
camera frames (tens of MB each) end up on the heap and stay with the process after nobody watches the
camera. `malloc_trim(0)` returns what is free at the top of the heap and in unused pages of its arenas.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import gc


def give_back_freed_memory() -> bool:
    """Collect Python's garbage, then ask glibc to return free heap pages; False where there is no glibc."""
    gc.collect()
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return False
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return bool(trim(0))
