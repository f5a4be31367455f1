"""A watchdog for tests that hang in C holding the GIL: every thread's Python stack, then exit 1.

pytest-timeout cannot end such a hang. Its signal method (pytest.ini) raises from a SIGALRM handler, and
Python runs handlers only between bytecodes: a C loop that never returns (rclpy tearing a DDS
participant down, the hang of 2026-11-25) never lets it run. Its thread method runs on a Python thread,
which needs the GIL to wake up. faulthandler's `dump_traceback_later` needs neither: a C thread writes
every thread's stack to stderr and calls _exit(1). So the run ends as one test named in the log (pytest
-v printed it) with its stacks, instead of a CI job silent until its own limit.

The watchdog fires `hang_watchdog_grace` seconds (ini option, default 30) after the test's
pytest-timeout limit (marker `timeout`, `--timeout`, or the ini's `timeout`), so pytest-timeout, which
fails just the test and goes on, always has its turn first; it covers set-up, call and teardown.
Loaded by conftest.py; `-p hang_watchdog` (with test/ on the path) loads it in any pytest run.
"""
from __future__ import annotations

import faulthandler
import os
import sys

import pytest

DEFAULT_TIMEOUT = 300.0  # s, when pytest-timeout is not configured
DEFAULT_GRACE = 30.0  # s


def pytest_addoption(parser) -> None:
    parser.addini("hang_watchdog_grace", "seconds past a test's timeout before the watchdog dumps every "
                  "thread's stack and exits 1", default=str(DEFAULT_GRACE))


_STDERR: list[int] = []  # a copy of the terminal's stderr: pytest's capture redirects fd 2 during a test


def pytest_configure(config) -> None:
    _STDERR.append(os.dup(sys.__stderr__.fileno()))  # as pytest's own faulthandler plugin does


def pytest_unconfigure(config) -> None:
    while _STDERR:
        os.close(_STDERR.pop())


def limit(item) -> float | None:
    """The test's pytest-timeout limit plus the grace, in seconds; None when the timeout is off (0)."""
    marker = item.get_closest_marker("timeout")
    timeout = None
    if marker is not None:
        timeout = marker.args[0] if marker.args else marker.kwargs.get("timeout")
    if timeout is None:
        timeout = item.config.getoption("timeout", default=None)
    if timeout is None:
        try:
            timeout = item.config.getini("timeout")
        except ValueError:  # pytest-timeout not installed
            timeout = None
    timeout = float(timeout) if timeout not in (None, "") else DEFAULT_TIMEOUT
    if timeout <= 0:
        return None
    return timeout + float(item.config.getini("hang_watchdog_grace"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    seconds = limit(item)
    if seconds is not None:
        faulthandler.dump_traceback_later(seconds, exit=True, file=_STDERR[0])
    try:
        yield
    finally:
        if seconds is not None:
            faulthandler.cancel_dump_traceback_later()
