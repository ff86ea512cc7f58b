"""The process's wall clock: labels follow the monotonic clock, whatever the system time does."""

from __future__ import annotations

import importlib
import time

import pytest

from specbench import clock


def test_a_system_clock_stepped_back_does_not_turn_labels_back(monkeypatch: pytest.MonkeyPatch) -> None:
    first = clock.wall_s()
    monkeypatch.setattr(time, "time", lambda: first - 3600.0)  # an NTP step of an hour back
    time.sleep(0.01)
    second = clock.wall_s()
    assert second >= first + 0.01
    assert clock.wall_ms() >= int(second * 1000)


def test_the_clock_starts_at_the_system_time_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "time", lambda: 1_800_000_000.0)
    try:
        importlib.reload(clock)
        assert 1_800_000_000.0 <= clock.wall_s() < 1_800_000_060.0
    finally:
        monkeypatch.undo()
        importlib.reload(clock)
