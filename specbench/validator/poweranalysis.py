"""Checks of one readable trace against its run: each device's window, the devices, the clock, the bounds.

The window's energy is recomputed from power.csv with the power package's own rules (counter
differences, trapezoid of instant power, `EnergyAccumulator.result` to choose between them), so
the scorer gets the same numbers an executor's sampler reports.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from specbench.power.base import Device
from specbench.power.csvread import CsvTrace, Series
from specbench.power.energy import DeviceEnergy
from specbench.power.scopes import device_scopes
from specbench.spec.models import PowerRequirement
from specbench.spec.result import RunResult
from specbench.spec.system import SystemDescription
from specbench.validator.documents import Loaded
from specbench.validator.findings import Findings
from specbench.validator.model import PowerData, SeriesFacts
from specbench.validator.powermeta import TraceMeta, power_files
from specbench.validator.powerwindow import DeviceWindow
from specbench.validator.values import is_number

LIMIT_MARGIN = 0.10
IDLE_MARGIN = 0.10
CLOCK_MARGIN = 0.2
"""A sampler's median step may be this much shorter than its period (it never runs ahead by design)."""
FINGERPRINT_MIN_SAMPLES = 8
"""Fewer readings than this could repeat by chance (a constant idle reading); more never do in real runs."""


def result_location(result_file: Loaded | None, folder: str, *path: str) -> dict[str, Any]:
    """Where a finding about result.json points: the file, and the line of `path` when it was read."""
    if result_file is None:
        return {"file": f"{folder}/result.json"}
    return {"file": result_file.file, **result_file.locate(*path)}


