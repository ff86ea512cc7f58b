"""One device's samples in a run's timed window: coverage, density, gaps, counter, and its energy."""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import compress
from operator import add, mul, sub

from specbench.power.base import Device, PowerValues
from specbench.power.csvread import CsvTrace, Series
from specbench.power.energy import DeviceEnergy, EnergyAccumulator
from specbench.spec.models import PowerRequirement
from specbench.validator.findings import Findings

GAP_PERIODS = 2.0
"""Two consecutive samples may lie at most this many of the spec's longest periods apart."""
LOG_CLOCK_SLACK_S = 0.002
"""time_ms is rounded to the millisecond; a window edge may sit this much off the sample's wall time."""


@dataclass
class DeviceWindow:
    """One device's samples between run_start and run_stop, and the checks on them."""

    findings: Findings
    file: str
    trace: CsvTrace
    device: Device
    series: Series
    start_s: float
    stop_s: float
    period_s: float
    requirement: PowerRequirement
    achieved_hz: float = 0.0
    edges: tuple[float, float] = (0.0, 0.0)
    steps: list[float] | None = None

    def add(self, code: str, index: int | None, message: str) -> None:
        line = self.trace.line(self.series.rows[index]) if index is not None else None
        self.findings.add(code, self.file, message, line=line)

    def check(self) -> DeviceEnergy | None:
        s, key = self.series, self.device.key
        back = _first_decrease(s.t_mono_s)
        if back is not None:
            self.add(
                "SB-PWR-007",
                back,
                f"expected t_mono_s of {key} to increase, found {s.t_mono_s[back]!r} after {s.t_mono_s[back - 1]!r}",
            )
            return None
        repeat = _first_not_increasing(s.sweep)
        if repeat is not None:
            self.add("SB-PWR-010", repeat, f"expected {key} once per sweep, found it again in sweep {s.sweep[repeat]}")
        span = self.window()
        if span is None:
            self.add("SB-PWR-003", None, f"expected samples of {key} between run_start and run_stop, found none")
            return None
        a, b = span
        self.edges = (s.t_wall_s[a], s.t_wall_s[b])
        self.check_coverage(a, b)
        self.check_density(a, b)
        self.check_counter(a, b)
        energy = window_energy(self.device, s, a, b, self.steps)
        ratio = energy.cross_check_ratio
        if ratio is not None and abs(ratio - 1) > self.requirement.counter_tolerance:
            self.add(
                "SB-PWR-008",
                None,
                f"expected {key}'s counter energy within {self.requirement.counter_tolerance:.0%} of the integrated trace, "
                f"found {energy.counter_energy_j:.1f} J against {energy.integrated_energy_j:.1f} J (ratio {ratio:.3f})",
            )
        return energy

    def window(self) -> tuple[int, int] | None:
        """The samples of the timed window: between the 'start' and 'stop' marks, else by wall time."""
        s = self.series
        marked = marked_window(s.mark)
        if marked is not None:
            return marked
        low, high = self.start_s - LOG_CLOCK_SLACK_S, self.stop_s + LOG_CLOCK_SLACK_S
        inside = [i for i, t in enumerate(s.t_wall_s) if low <= t <= high]
        return (inside[0], inside[-1]) if inside else None

    def check_coverage(self, a: int, b: int) -> None:
        s, tol = self.series, self.period_s + LOG_CLOCK_SLACK_S
        first, last = s.t_wall_s[a], s.t_wall_s[b]
        if abs(first - self.start_s) > tol:
            self.add(
                "SB-PWR-003",
                a,
                f"expected the first sample of {self.device.key} within {self.period_s:g} s of run_start, "
                f"found it {first - self.start_s:+.3f} s off",
            )
        if abs(self.stop_s - last) > tol:
            self.add(
                "SB-PWR-003",
                b,
                f"expected the last sample of {self.device.key} within {self.period_s:g} s of run_stop, "
                f"found it {last - self.stop_s:+.3f} s off",
            )

    def check_density(self, a: int, b: int) -> None:
        s, req, key = self.series, self.requirement, self.device.key
        count = b - a + 1
        duration = s.t_mono_s[b] - s.t_mono_s[a]
        self.achieved_hz = (count - 1) / duration if duration > 0 else math.inf
        if count < req.min_samples:
            self.add(
                "SB-PWR-004", None, f"expected at least {req.min_samples} samples of {key} in the window, found {count}"
            )
        if self.achieved_hz < req.min_sampling_hz * (1 - 1e-9):
            self.add(
                "SB-PWR-004",
                None,
                f"expected at least {req.min_sampling_hz:g} Hz for {key}, found {self.achieved_hz:.3f} Hz",
            )
        if count > 1:
            self.steps = gaps = list(map(sub, s.t_mono_s[a + 1 : b + 1], s.t_mono_s[a:b]))
            widest = max(gaps)
            bound = GAP_PERIODS * self.period_s
            if widest > bound:
                self.add(
                    "SB-PWR-005",
                    a + 1 + gaps.index(widest),
                    f"expected gaps of at most {bound:g} s for {key}, found {widest:.3f} s",
                )

    def check_counter(self, a: int, b: int) -> None:
        """A counter without a wrap modulus never goes down; one with a modulus reads below it (SB-CNS-004)."""
        window = self.series.energy_counter_j[a : b + 1]
        modulus = self.device.energy_range_j
        if modulus is not None:
            beyond = next((i for i, v in enumerate(window) if v is not None and not 0 <= v < modulus), None)
            if beyond is not None:
                self.add(
                    "SB-CNS-004",
                    a + beyond,
                    f"expected the energy counter of {self.device.key} in [0, {modulus!r}) J (its energy_range_j, "
                    f"the modulus it wraps at), found {window[beyond]!r} J",
                )
            return
        values = [v for v in window if v is not None]
        indices = [a + i for i, v in enumerate(window) if v is not None] if len(values) < len(window) else None
        down = _first_decrease(values)
        if down is not None:
            self.add(
                "SB-PWR-006",
                a + down if indices is None else indices[down],
                f"expected the energy counter of {self.device.key} not to go down, "
                f"found {values[down]!r} J after {values[down - 1]!r} J",
            )


