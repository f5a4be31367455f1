"""What a benchmark reports, and the machine it ran on."""
from __future__ import annotations

import os
import platform
import statistics
import time
from dataclasses import asdict, dataclass
from typing import Callable


class Skipped(Exception):
    """Raised by a group's `measure` that cannot run here; its message says why and how to run it. bench.run
    prints it under the table and writes it into the JSON, so a missing row is never silent."""


@dataclass
class Figure:
    group: str
    name: str
    value: float
    unit: str
    raw_pybullet: float | None = None  # the same quantity for plain PyBullet, same run, same scene
    note: str = ""
    # The ratio of each round where the two took turns: the figure's ratio is their median (what a claim
    # rests on) and their min / max its spread. None: one ratio, value / raw_pybullet.
    ratios: list[float] | None = None

    @property
    def ratio(self) -> float | None:
        if self.ratios:
            return statistics.median(self.ratios)
        return self.value / self.raw_pybullet if self.raw_pybullet else None

    @property
    def spread(self) -> tuple[float, float] | None:
        """(min, max) of the rounds' ratios, or None for a figure measured once."""
        return (min(self.ratios), max(self.ratios)) if self.ratios else None

    def as_dict(self) -> dict:
        spread = self.spread
        return {**asdict(self), "ratio": self.ratio, "ratio_min": spread and spread[0],
                "ratio_max": spread and spread[1], "rounds": len(self.ratios or ())}


def per_round(values: list[float], references: list[float]) -> list[float]:
    """The ratio of each round: values[i] / references[i] (the two measured in the same round)."""
    if len(values) != len(references):
        raise ValueError(f"{len(values)} rounds against {len(references)}")
    return [v / r for v, r in zip(values, references)]


def timed_turn(take: Callable[[], object]) -> Callable[[int], float]:
    """A turn of `take()` calls, returning their rate (calls/s)."""
    def run(turn: int) -> float:
        start = time.perf_counter()
        for _ in range(turn):
            take()
        return turn / (time.perf_counter() - start)
    return run


def median(samples) -> float:
    return statistics.median(samples)


def percentile(samples, q: float) -> float:
    return statistics.quantiles(samples, n=100, method="inclusive")[int(q) - 1] if len(samples) > 1 else samples[0]


def machine() -> dict:
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            model = next(line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cpu_model": model, "cores": os.cpu_count(), "python": platform.python_version(),
            "platform": platform.platform()}
