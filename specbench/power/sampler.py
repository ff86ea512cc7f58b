"""Fixed-period power sampling on a monotonic clock, and window energy between synchronized edges.

Deadlines are start + k x period, so the schedule never drifts; a reading that overruns one or
more deadlines skips them (recorded as a gap) instead of bursting to catch up. The caller
synchronizes its device before `window_start()` and `window_stop()`, which read every meter
at once in the caller's thread, so the window's counter difference covers exactly the work.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from specbench.host import host
from specbench.power.base import Device, DeviceState, Meter, PowerError, PowerValues
from specbench.power.energy import EnergyAccumulator
from specbench.power.schedule import MAX_GAPS_LISTED, Clock, Schedule, SystemClock
from specbench.power.stats import BoundedSeries
from specbench.power.trace import (
    COLUMNS,
    CSV_NAME,
    FORMAT,
    FORMAT_VERSION,
    MAX_INTERVAL_S,
    MIN_INTERVAL_S,
    CsvTraceWriter,
    Sample,
    write_metadata,
    write_samples,
)
from specbench.power.window import Window, iso_utc

DEFAULT_INTERVAL_S = 0.1


class PowerSampler:
    """Samples every meter at a fixed period in a background thread and measures windows.

    Use as a context manager (`start()` on enter, `stop()` on exit). With `trace_dir`, each sweep's
    rows go to power.csv as they are read and power.json is written at start, after each window and
    at stop, so a process killed outright leaves a readable trace up to its end; without `trace_dir`
    samples stay in `samples`. Sampling statistics are summarised in bounded memory. `key_prefix`
    goes before every device key (the node of a job of several nodes: "n1:nvml:0").
    """

    def __init__(
        self,
        meters: Sequence[Meter],
        interval_s: float = DEFAULT_INTERVAL_S,
        *,
        trace_dir: str | Path | None = None,
        clock: Clock | None = None,
        metadata: Mapping[str, Any] | None = None,
        key_prefix: str = "",
    ) -> None:
        if not MIN_INTERVAL_S <= interval_s <= MAX_INTERVAL_S:
            raise PowerError(
                f"sampling interval {interval_s * 1000:g} ms is outside {MIN_INTERVAL_S * 1000:g} to "
                f"{MAX_INTERVAL_S * 1000:g} ms; NVML and AMD SMI update power about every 1 to 100 ms"
            )
        if not meters:
            raise PowerError("no meters to sample; pass at least one (NullMeter says 'not measured')")
        self.meters = list(meters)
        self._meter_devices = [[dataclasses.replace(d, key=key_prefix + d.key) for d in m.devices] for m in meters]
        self.devices: list[Device] = [d for devices in self._meter_devices for d in devices]
        keys = [d.key for d in self.devices]
        if len(set(keys)) != len(keys):
            raise PowerError(f"device keys must be unique across meters; got {keys}")
        self.interval_s = interval_s
        self.trace_dir = Path(trace_dir) if trace_dir is not None else None
        self.extra_metadata: dict[str, Any] = dict(metadata or {})
        self._clock: Clock = clock or SystemClock()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._thread_error: BaseException | None = None
        self._writer: CsvTraceWriter | None = None
        self._samples: list[Sample] = []
        self._sweep = 0
        self._schedule = Schedule(interval_s)
        self._latencies = BoundedSeries()
        self._latest_w: dict[str, float] = {}
        self._read_errors: dict[str, int] = {}
        self._first_read_error: dict[str, str] = {}
        self._window: tuple[float, float, list[EnergyAccumulator]] | None = None
        self.windows: list[Window] = []
        self.states_start: list[DeviceState] | None = None
        self.states_end: list[DeviceState] | None = None
        self._started_wall_s: float | None = None
        self._stopped = False

    # lifecycle

    def start(self) -> None:
        if self._thread is not None or self._stopped:
            raise PowerError("a PowerSampler starts once; make a new one for another run")
        self.states_start = self._states()
        self._started_wall_s = self._clock.wall()
        if self.trace_dir is not None:
            self._writer = CsvTraceWriter(self.trace_dir)
            write_metadata(self.trace_dir, self.metadata())
        self._thread = threading.Thread(target=self._run, name="specbench-power-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop sampling, record the end state and, with `trace_dir`, write power.json."""
        if self._stopped:
            return
        self._stopped = True
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.states_end = self._states()
        if self._writer is not None:
            self._writer.close()
        if self.trace_dir is not None:
            write_metadata(self.trace_dir, self.metadata())
        if self._thread_error is not None:
            raise PowerError(f"the power sampler thread failed: {self._thread_error!r}") from self._thread_error

    def __enter__(self) -> PowerSampler:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # windows

    def window_start(self) -> None:
        """Open a window: read every meter now. Synchronize the device first."""
        with self._lock:
            if self._window is not None:
                raise PowerError("window_start() called twice; call window_stop() first (windows do not nest)")
            accumulators = [EnergyAccumulator(d) for d in self.devices]
            self._window = (self._clock.monotonic(), self._clock.wall(), accumulators)
            self._sweep_locked("start")

    def window_stop(self) -> Window:
        """Close the window: read every meter now and return each device's energy. Synchronize first."""
        with self._lock:
            if self._window is None:
                raise PowerError("window_stop() without window_start()")
            stop_mono_s, stop_wall_s = self._clock.monotonic(), self._clock.wall()
            self._sweep_locked("stop")
            start_mono_s, start_wall_s, accumulators = self._window
            self._window = None
            duration_s = stop_mono_s - start_mono_s
            window = Window(
                start_mono_s=start_mono_s,
                stop_mono_s=stop_mono_s,
                start_wall_s=start_wall_s,
                stop_wall_s=stop_wall_s,
                devices=tuple(a.result(duration_s) for a in accumulators),
            )
            self.windows.append(window)
        if self.trace_dir is not None:
            write_metadata(self.trace_dir, self.metadata())
        return window

    def sample_now(self) -> None:
        """Take one reading of every meter now, outside the schedule (marked 'manual')."""
        with self._lock:
            self._sweep_locked("manual")

    # results

    @property
    def samples(self) -> list[Sample]:
        """Samples kept in memory; empty when they stream to `trace_dir`."""
        return list(self._samples)

    def latest_power_w(self) -> float | None:
        """The latest power of every device that gives one, summed (for progress lines), or None."""
        with self._lock:
            return math.fsum(self._latest_w.values()) if self._latest_w else None

    def sampling_stats(self) -> dict[str, Any]:
        with self._lock:
            schedule = self._schedule
            return {
                "requested_period_s": self.interval_s,
                "scheduled_sweeps": schedule.scheduled,
                "achieved_period_s": schedule.periods.describe(),
                "start_lateness_s": schedule.lateness.describe(),
                "read_latency_s": self._latencies.describe(),
                "missed_deadlines": schedule.missed,
                "gaps": [{"t_mono_s": g.t_mono_s, "missed": g.missed} for g in schedule.gaps],
                "gaps_listed_max": MAX_GAPS_LISTED,
                "read_errors": dict(self._read_errors),
                "first_read_error": dict(self._first_read_error),
            }

    def metadata(self) -> dict[str, Any]:
        """The power.json document: format, meters and devices, sampling, states, windows."""
        keys = [d.key for d in self.devices]
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "csv": CSV_NAME,
            "columns": list(COLUMNS),
            "host": host().hostname,
            "started_wall": iso_utc(self._started_wall_s) if self._started_wall_s is not None else None,
            "meters": [
                {"kind": m.kind, "info": m.info(), "devices": [d.to_dict() for d in devices]}
                for m, devices in zip(self.meters, self._meter_devices, strict=True)
            ],
            "sampling": self.sampling_stats(),
            "state_start": _states_by_key(keys, self.states_start),
            "state_end": _states_by_key(keys, self.states_end),
            "windows": [w.to_dict() for w in self.windows],
            **self.extra_metadata,
        }

    def write_trace(self, folder: str | Path) -> None:
        """Write in-memory samples and the metadata to a folder (for samplers without `trace_dir`)."""
        if self.trace_dir is not None:
            raise PowerError(f"samples already stream to {self.trace_dir}; write_trace() is for in-memory samplers")
        folder = Path(folder)
        write_samples(folder, self.samples)
        write_metadata(folder, self.metadata())

    # internals

    def _states(self) -> list[DeviceState]:
        states: list[DeviceState] = []
        for meter in self.meters:
            try:
                states.extend(meter.states())
            except Exception:  # a state read must never end a measurement
                states.extend(DeviceState() for _ in meter.devices)
        return states

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as err:  # reported by stop(): a thread's exception is otherwise lost
            self._thread_error = err

    def _loop(self) -> None:
        period = self.interval_s
        t0 = self._clock.monotonic()
        k = 0
        while not self._clock.wait_until(t0 + k * period, self._stop):
            deadline = t0 + k * period
            with self._lock:
                started = self._sweep_locked("")
                self._schedule.record(started, deadline)
                k = self._schedule.next_index(t0, k + 1, self._clock.monotonic())

    def _sweep_locked(self, mark: str) -> float:
        """Read every meter once (caller holds the lock); returns the sweep's start time."""
        sweep = self._sweep
        self._sweep += 1
        started = self._clock.monotonic()
        offset = 0
        rows: list[Sample] = []
        for meter in self.meters:
            count = len(meter.devices)
            before_mono, before_wall = self._clock.monotonic(), self._clock.wall()
            try:
                values = meter.read()
            except Exception as err:
                if mark in ("start", "stop"):
                    raise PowerError(f"{meter.kind} meter failed at the window {mark}: {err}") from err
                self._read_errors[meter.kind] = self._read_errors.get(meter.kind, 0) + 1
                self._first_read_error.setdefault(meter.kind, f"{type(err).__name__}: {err}")
                offset += count
                continue
            latency = self._clock.monotonic() - before_mono
            if len(values) != count:
                raise PowerError(f"{meter.kind} meter returned {len(values)} readings for {count} devices")
            self._latencies.append(latency)
            t_mono, t_wall = before_mono + latency / 2, before_wall + latency / 2
            for device, value in zip(self.devices[offset : offset + count], values, strict=True):
                rows.append(Sample(sweep, t_mono, t_wall, device.key, *_columns(value), latency, mark))
            if self._window is not None:
                for accumulator, value in zip(self._window[2][offset : offset + count], values, strict=True):
                    accumulator.add(t_mono, value)
            offset += count
        self._record(rows)
        return started

    def _record(self, rows: list[Sample]) -> None:
        for sample in rows:
            power_w = sample.power_instant_w if sample.power_instant_w is not None else sample.power_average_w
            if power_w is not None:
                self._latest_w[sample.device] = power_w
        if self._writer is not None:
            self._writer.write_rows(rows)
        else:
            self._samples.extend(rows)


def _columns(value: PowerValues) -> tuple[float | None, float | None, float | None]:
    return value.power_instant_w, value.power_average_w, value.energy_j


def _states_by_key(keys: list[str], states: list[DeviceState] | None) -> dict[str, dict[str, float | None]] | None:
    if states is None:
        return None
    return {key: state.to_dict() for key, state in zip(keys, states, strict=True)}
