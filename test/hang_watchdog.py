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

Under pytest-xdist a worker's stderr lands in the middle of the log, wherever the crash happened, while
CI shows the end of it (stop 41 failed on "worker 'gw0' crashed" and nothing else). So there each
worker writes its dumps (this watchdog's, and faulthandler's for a segfault or an abort) to a file of
its own, and the controller prints every non-empty one in the run's summary, beside the failures.
"""
from __future__ import annotations

import faulthandler
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

DEFAULT_TIMEOUT = 300.0  # s, when pytest-timeout is not configured
DEFAULT_GRACE = 30.0  # s


def pytest_addoption(parser) -> None:
    parser.addini("hang_watchdog_grace", "seconds past a test's timeout before the watchdog dumps every "
                  "thread's stack and exits 1", default=str(DEFAULT_GRACE))


_STDERR: list[int] = []  # where dumps go: a copy of the terminal's stderr (pytest's capture redirects fd 2
# during a test), or under pytest-xdist the worker's dump file
DUMPS = "BINPICK_PYTEST_DUMPS"  # the folder of the workers' dump files, which the controller makes
_MADE: list[str] = []  # that folder, in the controller that made it (a pytest run by a test inherits DUMPS)


def worker(config) -> str | None:
    """This process's pytest-xdist worker name, or None. (Not PYTEST_XDIST_WORKER: a pytest a test runs
    in a child process inherits that variable.)"""
    return config.workerinput["workerid"] if hasattr(config, "workerinput") else None


def pytest_configure(config) -> None:
    if worker(config) and os.environ.get(DUMPS):
        path = Path(os.environ[DUMPS]) / f"{worker(config)}.txt"
        _STDERR.append(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
        return
    if not worker(config) and getattr(config.option, "numprocesses", None):  # a controller; workers start later
        _MADE.append(tempfile.mkdtemp(prefix="binpick-pytest-dumps-"))
        os.environ[DUMPS] = _MADE[0]
    _STDERR.append(os.dup(sys.__stderr__.fileno()))  # as pytest's own faulthandler plugin does


def pytest_sessionstart(session) -> None:
    """A worker's segfault or abort dumps to its file too (after pytest's faulthandler plugin, which
    enabled faulthandler on stderr in its pytest_configure)."""
    if worker(session.config) and os.environ.get(DUMPS):
        faulthandler.enable(file=_STDERR[0], all_threads=True)


def pytest_terminal_summary(terminalreporter) -> None:
    """The controller prints the dump of every worker that wrote one (a worker that crashed or hung)."""
    for dump in sorted(Path(_MADE[0]).glob("*.txt")) if _MADE else ():
        text = dump.read_text(errors="replace").strip()
        if text:
            terminalreporter.write_sep("=", f"what pytest worker {dump.stem} dumped (faulthandler)")
            terminalreporter.write_line(text)


def pytest_unconfigure(config) -> None:
    if worker(config) and os.environ.get(DUMPS):
        faulthandler.disable()  # before its file closes
    while _STDERR:
        os.close(_STDERR.pop())
    while _MADE:
        shutil.rmtree(_MADE.pop(), ignore_errors=True)
        os.environ.pop(DUMPS, None)


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