def window_energy(device: Device, s: Series, a: int, b: int, steps: list[float] | None = None) -> DeviceEnergy:
    """Energy of one device over samples a..b, as `EnergyAccumulator` computes it, vectorised when it can be.

    `steps` are the t_mono_s differences over a..b where the caller has them already.
    """
    acc = EnergyAccumulator(device)
    t = s.t_mono_s[a : b + 1]
    power, energy = s.power_instant_w[a : b + 1], s.energy_counter_j[a : b + 1]
    missing = energy.count(None)
    no_counter = missing == len(energy)
    plain = None not in power and (no_counter or (missing == 0 and _first_decrease(energy) is None))  # type: ignore[arg-type]
    if plain:
        acc.samples = len(t)
        if len(t) > 1:
            if steps is None:
                steps = list(map(sub, t[1:], t[:-1]))
            acc.integral_j = 0.5 * sum(map(mul, map(add, power[1:], power[:-1]), steps))  # type: ignore[arg-type]
            acc.integral_steps = len(steps)
            if not no_counter:
                acc.counter_j = sum(map(sub, energy[1:], energy[:-1]))  # type: ignore[arg-type]
                acc.counter_steps = len(steps)
    else:
        average = s.power_average_w[a : b + 1]
        for i, when in enumerate(t):
            acc.add(when, PowerValues(power[i], average[i], energy[i]))
    return acc.result(t[-1] - t[0])


def marked_window(marks: list[str]) -> tuple[int, int] | None:
    """The indices of the 'start' and 'stop' marks when each occurs once, start first; else None.

    Only the marked samples (non-empty marks, a handful) are looked at one by one.
    """
    marked = list(compress(range(len(marks)), marks))
    starts = [i for i in marked if marks[i] == "start"]
    stops = [i for i in marked if marks[i] == "stop"]
    if len(starts) == 1 and len(stops) == 1 and starts[0] < stops[0]:
        return starts[0], stops[0]
    return None


def _first_decrease(values: list[float]) -> int | None:
    """The first index whose value is below the one before (values are finite); sorting a sorted list is one pass."""
    if values == sorted(values):
        return None
    return next(i for i in range(1, len(values)) if values[i] < values[i - 1])


def _first_not_increasing(values: list[int]) -> int | None:
    if values == sorted(values) and len(set(values)) == len(values):
        return None
    return next(i for i in range(1, len(values)) if values[i] <= values[i - 1])
