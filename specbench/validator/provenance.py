"""Where the evidence comes from: hardware meters only, every declared accelerator measured, no copies.

Checks across the runs, devices and nodes of one submission: a power series or log that is a copy of
another, an energy counter that goes back between the runs of one session, a meter that is no
hardware, an accelerator system.yaml declares that the trace does not measure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise

from specbench.spec.yamlio import format_path
from specbench.validator.evidence import SystemDevices
from specbench.validator.findings import Findings
from specbench.validator.model import BenchmarkData, RunData, SeriesFacts

HARDWARE_METERS = frozenset({"nvml", "amdsmi", "rapl", "hwmon", "mlperf"})
"""Meters that read hardware (the MLPerf importer's node power logs come from the submitters' meters)."""
ACCELERATOR_METERS = frozenset({"nvml", "amdsmi"})
SESSION_GAP_S = 6 * 3600.0
"""Runs less than this apart on one host belong to one session: a device's energy counter cannot reset between them."""
COUNTER_SLACK_J = 1.0


@dataclass
class Provenance:
    findings: Findings
    devices: SystemDevices

    def power_file(self, run: RunData) -> str:
        return f"{run.folder}/power.csv"

    def check_meters(self, run: RunData) -> None:
        power = run.power
        if power is None or power.energy_j is None:
            return
        wanted = [s for s in power.series if s.scope in power.device_scopes]
        other = sorted({s.meter for s in wanted if s.meter not in HARDWARE_METERS})
        if other:
            self.findings.add(
                "SB-PRV-001",
                f"{run.folder}/power.json",
                f"expected power from hardware meters ({', '.join(sorted(HARDWARE_METERS))}), found {', '.join(other)}; "
                "the run is not ranked per watt",
            )
            power.energy_j = None

    def check_accelerators(self, run: RunData) -> None:
        power, declared = run.power, self.devices.accelerators
        if power is None or not declared or self.devices.nodes != 1 or "accelerator" not in power.device_scopes:
            return
        listed = [s for s in power.series if s.scope == "accelerator" or s.meter in ACCELERATOR_METERS]
        measured = [
            s for s in power.series if s.scope == "accelerator" and any(e.device == s.device for e in power.devices)
        ]
        claimed = self.devices.model
        for facts in listed:
            if claimed is not None and facts.model is not None and facts.model != claimed:
                self.findings.add(
                    "SB-ACC-002",
                    f"{run.folder}/power.json",
                    f"expected accelerator model {claimed!r} (system.yaml accelerator_model) for {facts.device}, "
                    f"found {facts.model!r} (the driver's name in the trace)",
                )
                break
        if len(listed) > declared:
            self.findings.add(
                "SB-ACC-002",
                f"{run.folder}/power.json",
                f"expected {declared} accelerator(s) (system.yaml accelerator_count), found {len(listed)} in the trace: "
                f"{', '.join(s.device for s in listed)}",
            )
        if power.energy_j is not None and len(measured) < declared:
            self.findings.add(
                "SB-ACC-005",
                self.power_file(run),
                f"expected a power series for each of the {declared} declared accelerator(s), found {len(measured)}",
            )
            power.energy_j = None


def _series(runs: Iterable[RunData]) -> list[tuple[RunData, SeriesFacts]]:
    return [(run, facts) for run in runs if run.power is not None for facts in run.power.series]


def check_copies(
    findings: Findings,
    runs: list[RunData],
    digests: dict[str, tuple[str, int]],
    concurrent: frozenset[str] = frozenset(),
) -> None:
    """Byte-identical logs, runs that start at the same instant, power series with identical readings.

    Runs whose folder is in `concurrent` (model instances of an MLPerf HPC weak-scaling result, trained at
    once) may start at the same instant; a copy among them is still one.
    """
    seen_logs: dict[str, RunData] = {}
    starts: dict[float, RunData] = {}
    for run in runs:
        log = f"{run.folder}/log.txt"
        digest = digests.get(log)
        if digest is not None and digest[0] in seen_logs:
            first = seen_logs[digest[0]]
            findings.add(
                "SB-PRV-002", log, f"expected a log of its own, found a byte-identical copy of {first.folder}/log.txt"
            )
        elif digest is not None:
            seen_logs[digest[0]] = run
        if run.run_start_ms is None or run.folder in concurrent:
            continue
        if run.run_start_ms in starts:
            first = starts[run.run_start_ms]
            findings.add(
                "SB-PRV-002",
                log,
                f"expected runs one after another, found run_start at the same time_ms {run.run_start_ms:.0f} as "
                f"{first.folder}",
            )
        else:
            starts[run.run_start_ms] = run
    prints: dict[int, tuple[RunData, SeriesFacts]] = {}
    for run, facts in _series(runs):
        if facts.fingerprint is None:
            continue
        earlier = prints.get(facts.fingerprint)
        if earlier is None:
            prints[facts.fingerprint] = (run, facts)
            continue
        other_run, other = earlier
        findings.add(
            "SB-PRV-002",
            f"{run.folder}/power.csv",
            f"expected readings of its own for {facts.device}, found the same power readings as {other.device} "
            f"in {other_run.folder}/power.csv",
        )


def check_counters(findings: Findings, runs: list[RunData]) -> None:
    """A device's cumulative energy counter never goes back from one run to the next of one session."""
    by_device: dict[tuple[str | None, str], list[tuple[RunData, SeriesFacts]]] = {}
    for run, facts in _series(runs):
        if facts.cumulative and facts.first_counter_j is not None and facts.first_wall_s is not None:
            by_device.setdefault((run.power.host if run.power else None, facts.identity), []).append((run, facts))
    for entries in by_device.values():
        entries.sort(key=lambda item: item[1].first_wall_s or 0.0)
        for (prev_run, prev), (run, facts) in pairwise(entries):
            if prev.last_wall_s is None or prev.last_counter_j is None or facts.first_counter_j is None:
                continue
            gap = (facts.first_wall_s or 0.0) - prev.last_wall_s
            if 0 <= gap <= SESSION_GAP_S and facts.first_counter_j < prev.last_counter_j - COUNTER_SLACK_J:
                findings.add(
                    "SB-PRV-003",
                    f"{run.folder}/power.csv",
                    f"expected the energy counter of {facts.identity} at or above {prev.last_counter_j:.3f} J "
                    f"({prev_run.folder} ended there {gap:.0f} s earlier), found {facts.first_counter_j:.3f} J",
                )


def check_provenance(
    findings: Findings, benchmarks: list[BenchmarkData], devices: SystemDevices, digests: dict[str, tuple[str, int]]
) -> None:
    """Every provenance check of one submission: system.yaml's typed and bounded values, meters and accelerators
    per run, copies and counters across runs."""
    for breach in devices.breaches:
        findings.add(breach.code, "system.yaml", breach.message, json_path=format_path(breach.path))
    check = Provenance(findings, devices)
    runs = [run for bench in benchmarks for run in bench.runs]
    for run in runs:
        check.check_meters(run)
        check.check_accelerators(run)
    concurrent = frozenset(run.folder for bench in benchmarks if bench.mlperf_weak_scaling for run in bench.runs)
    check_copies(findings, runs, digests, concurrent)
    check_counters(findings, runs)
