"""The sampler's clock and its fixed-period schedule: deadlines start + k x period, late starts, skipped deadlines.

A reading that overruns one or more deadlines skips them (recorded as a gap) instead of bursting
to catch up, so the schedule never drifts.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from typing import Protocol

from specbench.clock import wall_s
from specbench.power.stats import BoundedSeries

MAX_GAPS_LISTED = 100


class Clock(Protocol):
    """Time source of the sampler; tests pass a fake one so the schedule is checked exactly."""

    def monotonic(self) -> float: ...

    def wall(self) -> float: ...

    def wait_until(self, deadline: float, stop: threading.Event) -> bool:
        """Block until `deadline` (monotonic seconds) or until `stop` is set; True when stopped."""
        ...


class SystemClock:
    """CLOCK_MONOTONIC for the schedule and durations, the process's wall clock (specbench.clock) for labels."""

    def monotonic(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return wall_s()

    def wait_until(self, deadline: float, stop: threading.Event) -> bool:
        delay = deadline - time.monotonic()
        return stop.wait(delay) if delay > 0 else stop.is_set()


@dataclass(frozen=True)
class Gap:
    """Deadlines skipped because a reading ended after them."""

    t_mono_s: float
    missed: int


@dataclass
class Schedule:
    """What the fixed-period schedule achieved: sweeps, periods between starts, lateness, skipped deadlines."""

    period_s: float
    scheduled: int = 0
    last_start: float | None = None
    periods: BoundedSeries = field(default_factory=BoundedSeries)
    lateness: BoundedSeries = field(default_factory=BoundedSeries)
    gaps: list[Gap] = field(default_factory=list)
    missed: int = 0

    def record(self, started: float, deadline: float) -> None:
        """Count one scheduled sweep that started at `started` for `deadline`."""
        self.scheduled += 1
        if self.last_start is not None:
            self.periods.append(started - self.last_start)
        self.last_start = started
        self.lateness.append(started - deadline)

    def next_index(self, t0: float, k: int, now: float) -> int:
        """Index of the next deadline still ahead; deadlines already passed are counted as missed."""
        if now <= t0 + k * self.period_s:
            return k
        next_k = math.floor((now - t0) / self.period_s) + 1
        missed = next_k - k
        if missed > 0:
            self.missed += missed
            if len(self.gaps) < MAX_GAPS_LISTED:
                self.gaps.append(Gap(now, missed))
            return next_k
        return k
