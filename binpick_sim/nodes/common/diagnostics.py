"""Bad-input bookkeeping and the /diagnostics status every node publishes.

A rejected or clipped command is logged at most once a second per interface (with the number held
back since) and counted; the counts go out on /diagnostics with the node's own figures. A log line
quotes at most MAX_LINE characters of the reason: a command's own text (1,000 joint names of 10 kB)
once made one 10 MB line.
"""
from __future__ import annotations

import math
import time
from collections import Counter
from typing import Callable

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.node import Node

from .convert import header
from .sim_clock import steady_timer

LOG_PERIOD = 1.0  # seconds between two log lines about the same interface
MAX_LINE = 500  # characters of a reason a log line (or a reply) quotes
HARDWARE_ID = "binpick_sim"


class BadCommand(ValueError):
    """A command that cannot be executed; the message says why, for the log and for the caller."""


def finite_vector(data, length: int) -> np.ndarray:
    """The message's numbers as an array, if there are exactly `length` of them and all are finite."""
    values = np.asarray(data, dtype=float)
    if values.shape != (length,):
        raise BadCommand(f"expected {length} values, got {values.size}")
    if not np.all(np.isfinite(values)):
        bad = [i for i, v in enumerate(values) if not math.isfinite(v)]
        raise BadCommand(f"values must be finite numbers; not finite at index {bad}")
    return values


class NodeDiagnostics:
    def __init__(self, node: Node, sim_time: Callable[[], float], period: float = 1.0,
                 values: Callable[[], dict] | None = None):
        self.node = node
        self.sim_time = sim_time
        self.values = values or (lambda: {})
        self.rejected: Counter = Counter()
        self.clipped: Counter = Counter()
        self._last_log: dict[str, float] = {}
        self._held_back: Counter = Counter()
        self.publisher = node.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.timer = steady_timer(node, period, self.publish)  # wall seconds, paused or not

    def reject(self, interface: str, reason: str) -> None:
        self.rejected[interface] += 1
        self._log(interface, f"{bounded(interface, 100)}: rejected, {bounded(reason)}; nothing was changed")

    def clip(self, interface: str, what: str) -> None:
        self.clipped[interface] += 1
        self._log(interface, f"{interface}: {what} clipped to the limits")

    def _log(self, interface: str, line: str) -> None:
        now = time.monotonic()
        if now - self._last_log.get(interface, -math.inf) < LOG_PERIOD:
            self._held_back[interface] += 1
            return
        held = self._held_back.pop(interface, 0)
        self._last_log[interface] = now
        suffix = f" ({held} more like it in the last second)" if held else ""
        self.node.get_logger().warning(line + suffix)

    def status(self) -> DiagnosticStatus:
        values = {"rejected_total": sum(self.rejected.values()), "clipped_total": sum(self.clipped.values())}
        values.update({f"rejected[{k}]": v for k, v in sorted(self.rejected.items())})
        values.update({f"clipped[{k}]": v for k, v in sorted(self.clipped.items())})
        values.update(self.values())
        level = DiagnosticStatus.WARN if self.rejected else DiagnosticStatus.OK
        message = f"{sum(self.rejected.values())} commands rejected" if self.rejected else "ok"
        return DiagnosticStatus(level=level, name=self.node.get_fully_qualified_name(), message=message,
                                hardware_id=HARDWARE_ID,
                                values=[KeyValue(key=k, value=_format(v)) for k, v in values.items()])

    def publish(self) -> None:
        self.publisher.publish(DiagnosticArray(header=header(self.sim_time(), ""), status=[self.status()]))


def bounded(text: str, limit: int = MAX_LINE) -> str:
    """`text`, cut to `limit` characters with a note of how long it was."""
    text = str(text)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _format(value) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)