@dataclass(frozen=True)
class TraceAnalysis:
    """One run's claimed power (result.json) and readable trace, checked over its timed window."""

    findings: Findings
    folder: str
    requirement: PowerRequirement
    result: RunResult
    result_file: Loaded | None
    system: SystemDescription | None
    start_s: float
    stop_s: float

    @property
    def csv_rel(self) -> str:
        return power_files(self.folder)[0]

    @property
    def json_rel(self) -> str:
        return power_files(self.folder)[1]

    def add(self, code: str, file: str, message: str, **where: Any) -> None:
        self.findings.add(code, file, message, **where)

    def result_at(self, *path: str) -> dict[str, Any]:
        return result_location(self.result_file, self.folder, *path)

    def analyse(self, meta: TraceMeta, trace: CsvTrace) -> PowerData:
        """Every device's window energy, then the checks across devices; the run's power as recomputed."""
        requirement = self.requirement
        period_s = 1.0 / requirement.min_sampling_hz
        wanted = device_scopes(requirement.scope, (d.scope for d in meta.devices))
        energies: list[DeviceEnergy] = []
        achieved: dict[str, float] = {}
        edges: list[tuple[float, float]] = []
        unusable = False
        for device in meta.devices:
            series = trace.series.get(device.key)
            if device.scope == "none":
                continue
            if series is None or not series.measured:
                if device.scope in wanted:
                    unusable = True
                    self.add(
                        "SB-PWR-010",
                        self.csv_rel,
                        f"expected samples of device {device.key!r} (power.json lists it), found none",
                    )
                continue
            window = DeviceWindow(
                self.findings, self.csv_rel, trace, device, series, self.start_s, self.stop_s, period_s, requirement
            )
            energy = window.check()
            if energy is not None:
                energies.append(energy)
                achieved[device.key] = window.achieved_hz
                edges.append(window.edges)
            elif device.scope in wanted:
                unusable = True
        self.check_devices(meta, energies, wanted)
        self.check_clock(meta, trace)
        power = _power_data(requirement.scope, wanted, energies, achieved, edges, unusable)
        power.host = meta.host
        power.series = [_facts(d, trace.series[d.key]) for d in meta.devices if d.key in trace.series]
        self.check_bounds(meta, [e for e in energies if e.scope in wanted])
        return power

    def check_clock(self, meta: TraceMeta, trace: CsvTrace) -> None:
        """A fixed-period sampler's readings cannot come faster than its period: a compressed trace does."""
        if meta.requested_period_s is None:
            return
        for key, series in trace.series.items():
            steps = sorted(b - a for a, b in pairwise(series.t_mono_s) if b > a)
            if len(steps) < FINGERPRINT_MIN_SAMPLES:
                continue
            median = steps[len(steps) // 2]
            if median < meta.requested_period_s * (1 - CLOCK_MARGIN):
                self.add(
                    "SB-PRV-004",
                    self.csv_rel,
                    f"expected {key}'s readings about every {meta.requested_period_s:g} s (power.json sampling "
                    f"requested_period_s), found a median step of {median:.4f} s",
                )
                return

    def check_devices(self, meta: TraceMeta, energies: list[DeviceEnergy], wanted: tuple[str, ...]) -> None:
        """The scope matches the spec's, and the trace's devices match result.json's."""
        result, scope, required_scope = self.result, self.result.power.scope, self.requirement.scope
        if scope != required_scope:
            self.add(
                "SB-PWR-011",
                message=f"expected power scope {required_scope!r} (the spec's), found {scope!r}",
                **self.result_at("power", "scope"),
            )
        in_scope = [d for d in meta.devices if d.scope in wanted]
        if not [e for e in energies if e.scope in wanted]:
            found = sorted({d.scope for d in meta.devices})
            self.add(
                "SB-PWR-011",
                self.json_rel,
                f"expected devices of scope {', '.join(wanted) or required_scope!r}, found scopes {found}",
                **meta.loaded.locate("meters"),
            )
        self.check_listed(meta, in_scope)
        single_node = self.system is None or self.system.nodes == 1
        if (
            required_scope == "accelerator"
            and result.device_kind != "cpu"
            and single_node
            and len(in_scope) != result.devices
        ):
            self.add(
                "SB-PWR-010",
                self.json_rel,
                f"expected {result.devices} accelerator(s) in the trace (result.json devices), found {len(in_scope)}",
                **meta.loaded.locate("meters"),
            )

    def check_listed(self, meta: TraceMeta, in_scope: list[Device]) -> None:
        """result.json's power.devices names the trace's devices, and every measured one of the scope."""
        known = {d.identity for d in meta.devices} | {d.key for d in meta.devices}
        for name in self.result.power.devices:
            if name not in known:
                self.add(
                    "SB-PWR-010",
                    message=f"expected a device of the trace, found {name!r}, which power.json does not list",
                    **self.result_at("power", "devices"),
                )
        listed = set(self.result.power.devices)
        for device in in_scope:
            if device.identity not in listed and device.key not in listed:
                self.add(
                    "SB-PWR-010",
                    message=f"expected measured device {device.identity!r} in power.devices, found it missing",
                    **self.result_at("power", "devices"),
                )

    def check_bounds(self, meta: TraceMeta, energies: list[DeviceEnergy]) -> None:
        """Each device's mean power is positive, within its enforced limit and above the declared idle."""
        idle = self.system.declared.get("idle_power_w") if self.system else None
        for energy in energies:
            mean = energy.mean_power_w
            if mean is None:
                continue
            limit = meta.power_limit_w.get(energy.device)
            if mean <= 0:
                self.add(
                    "SB-PWR-009",
                    self.csv_rel,
                    f"expected a positive mean power for {energy.device}, found {mean:.3f} W",
                )
            elif limit is not None and mean > limit * (1 + LIMIT_MARGIN):
                self.add(
                    "SB-PWR-009",
                    self.csv_rel,
                    f"expected mean power of {energy.device} at most {limit * (1 + LIMIT_MARGIN):.1f} W "
                    f"(enforced limit {limit:g} W + {LIMIT_MARGIN:.0%}), found {mean:.1f} W",
                )
            elif is_number(idle) and mean < idle * (1 - IDLE_MARGIN):
                self.add(
                    "SB-PWR-009",
                    self.csv_rel,
                    f"expected mean power of {energy.device} at least {idle * (1 - IDLE_MARGIN):.1f} W "
                    f"(declared idle {idle:g} W - {IDLE_MARGIN:.0%}), found {mean:.1f} W",
                )


def _facts(device: Device, series: Series) -> SeriesFacts:
    """The identity and fingerprint of one device's series (power readings; counter steps where there are none)."""
    readings = [v for v in series.power_instant_w if v is not None] or [
        v for v in series.power_average_w if v is not None
    ]
    counters = [v for v in series.energy_counter_j if v is not None]
    if not readings and len(counters) > 1:
        readings = [b - a for a, b in pairwise(counters)]
    fingerprint = hash(tuple(readings)) if len(set(readings)) >= FINGERPRINT_MIN_SAMPLES else None
    return SeriesFacts(
        device=device.key,
        identity=device.identity,
        meter=device.meter,
        model=device.model,
        scope=device.scope,
        fingerprint=fingerprint,
        first_counter_j=counters[0] if counters else None,
        last_counter_j=counters[-1] if counters else None,
        first_wall_s=series.t_wall_s[0] if series.t_wall_s else None,
        last_wall_s=series.t_wall_s[-1] if series.t_wall_s else None,
        cumulative=device.energy_counter is not None and device.energy_range_j is None and not device.counter_problem,
    )


def _power_data(
    scope: str,
    wanted: tuple[str, ...],
    energies: list[DeviceEnergy],
    achieved: dict[str, float],
    edges: list[tuple[float, float]],
    unusable: bool,
) -> PowerData:
    """The run's window energy; None when any device of the scope is missing, unusable or not measured."""
    members = [e for e in energies if e.scope in wanted]
    total = math.fsum(e.energy_j for e in members if e.energy_j is not None) if members else None
    if unusable or any(e.energy_j is None for e in members):
        total = None
    methods = {e.method for e in members}
    method = methods.pop() if len(methods) == 1 else ("mixed" if methods else None)
    duration = max((e.duration_s for e in members), default=0.0)
    return PowerData(
        scope=scope,
        device_scopes=wanted,
        devices=energies,
        energy_j=total,
        duration_s=duration,
        method=method,
        window_start_wall_s=min((s for s, _ in edges), default=None),
        window_stop_wall_s=max((e for _, e in edges), default=None),
        achieved_hz=achieved,
    )
