"""The replay meter plays a recorded trace back against the clock."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from power_fakes import FakeClock, ScriptedMeter

from specbench.power import PowerError, PowerSampler, ReplayMeter


def record_ramp(folder: Path) -> float:
    """Record 20 s of a power ramp at 1 s steps; returns the window's counter energy."""
    clock = FakeClock(start=500.0)
    t0 = clock.now
    meter = ScriptedMeter(
        clock, power_w=lambda t: 100.0 + 10.0 * (t - t0), energy_j=lambda t: 100.0 * (t - t0) + 5.0 * (t - t0) ** 2
    )
    sampler = PowerSampler([meter], 0.1, clock=clock)
    sampler.window_start()
    for _ in range(19):
        clock.advance(1.0)
        sampler.sample_now()
    clock.advance(1.0)
    energy_j = sampler.window_stop().device("fake:0").energy_j
    sampler.write_trace(folder)
    assert energy_j is not None
    return energy_j


def test_a_replayed_trace_gives_the_recorded_energy(tmp_path: Path) -> None:
    recorded_j = record_ramp(tmp_path)
    clock = FakeClock(start=7.0)
    replay = ReplayMeter(tmp_path, monotonic=clock.monotonic)
    sampler = PowerSampler([replay], 0.1, clock=clock)
    sampler.window_start()
    for _ in range(39):
        clock.advance(0.5)
        sampler.sample_now()
    clock.advance(0.5)
    energy = sampler.window_stop().device("fake:0")

    assert energy.method == "counter"
    assert energy.energy_j == pytest.approx(recorded_j)
    assert replay.devices[0].notes[-1] == f"replayed from {tmp_path}"
    assert replay.info()["recorded_meters"] == "scripted"


def test_replay_holds_the_last_recorded_value_between_and_after_samples(tmp_path: Path) -> None:
    record_ramp(tmp_path)
    clock = FakeClock(start=0.0)
    replay = ReplayMeter(tmp_path, monotonic=clock.monotonic)
    assert replay.read()[0].power_instant_w == pytest.approx(100.0)
    clock.advance(2.5)
    assert replay.read()[0].power_instant_w == pytest.approx(120.0)
    clock.advance(100.0)
    assert replay.read()[0].power_instant_w == pytest.approx(300.0)


def test_an_empty_trace_cannot_be_replayed(tmp_path: Path) -> None:
    record_ramp(tmp_path)
    (tmp_path / "power.csv").write_text((tmp_path / "power.csv").read_text().splitlines()[0] + "\n")
    with pytest.raises(PowerError, match="holds no samples to replay"):
        ReplayMeter(tmp_path)


def test_replay_refuses_a_future_trace(tmp_path: Path) -> None:
    record_ramp(tmp_path)
    (tmp_path / "power.json").write_text(json.dumps({"format": "specbench.power-trace", "format_version": 99}))
    with pytest.raises(PowerError, match="format version 99 not supported"):
        ReplayMeter(tmp_path)
