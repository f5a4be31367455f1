"""The sim's start watchdog: a start slower than its bound writes every thread's stack and goes on.

Two stages, because neither of faulthandler's ways is safe and sure at once:

- A Python thread wakes at the bound and, holding the GIL, writes the stacks with
  `faulthandler.dump_traceback`. While it holds the GIL no other thread runs Python, so every frame it
  reads stands still. It cannot run while a start hangs in C holding the GIL.
- `faulthandler.dump_traceback_later`, armed GIL_GRACE later, writes them from a C thread that needs no
  GIL: it is what still speaks when the start hangs in C holding it. It reads the other threads'
  frames without the GIL, so it crashes the process (SIGSEGV) when a thread runs Python meanwhile
  (CI stop 51: a 0.2 s bound fired while the start imported; a loop of such dumps beside Python code
  crashes within seconds here). Fired only once the Python thread has failed to get the GIL for
  GIL_GRACE, it reads threads held in C, whose frames do not move.

The Python thread cancels the C timer before it writes. faulthandler's cancel waits for a dump under
way to end, holding the GIL, so the two never read frames that move.
"""
from __future__ import annotations

import faulthandler
import math
import os
import sys
import threading
from typing import TextIO

START_WATCHDOG = "BINPICK_START_WATCHDOG"  # s; the variable that sets the bound on a start
START_WATCHDOG_DEFAULT = 60.0  # s: a start takes a few seconds (20 on a busy 2-core machine)
GIL_GRACE = 2.0  # s past the bound without the GIL: the start holds it in C, and faulthandler's C thread writes


def bound(environ=os.environ) -> float | None:
    """The bound BINPICK_START_WATCHDOG sets (default 60 s), None for off: 0, and any bound past what the
    platform can time (threading.TIMEOUT_MAX, about 292 years; faulthandler's timer raised OverflowError
    there and stopped the start), inf included. A value that is no number of seconds >= 0 gets one line on
    stderr and the default."""
    text = environ.get(START_WATCHDOG, "").strip()
    try:
        seconds = float(text) if text else START_WATCHDOG_DEFAULT
    except ValueError:
        seconds = math.nan
    if math.isnan(seconds) or seconds < 0:
        print(f"binpick_sim: {START_WATCHDOG}={text!r} is not a number of seconds >= 0; using "
              f"{START_WATCHDOG_DEFAULT:g}", file=sys.stderr)
        seconds = START_WATCHDOG_DEFAULT
    if seconds + GIL_GRACE > threading.TIMEOUT_MAX:
        return None
    return seconds or None


class StartWatchdog:
    """Armed at construction; `cancel()` once the start is done (or has failed)."""

    def __init__(self, seconds: float, stream: TextIO | None = None):
        self.seconds = seconds
        self.stream = stream or sys.stderr
        self.done = threading.Event()
        faulthandler.dump_traceback_later(seconds + GIL_GRACE, exit=False, file=self.stream)
        threading.Thread(target=self._watch, name="start-watchdog", daemon=True).start()

    def _watch(self) -> None:
        if self.done.wait(self.seconds):
            return
        faulthandler.cancel_dump_traceback_later()  # first: it waits for a C dump under way, holding the GIL
        if self.done.is_set():  # the start ended as the bound passed
            return
        print(f"binpick_sim: the start has taken longer than {self.seconds:g} s ({START_WATCHDOG}); "
              "every thread's stack follows, and the start goes on", file=self.stream, flush=True)
        faulthandler.dump_traceback(file=self.stream, all_threads=True)

    def cancel(self) -> None:
        self.done.set()
        faulthandler.cancel_dump_traceback_later()


def arm(environ=os.environ, stream: TextIO | None = None) -> StartWatchdog | None:
    """The watchdog over a start, at the bound `environ` sets; None where it is turned off."""
    seconds = bound(environ)
    return None if seconds is None else StartWatchdog(seconds, stream)
