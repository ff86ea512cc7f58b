"""Summaries of series that grow with a run's length, in bounded memory (count, mean, median, p95, min, max)."""

from __future__ import annotations

import math
import statistics
from array import array
from collections.abc import Sequence

KEPT_MAX = 65536
"""Values a BoundedSeries keeps for its median and 95th percentile; count, mean, min and max stay exact."""


def describe(values: Sequence[float]) -> dict[str, float | int] | None:
    """Count, mean, median, 95th percentile, min and max of a series, or None when it is empty."""
    if not values:
        return None
    ordered = sorted(values)
    return {
        "n": len(ordered),
        "mean": math.fsum(ordered) / len(ordered),
        "median": statistics.median(ordered),
        "p95": _p95(ordered),
        "min": ordered[0],
        "max": ordered[-1],
    }


def _p95(ordered: Sequence[float]) -> float:
    return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]


class BoundedSeries:
    """A series summarised exactly (count, mean, min, max) with evenly spaced values kept for its quantiles.

    Up to `kept_max` values are kept as they come; when full, every second one is dropped and only
    every 2nd, 4th, ... later value is kept, so a day of 10 Hz sampling needs the same memory as a minute.
    """

    def __init__(self, kept_max: int = KEPT_MAX) -> None:
        self.kept_max = max(2, kept_max)
        self.count = 0
        self._sum = 0.0
        self._min = math.inf
        self._max = -math.inf
        self._stride = 1
        self._kept = array("d")

    def append(self, value: float) -> None:
        if self.count % self._stride == 0:
            if len(self._kept) >= self.kept_max:
                self._kept = self._kept[::2]
                self._stride *= 2
            if self.count % self._stride == 0:
                self._kept.append(value)
        self.count += 1
        self._sum += value
        self._min = min(self._min, value)
        self._max = max(self._max, value)

    def __len__(self) -> int:
        return self.count

    def describe(self) -> dict[str, float | int] | None:
        """As `describe()` of the whole series; median and p95 come from the kept values."""
        if not self.count:
            return None
        ordered = sorted(self._kept)
        return {
            "n": self.count,
            "mean": self._sum / self.count,
            "median": statistics.median(ordered),
            "p95": _p95(ordered),
            "min": self._min,
            "max": self._max,
        }
