"""One wall clock for a process: the system time read once, then advanced by CLOCK_MONOTONIC.

A run's log, its power trace and its state files label events with wall-clock seconds. `time.time()`
can step (NTP, a virtual machine's clock sync) between two readings, which would put a later event
before an earlier one and mislabel the power window against the log. Reading the system time once and
advancing it by the monotonic clock keeps every label in the order events happen and their differences
equal to the durations measured.
"""

from __future__ import annotations

import time

_WALL0 = time.time()
_MONO0 = time.monotonic()


def wall_s() -> float:
    """Wall-clock seconds since the epoch, never going backwards within this process."""
    return _WALL0 + (time.monotonic() - _MONO0)


def wall_ms() -> int:
    """`wall_s()` in whole milliseconds (MLLOG's time_ms)."""
    return int(wall_s() * 1000)
