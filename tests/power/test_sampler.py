"""The sampler's schedule (deadlines on a fake clock, never wall-time luck) and window energy."""

from __future__ import annotations

import threading

import pytest
from power_fakes import FakeClock, ScriptedMeter

from specbench.power import Device, NullMeter, PowerError, PowerSampler, PowerValues, SystemClock, read_trace
from specbench.power.base import Meter


def run_thread(sampler: PowerSampler, clock: FakeClock) -> None:
    sampler.start()
    assert clock.finished.wait(10), "the sampler never reached the clock's end"
    sampler.stop()


def test_deadlines_are_start_plus_k_periods_so_the_schedule_never_drifts() -> None:
    clock = FakeClock(start=1000.0, end=1001.0)
    meter = ScriptedMeter(clock, latency_s=lambda n: 0.03)
    sampler = PowerSampler([meter], 0.1, clock=clock)
    run_thread(sampler, clock)

    starts = [s.t_mono_s - 0.015 for s in sampler.samples]
    assert starts == pytest.approx([1000.0 + 0.1 * k for k in range(10)], abs=1e-9)
    stats = sampler.sampling_stats()
    assert stats["scheduled_sweeps"] == 10
    assert stats["achieved_period_s"]["mean"] == pytest.approx(0.1, abs=1e-9)
    assert stats["achieved_period_s"]["max"] == pytest.approx(0.1, abs=1e-9)
    assert stats["read_latency_s"]["median"] == pytest.approx(0.03)
    assert stats["missed_deadlines"] == 0
    assert stats["gaps"] == []


def test_an_overrun_skips_the_deadlines_it_passed_and_records_a_gap() -> None:
    clock = FakeClock(start=0.0, end=1.0)
    meter = ScriptedMeter(clock, latency_s=lambda n: 0.25 if n == 3 else 0.0)
    sampler = PowerSampler([meter], 0.1, clock=clock)
    run_thread(sampler, clock)

    assert [s.t_mono_s for s in sampler.samples] == pytest.approx([0.0, 0.1, 0.2, 0.425, 0.6, 0.7, 0.8, 0.9])
    stats = sampler.sampling_stats()
    assert stats["missed_deadlines"] == 2
    assert stats["gaps"] == [{"t_mono_s": pytest.approx(0.55), "missed": 2}]
    assert stats["achieved_period_s"]["max"] == pytest.approx(0.3)
    assert stats["achieved_period_s"]["median"] == pytest.approx(0.1)


def test_a_failed_scheduled_read_is_counted_and_sampling_goes_on() -> None:
    clock = FakeClock(start=0.0, end=0.5)
    meter = ScriptedMeter(clock, fail_reads=(1,))
    sampler = PowerSampler([meter], 0.1, clock=clock)
    run_thread(sampler, clock)

    assert len(sampler.samples) == 4
    stats = sampler.sampling_stats()
    assert stats["read_errors"] == {"scripted": 1}
    assert stats["first_read_error"] == {"scripted": "RuntimeError: scripted failure on read 1"}


def test_a_failed_read_at_a_window_edge_raises(clock: FakeClock) -> None:
    sampler = PowerSampler([ScriptedMeter(clock, fail_reads=(0,))], 0.1, clock=clock)
    with pytest.raises(PowerError, match="scripted meter failed at the window start: scripted failure on read 0"):
        sampler.window_start()


def test_window_energy_is_the_counter_difference_cross_checked_by_the_trapezoid(clock: FakeClock) -> None:
    t0 = clock.now
    meter = ScriptedMeter(
        clock,
        power_w=lambda t: 100.0 + 50.0 * (t - t0),
        energy_j=lambda t: 7000.0 + 100.0 * (t - t0) + 25.0 * (t - t0) ** 2,
    )
    sampler = PowerSampler([meter], 0.1, clock=clock)
    sampler.window_start()
    for _ in range(9):
        clock.advance(1.0)
        sampler.sample_now()
    clock.advance(1.0)
    window = sampler.window_stop()

    energy = window.device("fake:0")
    assert window.duration_s == pytest.approx(10.0)
    assert energy.method == "counter"
    assert energy.energy_j == pytest.approx(100.0 * 10 + 25.0 * 100)
    assert energy.integrated_energy_j == pytest.approx(3500.0)
    assert energy.cross_check_ratio == pytest.approx(1.0)
    assert energy.mean_power_w == pytest.approx(350.0)
    assert energy.samples == 11
    assert window.totals_by_scope() == {"accelerator": pytest.approx(3500.0)}


