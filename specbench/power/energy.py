"""Energy of one device over a window: counter differences (wrap-corrected) and the power integral.

The hardware counter is the measurement; the trapezoid integral of the power trace is a
cross-check, and the measurement only where no trustworthy counter exists. A counter that goes
down is a wrap where the counter's range is known, else a reset: a reset is reported and the
window falls back to the integral, never summed over silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from specbench.power.base import Device, PowerValues

PLAUSIBLE_RATIO = (0.5, 2.0)
"""Counter over integral outside this range marks a verified counter (AMD) as implausible."""


@dataclass(frozen=True)
class CounterEvent:
    """A counter that went down between two readings: 'wrap' (corrected) or 'reset' (not usable)."""

    kind: str
    t_mono_s: float
    before_j: float
    after_j: float

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "t_mono_s": self.t_mono_s, "before_j": self.before_j, "after_j": self.after_j}


@dataclass(frozen=True)
class DeviceEnergy:
    """Energy of one device over one window, with its method and the cross-check behind it.

    method: 'counter' (hardware counter difference), 'integrated' (trapezoid of power samples)
    or 'not_measured' (energy_j is None). `cross_check_ratio` is counter / integral.
    """

    device: str
    scope: str
    duration_s: float
    energy_j: float | None
    method: str
    counter_energy_j: float | None
    integrated_energy_j: float | None
    cross_check_ratio: float | None
    samples: int
    counter_events: tuple[CounterEvent, ...] = ()
    note: str | None = None

    @property
    def mean_power_w(self) -> float | None:
        if self.energy_j is None or self.duration_s <= 0:
            return None
        return self.energy_j / self.duration_s

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "scope": self.scope,
            "duration_s": self.duration_s,
            "energy_j": self.energy_j,
            "method": self.method,
            "mean_power_w": self.mean_power_w,
            "counter_energy_j": self.counter_energy_j,
            "integrated_energy_j": self.integrated_energy_j,
            "cross_check_ratio": self.cross_check_ratio,
            "samples": self.samples,
            "counter_events": [e.to_dict() for e in self.counter_events],
            "note": self.note,
        }


class EnergyAccumulator:
    """Adds up one device's readings in time order: counter steps and trapezoids of power."""

    def __init__(self, device: Device) -> None:
        self.device = device
        self.samples = 0
        self.counter_j = 0.0
        self.counter_steps = 0
        self.integral_j = 0.0
        self.integral_steps = 0
        self.events: list[CounterEvent] = []
        self._last_t: float | None = None
        self._last_energy_j: float | None = None
        self._last_power_w: float | None = None

    def add(self, t_mono_s: float, values: PowerValues) -> None:
        power_w = values.power_instant_w if values.power_instant_w is not None else values.power_average_w
        if self._last_t is not None:
            dt = t_mono_s - self._last_t
            if power_w is not None and self._last_power_w is not None:
                self.integral_j += 0.5 * (power_w + self._last_power_w) * dt
                self.integral_steps += 1
            if values.energy_j is not None and self._last_energy_j is not None:
                self._add_counter_step(t_mono_s, self._last_energy_j, values.energy_j)
        self.samples += 1
        self._last_t = t_mono_s
        self._last_power_w = power_w
        if values.energy_j is not None:
            self._last_energy_j = values.energy_j

    def _add_counter_step(self, t_mono_s: float, before_j: float, after_j: float) -> None:
        step_j = after_j - before_j
        if step_j < 0:
            wrap_j = self.device.energy_range_j
            kind = "wrap" if wrap_j is not None else "reset"
            self.events.append(CounterEvent(kind, t_mono_s, before_j, after_j))
            if wrap_j is None:
                return
            step_j += wrap_j
        self.counter_j += step_j
        self.counter_steps += 1

    @property
    def has_reset(self) -> bool:
        return any(e.kind == "reset" for e in self.events)

    def result(self, duration_s: float) -> DeviceEnergy:
        counter_j = self.counter_j if self.counter_steps and not self.has_reset else None
        integral_j = self.integral_j if self.integral_steps else None
        ratio = counter_j / integral_j if counter_j is not None and integral_j else None
        distrust = self._counter_distrust(counter_j, integral_j, ratio)
        if counter_j is not None and distrust is None:
            energy_j, method, note = counter_j, "counter", None
        elif integral_j is not None:
            energy_j, method = integral_j, "integrated"
            note = distrust or (
                "no energy counter"
                if self.device.energy_counter is None
                else "the energy counter gave fewer than 2 readings in the window"
            )
        else:
            energy_j, method = None, "not_measured"
            note = distrust or self._why_not_measured()
        return DeviceEnergy(
            device=self.device.key,
            scope=self.device.scope,
            duration_s=duration_s,
            energy_j=energy_j,
            method=method,
            counter_energy_j=counter_j,
            integrated_energy_j=integral_j,
            cross_check_ratio=ratio,
            samples=self.samples,
            counter_events=tuple(self.events),
            note=note,
        )

    def _counter_distrust(self, counter_j: float | None, integral_j: float | None, ratio: float | None) -> str | None:
        if self.has_reset:
            first = next(e for e in self.events if e.kind == "reset")
            return (
                f"energy counter went down at t={first.t_mono_s:.3f} s "
                f"({first.before_j:.3f} J -> {first.after_j:.3f} J): counter reset, energy from the power integral"
            )
        if self.device.counter_problem:
            return self.device.counter_problem
        if not self.device.verify_counter or counter_j is None or integral_j is None or integral_j <= 0:
            return None
        low, high = PLAUSIBLE_RATIO
        if counter_j == 0:
            return f"energy counter did not advance while the power integral gave {integral_j:.1f} J (stuck counter)"
        if ratio is not None and not low <= ratio <= high:
            return (
                f"energy counter gave {counter_j:.1f} J against {integral_j:.1f} J integrated "
                f"(ratio {ratio:.2f}, plausible {low}-{high}): counter not trusted"
            )
        return None

    def _why_not_measured(self) -> str:
        if self.device.meter == "null" and self.device.notes:
            return "; ".join(self.device.notes)
        if self.samples < 2:
            return f"{self.samples} reading(s) in the window; at least 2 are needed"
        return "the meter gives neither an energy counter nor power for this device"
