"""Power windows around the micro-benchmarks: one kernel back to back for `hold_s`, energy from the meters.

The window opens and closes after a device synchronize, so the counter difference covers exactly
the launches inside it. Where no meter measures the device's scope, the result says "not measured"
and why, never zero.
"""

from __future__ import annotations

import math
import time
from typing import Any

from specbench.roofline.format import PowerMeasure
from specbench.roofline.timing import Kernel, Timer


def scope_for(device_type: str) -> str:
    """The power scope that belongs to the device benchmarked: the accelerator board, or the CPU package."""
    return "accelerator" if device_type == "cuda" else "cpu_package"


class PowerWindows:
    """Opens meters once and measures one window per ceiling; `reason` is set when nothing here can measure."""

    def __init__(self, meters: list[Any], scope: str, hold_s: float, interval_s: float) -> None:
        from specbench.power import NullMeter, PowerSampler

        self.scope = scope
        self.hold_s = hold_s
        real = [m for m in meters if not isinstance(m, NullMeter)]
        scoped = [d.key for m in real for d in m.devices if d.scope == scope]
        self.reason: str | None = None
        if hold_s <= 0:
            self.reason = "not measured: power windows switched off (hold 0 s)"
        elif not real:
            reasons = "; ".join(getattr(m, "reason", "") for m in meters) or "no meter was opened"
            self.reason = f"not measured: {reasons}"
        elif not scoped:
            seen = sorted({d.scope for m in real for d in m.devices})
            self.reason = f"not measured: no meter here measures scope {scope!r} (seen: {', '.join(seen)})"
        self.sampler = PowerSampler(real, interval_s=interval_s) if self.reason is None else None
        self.meters = sorted({m.kind for m in real})

    def __enter__(self) -> PowerWindows:
        if self.sampler is not None:
            self.sampler.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.sampler is not None:
            self.sampler.stop()

    def not_measured(self, reason: str | None = None) -> PowerMeasure:
        return PowerMeasure(measured=False, reason=reason or self.reason, scope=self.scope)

    def measure(self, timer: Timer, kernel: Kernel, time_per_call_s: float, work_per_call: float) -> PowerMeasure:
        """Run `kernel` for about `hold_s` inside a window; energy, mean power and work per joule."""
        if self.sampler is None:
            return self.not_measured()
        chunk = max(1, math.ceil(self.hold_s / max(time_per_call_s, 1e-9) / 4))
        kernel(0)
        timer.sync()
        self.sampler.window_start()
        started, calls = time.monotonic(), 0
        while True:  # in chunks until the window has lasted hold_s, however fast or slow the calls run now
            for _ in range(chunk):
                kernel(calls)
                calls += 1
            timer.sync()
            if time.monotonic() - started >= self.hold_s:
                break
        window = self.sampler.window_stop()
        return self._from_window(window, calls * work_per_call)

    def _from_window(self, window: Any, work: float) -> PowerMeasure:
        devices = [e for e in window.devices if e.scope == self.scope]
        energy = window.energy_j(self.scope)
        duration = window.duration_s
        methods = sorted({e.method for e in devices})
        common = {"scope": self.scope, "devices": [e.device for e in devices], "duration_s": duration, "work": work}
        if energy is None or energy <= 0:
            notes = "; ".join(f"{e.device}: {e.note or e.method}" for e in devices if e.energy_j is None)
            why = notes or f"the window of {duration:.3f} s read no energy"
            return PowerMeasure(measured=False, reason=f"not measured: {why}", **common)
        return PowerMeasure(
            measured=True,
            method=methods[0] if len(methods) == 1 else "mixed",
            energy_j=energy,
            mean_power_w=energy / duration if duration > 0 else None,
            work_per_s=work / duration if duration > 0 else None,
            work_per_j=work / energy,
            **common,
        )