def test_only_readings_inside_the_window_count(clock: FakeClock) -> None:
    meter = ScriptedMeter(clock, energy_j=lambda t: 100.0 * t)
    sampler = PowerSampler([meter], 0.1, clock=clock)
    sampler.sample_now()
    clock.advance(5.0)
    sampler.window_start()
    clock.advance(2.0)
    window = sampler.window_stop()
    clock.advance(5.0)
    sampler.sample_now()

    assert window.device("fake:0").energy_j == pytest.approx(200.0)
    assert [s.mark for s in sampler.samples] == ["manual", "start", "stop", "manual"]


def test_a_counter_wrap_is_corrected_with_the_known_range_and_reported(clock: FakeClock) -> None:
    t0 = clock.now
    device = Device(
        key="rapl:package-0", meter="scripted", scope="cpu_package", energy_counter="x", energy_range_j=1000.0
    )
    meter = ScriptedMeter(
        clock, power_w=lambda t: None, energy_j=lambda t: (950.0 + 100.0 * (t - t0)) % 1000.0, device=device
    )
    sampler = PowerSampler([meter], 0.1, clock=clock)
    sampler.window_start()
    for _ in range(4):
        clock.advance(1.0)
        sampler.sample_now()
    clock.advance(1.0)
    energy = sampler.window_stop().device("rapl:package-0")

    assert energy.method == "counter"
    assert energy.energy_j == pytest.approx(500.0)
    assert [(e.kind, e.before_j, e.after_j) for e in energy.counter_events] == [
        ("wrap", pytest.approx(950.0), pytest.approx(50.0))
    ]
    assert energy.integrated_energy_j is None
    assert energy.cross_check_ratio is None


def test_a_counter_reset_is_reported_and_the_window_falls_back_to_the_integral(clock: FakeClock) -> None:
    t0 = clock.now
    meter = ScriptedMeter(
        clock, power_w=lambda t: 200.0, energy_j=lambda t: 200.0 * (t - t0) + (5000.0 if t - t0 < 2.5 else 0.0)
    )
    sampler = PowerSampler([meter], 0.1, clock=clock)
    sampler.window_start()
    for _ in range(4):
        clock.advance(1.0)
        sampler.sample_now()
    clock.advance(1.0)
    energy = sampler.window_stop().device("fake:0")

    assert energy.method == "integrated"
    assert energy.energy_j == pytest.approx(1000.0)
    assert energy.counter_energy_j is None
    assert [e.kind for e in energy.counter_events] == ["reset"]
    assert energy.note is not None
    assert "counter reset" in energy.note
    assert "5400.000 J -> 600.000 J" in energy.note


def test_the_null_meter_reports_not_measured_never_zero(clock: FakeClock) -> None:
    sampler = PowerSampler([NullMeter("no GPU here")], 0.1, clock=clock)
    sampler.window_start()
    clock.advance(3.0)
    window = sampler.window_stop()

    energy = window.device("null")
    assert (energy.energy_j, energy.method, energy.mean_power_w) == (None, "not_measured", None)
    assert energy.note == "no GPU here"
    assert window.energy_j("none") is None


def test_a_scope_total_is_none_when_any_of_its_devices_was_not_measured(clock: FakeClock) -> None:
    measured = ScriptedMeter(clock)
    unmeasured = ScriptedMeter(
        clock,
        power_w=lambda t: None,
        energy_j=lambda t: None,
        device=Device(key="fake:1", meter="scripted", scope="accelerator"),
    )
    sampler = PowerSampler([measured, unmeasured], 0.1, clock=clock)
    sampler.window_start()
    clock.advance(1.0)
    window = sampler.window_stop()

    assert window.device("fake:0").energy_j == pytest.approx(100.0)
    assert window.device("fake:1").energy_j is None
    assert window.energy_j("accelerator") is None


def test_windows_do_not_nest_and_stop_needs_start(clock: FakeClock) -> None:
    sampler = PowerSampler([ScriptedMeter(clock)], 0.1, clock=clock)
    with pytest.raises(PowerError, match=r"window_stop\(\) without window_start\(\)"):
        sampler.window_stop()
    sampler.window_start()
    with pytest.raises(PowerError, match=r"window_start\(\) called twice"):
        sampler.window_start()


@pytest.mark.parametrize("interval_s", [0.005, 61.0])
def test_the_interval_must_lie_between_10_ms_and_60_s(interval_s: float, clock: FakeClock) -> None:
    with pytest.raises(PowerError, match="outside 10 to 60000 ms"):
        PowerSampler([ScriptedMeter(clock)], interval_s, clock=clock)


