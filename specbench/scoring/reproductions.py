"""The re-run folders under `specbench score --reproductions DIR`: found, read and scored as untrusted input.

A re-run folder is a submission of its own (ORG/SYSTEM, validated like any other, its manifest
checked) with reproduction.json at its root. Its record is read by the strict format model; its
benchmark is scored by the same code as the board's entries, so `reproduction.judge` can recompute
the verdict from the evidence rather than take the record's word for it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from specbench.formats.reproduction import REPRODUCTION_FILE, RecordError, parse_record
from specbench.scoring.leaderboard import Leaderboard, build
from specbench.scoring.reproduction import Rerun
from specbench.validator.model import Report
from specbench.validator.validate import discover

EXCUSED_CODES = frozenset({"SB-RUN-001", "SB-RUN-002"})
"""Errors that do not make a re-run unusable: it holds `reproduce --runs` runs, which may differ from the
spec's count, and its failed runs are compared with the spec's `max_failed` as a metric of their own."""


RETAINED = frozenset({REPRODUCTION_FILE})
"""What validation of a re-run folder keeps for `rerun_of`: the record, read once by its confined tree."""


def reproduction_folders(path: Path) -> list[Path]:
    """The re-run folders at or below `path` (ORG/SYSTEM folders holding reproduction.json)."""
    return [folder for folder in discover(path) if os.path.isfile(folder / REPRODUCTION_FILE)]


def rerun_of(report: Report) -> Rerun:
    """A validated re-run folder with its record and its scored benchmark, or why it cannot be used."""
    folder = report.path
    hardware = report.system.layers.get("hardware", {}) if report.system is not None else {}
    raw = report.retained.get(REPRODUCTION_FILE)
    try:
        if raw is None:
            raise RecordError(
                f"{Path(report.root) / REPRODUCTION_FILE}: not read (refused or missing, see the findings)"
            )
        record = parse_record(raw, str(Path(report.root) / REPRODUCTION_FILE))
    except RecordError as err:
        return Rerun(folder, None, None, hardware, problem=str(err))
    problem = usable_problem(report, record.rerun_benchmark)
    if problem is not None:
        return Rerun(folder, record, None, hardware, problem=problem)
    entries = [e for g in build([report]).groups for e in g.entries if e.benchmark == record.rerun_benchmark]
    side = entries[0].side() if entries else None
    meta = entries[0].bench.meta if entries and entries[0].bench is not None else None
    if side is None or meta is None:
        problem = f"no scored benchmark {record.rerun_benchmark!r} in {folder}"
        return Rerun(folder, record, None, hardware, problem=problem)
    return Rerun(folder, record, side, hardware, meta)


def usable_problem(report: Report, benchmark: str) -> str | None:
    """Why a validated re-run of `benchmark` cannot stand as evidence: unusable, an error other than EXCUSED_CODES,
    or no such benchmark."""
    if not report.usable:
        return f"{report.path} could not be validated"
    errors = [f for f in report.errors if f.code not in EXCUSED_CODES]
    if errors:
        first = errors[0]
        more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
        return f"the re-run is not compliant: {first.code} {first.location.file or ''}: {first.message}{more}"
    bench = next((b for b in report.benchmarks if b.name == benchmark), None)
    if bench is None or bench.meta is None:
        return f"{report.path} holds no benchmark {benchmark!r}"
    return None


def reruns_of(reports: Sequence[Report]) -> list[Rerun]:
    """Each validated re-run folder as a Rerun, in the order given."""
    return [rerun_of(report) for report in reports]


def notices(root: Path, reruns: Sequence[Rerun], board: Leaderboard) -> list[str]:
    """What `score --reproductions` says of the re-runs beside the board: none found, unusable, or matching no entry."""
    if not reruns:
        return [f"no re-run folder (ORG/SYSTEM with {REPRODUCTION_FILE}) at or below {root}"]
    statuses = [e.reproduction for group in board.groups for e in group.entries if e.reproduction is not None]
    used = {folder for status in statuses for folder in status.named_by}
    lines = []
    for rerun in reruns:
        if rerun.record is None:
            lines.append(f"{rerun.folder}: {rerun.problem}")
        elif rerun.folder not in used:
            named = rerun.record.submission
            lines.append(
                f"{rerun.folder}: names {named.submitter}/{named.system}/{named.benchmark} (manifest sha256 "
                f"{named.manifest_sha256[:16]}...), which no scored entry is"
            )
    return lines
