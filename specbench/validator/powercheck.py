"""Power checks of one run: the trace covers the timed window, is dense enough, and its energy holds up.

The window's energy is recomputed from power.csv with the power package's own rules (counter
differences, trapezoid of instant power, `EnergyAccumulator.result` to choose between them), so
the scorer gets the same numbers an executor's sampler reports.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

from specbench.power.base import Device, PowerError
from specbench.power.energy import DeviceEnergy
from specbench.power.scopes import device_scopes
from specbench.power.trace import COLUMNS, CSV_NAME, FORMAT, FORMAT_VERSION
from specbench.spec.models import PowerRequirement
from specbench.spec.result import RunResult
from specbench.spec.system import SystemDescription
from specbench.validator.context import Context, SpecIndex
from specbench.validator.documents import Loaded, check_mapping, check_version, decode, load_json
from specbench.validator.files import FileEntry, Limits, Tree
from specbench.validator.findings import Finding, Findings
from specbench.validator.model import PowerData, RunData, SeriesFacts
from specbench.validator.powerwindow import DeviceWindow
from specbench.validator.tracefile import CsvTrace, Series, read_csv
from specbench.validator.values import is_number

LIMIT_MARGIN = 0.10
IDLE_MARGIN = 0.10


@dataclass
class TraceMeta:
    devices: list[Device]
    power_limit_w: dict[str, float]
    loaded: Loaded
    host: str | None = None
    requested_period_s: float | None = None


CLOCK_MARGIN = 0.2
"""A sampler's median step may be this much shorter than its period (it never runs ahead by design)."""
FINGERPRINT_MIN_SAMPLES = 8
"""Fewer readings than this could repeat by chance (a constant idle reading); more never do in real runs."""


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