def test_duplicate_device_keys_are_refused(clock: FakeClock) -> None:
    with pytest.raises(PowerError, match="device keys must be unique"):
        PowerSampler([ScriptedMeter(clock), ScriptedMeter(clock)], 0.1, clock=clock)


def test_a_context_manager_sampler_streams_the_trace_and_writes_metadata(tmp_path, clock: FakeClock) -> None:
    clock.end = clock.now + 0.5
    with PowerSampler([ScriptedMeter(clock)], 0.1, trace_dir=tmp_path, clock=clock, metadata={"node": 1}) as s:
        s.window_start()
        assert clock.finished.wait(10)
        s.window_stop()
    trace = read_trace(tmp_path)

    assert trace.metadata["node"] == 1
    assert trace.metadata["sampling"]["requested_period_s"] == 0.1
    assert len(trace.metadata["windows"]) == 1
    assert trace.metadata["state_start"] == {
        "fake:0": {"power_limit_w": None, "sm_clock_mhz": None, "memory_clock_mhz": None}
    }
    marks = [sample.mark for sample in trace.samples]
    assert marks.count("start") == 1 and marks.count("stop") == 1
    assert marks.count("") == 5
    assert s.samples == []


class _WrongCount(Meter):
    kind = "broken"

    def __init__(self) -> None:
        super().__init__([Device(key="b:0", meter="broken", scope="other")])

    def read(self) -> list[PowerValues]:
        return []


def test_a_failure_inside_the_thread_is_raised_by_stop() -> None:
    clock = FakeClock(start=0.0, end=0.2)
    sampler = PowerSampler([_WrongCount()], 0.1, clock=clock)
    sampler.start()
    sampler._thread.join(10)  # type: ignore[union-attr]
    with pytest.raises(PowerError, match=r"sampler thread failed.*returned 0 readings for 1 devices"):
        sampler.stop()


def test_the_system_clock_returns_at_once_when_stopped_or_late() -> None:
    system = SystemClock()
    stop = threading.Event()
    assert system.wait_until(system.monotonic() - 1.0, stop) is False
    stop.set()
    assert system.wait_until(system.monotonic() + 3600.0, stop) is True


def test_a_streamed_trace_is_readable_while_sampling_and_keeps_nothing_in_memory(tmp_path, clock: FakeClock) -> None:
    """power.json is there from the start and power.csv grows sweep by sweep: a kill at any time leaves a trace."""
    sampler = PowerSampler([ScriptedMeter(clock)], 0.1, trace_dir=tmp_path, clock=clock, key_prefix="n1:")
    sampler.start()
    try:
        early = read_trace(tmp_path)  # before any window and before stop()
        assert [d.key for d in early.devices] == ["n1:fake:0"]
        sampler.sample_now()
        assert [s.device for s in read_trace(tmp_path).samples][-1] == "n1:fake:0"
        assert sampler.latest_power_w() is not None and sampler.samples == []
    finally:
        clock.end = clock.now
        sampler.stop()


def test_sampling_statistics_of_a_long_run_stay_bounded() -> None:
    from specbench.power.stats import BoundedSeries, describe

    values = [float(i % 997) for i in range(200_000)]
    series = BoundedSeries(kept_max=1024)
    for value in values:
        series.append(value)
    exact, bounded = describe(values), series.describe()
    assert exact is not None and bounded is not None
    assert len(series._kept) <= 1024
    assert (bounded["n"], bounded["min"], bounded["max"]) == (exact["n"], exact["min"], exact["max"])
    assert bounded["mean"] == pytest.approx(exact["mean"], rel=1e-12)
    assert bounded["median"] == pytest.approx(exact["median"], abs=10) and bounded["p95"] == pytest.approx(
        exact["p95"], abs=10
    )


def test_the_sampler_refuses_to_write_metadata_its_reader_would_refuse(tmp_path, clock: FakeClock) -> None:
    """power.json has one model (power/metadata.py): a key no reader knows is a writer's bug, caught at writing."""
    clock.end = clock.now + 0.2
    sampler = PowerSampler([ScriptedMeter(clock)], 0.1, trace_dir=tmp_path, clock=clock, metadata={"run": "r1"})
    with pytest.raises(PowerError, match=r"would not conform at run: Extra inputs are not permitted"), sampler:
        assert clock.finished.wait(10)
