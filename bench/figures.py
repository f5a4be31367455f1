"""What a benchmark reports, and the machine it ran on."""
from __future__ import annotations

import os
import platform
import statistics
from dataclasses import asdict, dataclass


@dataclass
class Figure:
    group: str
    name: str
    value: float
    unit: str
    raw_pybullet: float | None = None  # the same quantity for plain PyBullet, same run, same scene
    note: str = ""

    @property
    def ratio(self) -> float | None:
        return self.value / self.raw_pybullet if self.raw_pybullet else None

    def as_dict(self) -> dict:
        return {**asdict(self), "ratio": self.ratio}


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