@dataclass
class PowerCheck:
    ctx: Context
    run: RunData
    folder: str
    requirement: PowerRequirement | None
    result: RunResult | None
    result_file: Loaded | None
    system: SystemDescription | None

    @property
    def csv_rel(self) -> str:
        return f"{self.folder}/{CSV_NAME}"

    @property
    def json_rel(self) -> str:
        return f"{self.folder}/power.json"

    def add(self, code: str, file: str, message: str, **where: Any) -> None:
        self.ctx.findings.add(code, file, message, **where)

    def result_at(self, *path: str) -> dict[str, Any]:
        if self.result_file is None:
            return {"file": f"{self.folder}/result.json"}
        return {"file": self.result_file.file, **self.result_file.locate(*path)}

    def run_all(self) -> None:
        tree = self.ctx.tree
        has_csv, has_json = tree.has(self.csv_rel), tree.has(self.json_rel)
        claimed = self.result is not None and self.result.power.measured
        required = self.requirement is not None and self.requirement.required
        if required and self.result is not None and not claimed:
            reason = self.result.power.reason or "no reason given"
            self.add(
                "SB-PWR-001",
                message=f"expected measured power (the spec requires it at this profile), found not measured: {reason}",
                **self.result_at("power", "measured"),
            )
        if not has_csv and not has_json:
            if claimed:
                self.add(
                    "SB-PWR-001",
                    message="expected power.csv and power.json (result.json says measured), found none",
                    **self.result_at("power", "measured"),
                )
            return
        for rel, present in ((self.csv_rel, has_csv), (self.json_rel, has_json)):
            if not present and rel not in tree.refused:
                self.add("SB-STR-002", rel, "expected power.csv and power.json together, found only one of them")
        if not (has_csv and has_json):
            return
        meta = self.read_metadata()
        if meta is None:
            return
        trace = self.read_samples(meta)
        if trace is None or not claimed or self.requirement is None:
            return
        if self.run.run_start_ms is None or self.run.run_stop_ms is None:
            return
        self.analyse(meta, trace, self.requirement)

    # reading

    def read_metadata(self) -> TraceMeta | None:
        findings = self.ctx.findings
        loaded = load_json(self.ctx.tree, self.json_rel, findings)
        if loaded is None or not check_mapping(loaded, findings):
            return None
        data = loaded.data
        if data.get("format") != FORMAT:
            self.add(
                "SB-PWR-002",
                loaded.file,
                f"expected format {FORMAT!r}, found {data.get('format')!r}",
                **loaded.locate("format"),
            )
            return None
        if not check_version(loaded, FORMAT_VERSION, findings):
            return None
        ok = True
        if data.get("csv", CSV_NAME) != CSV_NAME:
            self.add(
                "SB-PWR-002",
                loaded.file,
                f"expected csv {CSV_NAME!r}, found {data.get('csv')!r}",
                **loaded.locate("csv"),
            )
            ok = False
        if "columns" in data and data["columns"] != list(COLUMNS):
            self.add(
                "SB-PWR-002",
                loaded.file,
                f"expected columns {list(COLUMNS)}, found {data['columns']!r}",
                **loaded.locate("columns"),
            )
            ok = False
        devices = self.read_devices(loaded)
        if devices is None or not ok:
            return None
        host = data.get("host")
        sampling = data.get("sampling")
        period = sampling.get("requested_period_s") if isinstance(sampling, dict) else None
        return TraceMeta(
            devices,
            _power_limits(data),
            loaded,
            host if isinstance(host, str) else None,
            float(period) if is_number(period) and period > 0 else None,
        )

    def read_devices(self, loaded: Loaded) -> list[Device] | None:
        meters = loaded.data.get("meters")
        if not isinstance(meters, list) or not meters:
            self.add(
                "SB-PWR-002",
                loaded.file,
                f"expected a non-empty list of meters, found {type(meters).__name__}",
                **loaded.locate("meters"),
            )
            return None
        devices: list[Device] = []
        for i, meter in enumerate(meters):
            entries = meter.get("devices") if isinstance(meter, dict) else None
            if not isinstance(entries, list):
                self.add(
                    "SB-PWR-002",
                    loaded.file,
                    "expected each meter to list its devices, found none",
                    **loaded.locate("meters", i),
                )
                return None
            for j, entry in enumerate(entries):
                try:
                    if not isinstance(entry, dict):
                        raise PowerError(f"expected a device object, found {type(entry).__name__}")
                    devices.append(Device.from_dict(entry))
                except (PowerError, TypeError, ValueError) as err:
                    self.add(
                        "SB-PWR-002",
                        loaded.file,
                        f"expected a device entry, found: {err}",
                        **loaded.locate("meters", i, "devices", j),
                    )
                    return None
        self.check_unique(devices, loaded)
        return devices

    def check_unique(self, devices: list[Device], loaded: Loaded) -> None:
        seen_keys: set[str] = set()
        seen_ids: set[str] = set()
        for device in devices:
            for value, seen, what in (
                (device.key, seen_keys, "key"),
                (device.uuid or device.pci_bus_id, seen_ids, "identity"),
            ):
                if value is None:
                    continue
                if value in seen:
                    self.add(
                        "SB-PWR-010",
                        loaded.file,
                        f"expected each device once, found {what} {value!r} twice",
                        **loaded.locate("meters"),
                    )
                seen.add(value)

    def read_samples(self, meta: TraceMeta) -> CsvTrace | None:
        raw = self.ctx.tree.read(self.csv_rel)
        if raw is None:
            return None
        text = decode(raw, self.csv_rel, self.ctx.findings)
        if text is None:
            return None
        trace = read_csv(text, [d.key for d in meta.devices])
        for line, message in trace.problems:
            self.add("SB-PWR-002", self.csv_rel, message, line=line)
        return trace

    # analysis

    def analyse(self, meta: TraceMeta, trace: CsvTrace, requirement: PowerRequirement) -> None:
        assert self.run.run_start_ms is not None and self.run.run_stop_ms is not None
        start_s, stop_s = self.run.run_start_ms / 1000.0, self.run.run_stop_ms / 1000.0
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
                self.ctx.findings, self.csv_rel, trace, device, series, start_s, stop_s, period_s, requirement
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
        self.run.power = _power_data(requirement.scope, wanted, energies, achieved, edges, unusable)
        self.run.power.host = meta.host
        self.run.power.series = [_facts(d, trace.series[d.key]) for d in meta.devices if d.key in trace.series]
        self.check_bounds(meta, [e for e in energies if e.scope in wanted])

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
        assert self.result is not None
        result, scope = self.result, self.result.power.scope
        required_scope = self.requirement.scope if self.requirement else None
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
        known = {d.identity for d in meta.devices} | {d.key for d in meta.devices}
        for name in result.power.devices:
            if name not in known:
                self.add(
                    "SB-PWR-010",
                    message=f"expected a device of the trace, found {name!r}, which power.json does not list",
                    **self.result_at("power", "devices"),
                )
        listed = set(result.power.devices)
        for device in in_scope:
            if device.identity not in listed and device.key not in listed:
                self.add(
                    "SB-PWR-010",
                    message=f"expected measured device {device.identity!r} in power.devices, found it missing",
                    **self.result_at("power", "devices"),
                )
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

    def check_bounds(self, meta: TraceMeta, energies: list[DeviceEnergy]) -> None:
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


