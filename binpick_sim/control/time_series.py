"""The buffer of the time-indexed interface: the last BUFFER values by time index, a future one waited for.

The robot's series (desired and applied actions, observations, status) and the camera's frames
(control/camera_series.py) both refuse an index no longer kept with the same TimeIndexError; it lives here,
below both, so that the camera series need not import the robot interface that starts it.
"""
from __future__ import annotations

import threading

BUFFER = 1000  # steps kept (seed)


class TimeIndexError(IndexError):
    """A time index that is no longer (or not) in the buffer."""


class TimeSeries:
    """The last BUFFER values by time index; a future index blocks until it is written."""

    def __init__(self, maxlen: int = BUFFER):
        self.maxlen = maxlen
        self.values: dict[int, object] = {}
        self.newest = -1
        self.changed = threading.Condition()

    def append(self, t: int, value) -> None:
        with self.changed:
            self.values[t] = value
            self.newest = max(self.newest, t)
            self.values.pop(t - self.maxlen, None)
            self.changed.notify_all()

    def wait_for(self, t: int, timeout: float | None = None) -> None:
        """Until index t has been written (it may be gone again by then)."""
        with self.changed:
            if not self.changed.wait_for(lambda: t <= self.newest, timeout):
                raise TimeoutError(f"time index {t} was not reached within {timeout} s")

    def get(self, t: int, timeout: float | None = None):
        with self.changed:
            if t < 0:
                raise TimeIndexError(f"time index {t} does not exist (indices start at 0)")
            if not self.changed.wait_for(lambda: t <= self.newest, timeout):
                raise TimeoutError(f"time index {t} was not reached within {timeout} s")
            if t not in self.values:
                raise TimeIndexError(f"time index {t} is no longer kept (only the last {self.maxlen} steps are; "
                                     f"the oldest now is {self.newest - self.maxlen + 1})")
            return self.values[t]
