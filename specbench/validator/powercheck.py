"""Power checks of every run: the trace is there when claimed, readable, and holds up over the window.

Each run is checked from its own power files only (`PowerTask`), so runs can be checked in
parallel processes and their findings folded back in the runs' order; `check_power` returns each
run's energy over its window (`PowerData`) for the caller to keep on the run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specbench.spec.models import PowerRequirement
from specbench.spec.result import RunResult
from specbench.spec.system import SystemDescription
from specbench.validator.context import Context, SpecIndex
from specbench.validator.documents import Loaded
from specbench.validator.evidence import SystemDevices
from specbench.validator.files import FileEntry, Limits, Tree
from specbench.validator.findings import Finding, Findings
from specbench.validator.model import PowerChart, PowerData, RunData
from specbench.validator.origin import TraceOrigin, check_origins, system_hostnames
from specbench.validator.poweranalysis import TraceAnalysis, result_location
from specbench.validator.powerchart import chart_of
from specbench.validator.powermeta import power_files, read_metadata, read_samples


@dataclass(frozen=True)
class TraceReading:
    """What one run's power files show: where the trace was taken, and the energy over the run's window."""

    origin: TraceOrigin | None = None
    power: PowerData | None = None
    chart: PowerChart | None = None


@dataclass
class PowerCheck:
    ctx: Context
    folder: str
    run_start_ms: float | None
    run_stop_ms: float | None
    requirement: PowerRequirement | None
    result: RunResult | None
    result_file: Loaded | None
    system: SystemDescription | None

    def add(self, code: str, file: str, message: str, **where: Any) -> None:
        self.ctx.findings.add(code, file, message, **where)

    def run_all(self) -> TraceReading:
        """Check the claim against the files, then read them, then analyse the trace over the window.

        Returns where the trace was taken (its hosts and devices) when power.json could be read, and
        the energy over the window when the trace holds up.
        """
        tree, findings = self.ctx.tree, self.ctx.findings
        csv_rel, json_rel = power_files(self.folder)
        has_csv, has_json = tree.has(csv_rel), tree.has(json_rel)
        claimed = self.result is not None and self.result.power.measured
        required = self.requirement is not None and self.requirement.required
        if required and self.result is not None and not claimed:
            reason = self.result.power.reason or "no reason given"
            self.add(
                "SB-PWR-001",
                message=f"expected measured power (the spec requires it at this profile), found not measured: {reason}",
                **result_location(self.result_file, self.folder, "power", "measured"),
            )
        if not has_csv and not has_json:
            if claimed:
                self.add(
                    "SB-PWR-001",
                    message="expected power.csv and power.json (result.json says measured), found none",
                    **result_location(self.result_file, self.folder, "power", "measured"),
                )
            return TraceReading()
        for rel, present in ((csv_rel, has_csv), (json_rel, has_json)):
            if not present and rel not in tree.refused:
                self.add("SB-STR-002", rel, "expected power.csv and power.json together, found only one of them")
        if not (has_csv and has_json):
            return TraceReading()
        meta = read_metadata(tree, json_rel, findings, SystemDevices.of(self.system).model)
        if meta is None:
            return TraceReading()
        trace = read_samples(tree, csv_rel, meta, findings)
        if trace is None:
            return TraceReading(meta.origin)
        chart = chart_of(trace)
        if not claimed or self.requirement is None or self.result is None:
            return TraceReading(meta.origin, chart=chart)
        if self.run_start_ms is None or self.run_stop_ms is None:
            return TraceReading(meta.origin, chart=chart)
        analysis = TraceAnalysis(
            findings,
            self.folder,
            self.requirement,
            self.result,
            self.result_file,
            self.system,
            self.run_start_ms / 1000.0,
            self.run_stop_ms / 1000.0,
        )
        return TraceReading(meta.origin, analysis.analyse(meta, trace), chart)


@dataclass
class PowerTask:
    """What one run's power check needs, picklable, so that runs can be checked in parallel processes."""

    root: Path
    limits: Limits
    files: dict[str, FileEntry]
    refused: set[str]
    folder: str
    run_start_ms: float | None
    run_stop_ms: float | None
    requirement: PowerRequirement | None
    result: RunResult | None
    result_file: Loaded | None
    system: SystemDescription | None
    retain: frozenset[str] = frozenset()


@dataclass
class PowerOutcome:
    findings: list[Finding]
    power: PowerData | None
    digests: dict[str, tuple[str, int]]
    oversize: set[str]
    origin: TraceOrigin | None = None
    chart: PowerChart | None = None
    retained: dict[str, bytes] = field(default_factory=dict)


def power_task(
    ctx: Context, run: RunData, requirement: PowerRequirement | None, system: SystemDescription | None
) -> PowerTask:
    names = power_files(run.folder)
    return PowerTask(
        root=ctx.tree.root,
        limits=ctx.limits,
        files={n: ctx.tree.files[n] for n in names if n in ctx.tree.files},
        refused={n for n in names if n in ctx.tree.refused},
        folder=run.folder,
        run_start_ms=run.run_start_ms,
        run_stop_ms=run.run_stop_ms,
        requirement=requirement,
        result=run.result,
        result_file=ctx.loaded.get(f"{run.folder}/result.json"),
        system=system,
        retain=ctx.tree.retain,
    )


def run_power_task(task: PowerTask) -> PowerOutcome:
    """Check one run's trace with its own findings, reading only the run's power files."""
    findings = Findings()
    tree = Tree(task.root, task.limits, findings, files=dict(task.files), refused=set(task.refused), retain=task.retain)
    ctx = Context(tree, findings, task.limits, SpecIndex())
    check = PowerCheck(
        ctx,
        folder=task.folder,
        run_start_ms=task.run_start_ms,
        run_stop_ms=task.run_stop_ms,
        requirement=task.requirement,
        result=task.result,
        result_file=task.result_file,
        system=task.system,
    )
    reading = check.run_all()
    return PowerOutcome(
        findings.items, reading.power, tree.digests, tree.oversize, reading.origin, reading.chart, tree.retained
    )


def check_power(
    ctx: Context, runs: list[RunData], tasks: list[PowerTask], jobs: int = 1
) -> list[tuple[PowerData | None, PowerChart | None]]:
    """Run every run's power check, in up to `jobs` processes; fold the findings and files read into `ctx`.

    Then the runs' origins are compared: every run of a benchmark traced on its first run's devices and
    hosts, and those on system.yaml's hosts. Returns each run's energy over its window and the readings its page
    draws, in the runs' order.
    """
    busy = [t for t in tasks if t.files]
    if jobs > 1 and len(busy) > 1:
        from concurrent.futures import ProcessPoolExecutor  # here: multiprocessing is slow to import

        with ProcessPoolExecutor(max_workers=min(jobs, len(busy))) as pool:
            done = dict(zip((id(t) for t in busy), pool.map(run_power_task, busy), strict=True))
        outcomes = [done[id(t)] if id(t) in done else run_power_task(t) for t in tasks]
    else:
        outcomes = [run_power_task(t) for t in tasks]
    for outcome in outcomes:
        ctx.findings.items.extend(outcome.findings)
        ctx.tree.digests.update(outcome.digests)
        ctx.tree.oversize.update(outcome.oversize)
        ctx.tree.retained.update(outcome.retained)
    system = tasks[0].system if tasks else None
    check_origins(ctx.findings, runs, [o.origin for o in outcomes], system_hostnames(system))
    return [(o.power, o.chart) for o in outcomes]
