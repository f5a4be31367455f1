"""Silencing PyBullet's C code on stdout, in a module of its own.

Both the world (PyBullet's import and connect) and the renderers (the EGL plugin's load) need it, and the
world imports the renderers: kept here, below both, neither has to import the other to reach it.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import sys


@contextlib.contextmanager
def quiet_stdout():
    """Hide what PyBullet's C code prints to stdout (build time, argv) so our own output stays readable."""
    sys.stdout.flush()
    saved = os.dup(1)
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 1)
        try:
            yield
        finally:
            ctypes.CDLL(None).fflush(None)  # C stdio may still hold the text in its buffer
            os.dup2(saved, 1)
            os.close(saved)
