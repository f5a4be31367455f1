"""`BINPICK_RECORD_SKIPS=FILE`: the id of every test this run skipped goes into FILE, one a line, for a later
run to take again (`pytest @FILE`, `make test-skipped`).

Why: CI (.ci/run) first runs `make test` exactly as the README has it, on a venv without the ROS tools (a
plain machine's, where those tests skip), then installs the ROS tools and runs only the skipped tests again.
So a missing install step turns CI red on the plain path (issue 58: CI installed the ROS tools first and was
green while `make test` failed on every plain machine), and each test still runs once where it can.
"""
from __future__ import annotations

import os

VARIABLE = "BINPICK_RECORD_SKIPS"


def pytest_runtest_logreport(report) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        _record(report.nodeid)


def pytest_collectreport(report) -> None:
    """A whole file skipped while it was collected (a module-level importorskip)."""
    if report.skipped:
        _record(report.nodeid)


def _record(nodeid: str) -> None:
    path = os.environ.get(VARIABLE)
    # once, by the process that runs the session: under pytest-xdist that is the controller, which hears every
    # worker's reports (a worker has PYTEST_XDIST_WORKER set)
    if path and nodeid and not os.environ.get("PYTEST_XDIST_WORKER"):
        with open(path, "a") as out:
            out.write(nodeid + "\n")
