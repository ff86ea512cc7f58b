"""The replay meter: plays a recorded power trace back against the clock, for tests and demos."""

from __future__ import annotations

import bisect
import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

from specbench.power.base import Device, Meter, PowerError, PowerValues
from specbench.power.csvread import read_trace
from specbench.power.trace import Sample


class ReplayMeter(Meter):
    """Answers each read with what each recorded device showed at the same time since the first read.

    The first read is anchored to the first recorded sample; later reads hold the latest recorded
    sample at or before the elapsed time (as a sensor holds its last update), and the last one
    after the recording ends.
    """

    kind = "replay"

    def __init__(self, folder: str | Path, *, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.folder = Path(folder)
        trace = read_trace(self.folder)
        if not trace.samples:
            raise PowerError(f"{self.folder}: the trace holds no samples to replay")
        self._monotonic = monotonic
        self._series: list[tuple[list[float], list[Sample]]] = []
        devices: list[Device] = []
        for device in trace.devices:
            samples = sorted(trace.samples_of(device.key), key=lambda s: s.t_mono_s)
            if not samples:
                continue
            self._series.append(([s.t_mono_s for s in samples], samples))
            devices.append(dataclasses.replace(device, notes=(*device.notes, f"replayed from {self.folder}")))
        self._t_first = min(times[0] for times, _ in self._series)
        self._anchor: float | None = None
        self._source_meters = ",".join(str(m.get("kind")) for m in trace.metadata.get("meters", []))
        super().__init__(devices)

    def read(self) -> list[PowerValues]:
        now = self._monotonic()
        if self._anchor is None:
            self._anchor = now
        target = self._t_first + (now - self._anchor)
        values = []
        for times, samples in self._series:
            index = max(bisect.bisect_right(times, target) - 1, 0)
            sample = samples[index]
            values.append(PowerValues(sample.power_instant_w, sample.power_average_w, sample.energy_counter_j))
        return values

    def info(self) -> dict[str, str]:
        return {"replayed_trace": str(self.folder), "recorded_meters": self._source_meters}