def _power_limits(data: dict[str, Any]) -> dict[str, float]:
    limits: dict[str, float] = {}
    for name in ("state_start", "state_end"):
        states = data.get(name)
        if not isinstance(states, dict):
            continue
        for key, state in states.items():
            limit = state.get("power_limit_w") if isinstance(state, dict) else None
            if is_number(limit) and limit > 0:
                limits[key] = max(limits.get(key, 0.0), float(limit))
    return limits


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


@dataclass
class PowerTask:
    """What one run's power check needs, picklable, so that runs can be checked in parallel processes."""

    root: Path
    limits: Limits
    files: dict[str, FileEntry]
    refused: set[str]
    run: RunData
    requirement: PowerRequirement | None
    result: RunResult | None
    result_file: Loaded | None
    system: SystemDescription | None


@dataclass
class PowerOutcome:
    findings: list[Finding]
    power: PowerData | None
    digests: dict[str, tuple[str, int]]
    oversize: set[str]


def power_task(
    ctx: Context, run: RunData, requirement: PowerRequirement | None, system: SystemDescription | None
) -> PowerTask:
    names = (f"{run.folder}/{CSV_NAME}", f"{run.folder}/power.json")
    light = RunData(run.name, run.number, run.folder, run_start_ms=run.run_start_ms, run_stop_ms=run.run_stop_ms)
    return PowerTask(
        root=ctx.tree.root,
        limits=ctx.limits,
        files={n: ctx.tree.files[n] for n in names if n in ctx.tree.files},
        refused={n for n in names if n in ctx.tree.refused},
        run=light,
        requirement=requirement,
        result=run.result,
        result_file=ctx.loaded.get(f"{run.folder}/result.json"),
        system=system,
    )


def run_power_task(task: PowerTask) -> PowerOutcome:
    """Check one run's trace with its own findings, reading only the run's power files."""
    findings = Findings()
    tree = Tree(task.root, task.limits, findings, files=dict(task.files), refused=set(task.refused))
    ctx = Context(tree, findings, task.limits, SpecIndex())
    PowerCheck(ctx, task.run, task.run.folder, task.requirement, task.result, task.result_file, task.system).run_all()
    return PowerOutcome(findings.items, task.run.power, tree.digests, tree.oversize)


def check_power(ctx: Context, runs: list[RunData], tasks: list[PowerTask], jobs: int = 1) -> None:
    """Run every run's power check, in up to `jobs` processes, and fold the outcomes into `ctx` and the runs."""
    busy = [t for t in tasks if t.files]
    if jobs > 1 and len(busy) > 1:
        from concurrent.futures import ProcessPoolExecutor  # here: multiprocessing is slow to import

        with ProcessPoolExecutor(max_workers=min(jobs, len(busy))) as pool:
            done = dict(zip((id(t) for t in busy), pool.map(run_power_task, busy), strict=True))
        outcomes = [done[id(t)] if id(t) in done else run_power_task(t) for t in tasks]
    else:
        outcomes = [run_power_task(t) for t in tasks]
    for run, outcome in zip(runs, outcomes, strict=True):
        run.power = outcome.power
        ctx.findings.items.extend(outcome.findings)
        ctx.tree.digests.update(outcome.digests)
        ctx.tree.oversize.update(outcome.oversize)
