"""Evidence compared across submissions: one run's evidence submitted under two names is an error on both.

provenance.check_copies finds copies inside one submission (SB-PRV-002); here the submissions of one
`validate` or `score` call are compared with each other. Each run leaves a few compact marks (a digest
of its log's timed events, its power series' fingerprints, its start time, its devices' UUIDs with the
wall-time window they were measured in), so the comparison costs a dictionary lookup per mark. A
forger can rename a copy, re-sign it, edit its identity lines and seed, and shift its clock: the log
digest ignores exactly those, and the other marks catch a copy that kept its clock or its readings.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from specbench.formats.mllog import LogEvent, ParsedLog
from specbench.validator.findings import Finding, Findings
from specbench.validator.model import Report, RunData

EDITABLE_KEYS = frozenset(
    {
        "submission_org",
        "submission_platform",
        "submission_division",
        "submission_status",
        "submission_benchmark",
        "submission_poc_name",
        "submission_poc_email",
        "seed",
    }
)
"""Log keys a forger renaming a copy edits at no cost: left out of the log's digest."""
SOURCE_METADATA = frozenset({"file", "lineno"})
"""Metadata naming the logging call's source line: left out, as cheap to edit and no evidence of the run."""
MIN_LOG_EVENTS = 3
"""A timed region with fewer events (or a single instant) says too little to tell a copy from chance."""
UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
"""A device identity is compared across submissions by the UUID it holds (any case, any prefix such as NVIDIA's
'GPU-'); one without is not compared, as bus ids and meter keys repeat between machines."""


def log_fingerprint(log: ParsedLog) -> str | None:
    """sha256 of the log's events from run_start on, each as (time since run_start, type, key, value, metadata).

    Left out: the identity lines and the seed, the source file and line of each call, the clock's
    origin and the order of lines (events are sorted). None when there is no run_start or too little.
    """
    start = log.first("run_start")
    if start is None:
        return None
    timed = [e for e in log.events if e.time_ms >= start.time_ms and e.key not in EDITABLE_KEYS]
    if len(timed) < MIN_LOG_EVENTS or len({e.time_ms for e in timed}) < 2:
        return None
    digest = hashlib.sha256()
    for record in sorted(_record(event, start.time_ms) for event in timed):
        digest.update(record.encode())
        digest.update(b"\n")
    return digest.hexdigest()


def _record(event: LogEvent, start_ms: float) -> str:
    metadata = {k: v for k, v in event.metadata.items() if k not in SOURCE_METADATA}
    fields = [event.time_ms - start_ms, event.event_type, event.key, event.value, metadata]
    return json.dumps(_canonical(fields), sort_keys=True, separators=(",", ":"))


def _canonical(value: Any) -> Any:
    """Numbers as floats (1 and 1.0 are one value), containers element by element."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        number = float(value)
        return number if math.isfinite(number) else repr(number)
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return repr(value)


def fingerprint_logs(report: Report) -> None:
    """Keep each run's log digest on the run, so the comparison needs no parsed log (a worker process drops it)."""
    for run in _runs(report):
        if run.log is not None and run.log_fingerprint is None:
            run.log_fingerprint = log_fingerprint(run.log)


@dataclass(frozen=True)
class Mark:
    """One piece of a run's evidence, located in its submission, with the words that name it in a message."""

    submission: int
    file: str
    what: str


@dataclass(frozen=True)
class Window:
    """A device, by UUID, measured by one run from `first_s` to `last_s` (wall clock)."""

    mark: Mark
    uuid: str
    first_s: float
    last_s: float


@dataclass(frozen=True)
class Marks:
    """Every run's marks of the submissions compared: equal keys are copies, overlapping windows one device twice."""

    keyed: dict[tuple[str, object], list[Mark]]
    windows: list[Window]

    @staticmethod
    def of(reports: Sequence[Report]) -> Marks:
        keyed: dict[tuple[str, object], list[Mark]] = {}
        windows: list[Window] = []
        for index, report in enumerate(reports):
            for run in _runs(report):
                for code, key, mark in _keyed_marks(index, run):
                    keyed.setdefault((code, key), []).append(mark)
                windows.extend(_windows(index, run))
        return Marks(keyed, windows)


def _keyed_marks(index: int, run: RunData) -> Iterator[tuple[str, object, Mark]]:
    """(code, key, mark) for the run's log digest, start time and power series fingerprints."""
    log = f"{run.folder}/log.txt"
    if run.log_fingerprint is not None:
        yield "SB-DUP-001", run.log_fingerprint, Mark(index, log, "the same log events from run_start on")
    if run.run_start_ms is not None:
        yield "SB-DUP-004", run.run_start_ms, Mark(index, log, f"run_start at time_ms {run.run_start_ms:.0f}")
    if run.power is not None:
        for facts in run.power.series:
            if facts.fingerprint is not None:
                mark = Mark(index, f"{run.folder}/power.csv", f"the power readings of {facts.device}")
                yield "SB-DUP-002", facts.fingerprint, mark


def _windows(index: int, run: RunData) -> Iterator[Window]:
    if run.power is None:
        return
    for facts in run.power.series:
        found = UUID.search(facts.identity)
        if facts.first_wall_s is None or facts.last_wall_s is None or found is None:
            continue
        mark = Mark(index, f"{run.folder}/power.json", f"device {facts.identity}")
        yield Window(mark, found.group(0).lower(), facts.first_wall_s, facts.last_wall_s)


def _runs(report: Report) -> Iterator[RunData]:
    for bench in report.benchmarks:
        yield from bench.runs


def compare_submissions(reports: Sequence[Report]) -> None:
    """Add to each report an error for every piece of its evidence that another submission holds too.

    Reports of one folder (given twice, or as ORG/SYSTEM and as one of its BENCHMARK folders) are
    one submission, never compared with each other; unusable reports hold no evidence.
    """
    usable = [r for r in reports if r.usable]
    if len(usable) < 2:
        return
    owners = _owners(usable)
    if len(set(owners)) < 2:
        return
    marks = Marks.of(usable)
    found: list[Findings] = [Findings() for _ in usable]
    paths = [r.root for r in usable]
    for (code, _), group in sorted(marks.keyed.items(), key=lambda item: (item[0][0], str(item[0][1]))):
        for mark, other in _pairs(group, owners):
            found[mark.submission].add(code, mark.file, _message(code, mark, other, paths))
    for mark, other, overlap_s in _overlaps(marks.windows, owners):
        message = (
            f"expected {mark.what} to measure one run at a time, found it measuring "
            f"{os.path.join(paths[other.submission], other.file)} too, for {overlap_s:.1f} s of the same wall time"
        )
        found[mark.submission].add("SB-DUP-003", mark.file, message)
    for report, findings in zip(usable, found, strict=True):
        if findings.items:
            report.findings = sorted([*report.findings, *findings.items], key=Finding.sort_key)


def _owners(reports: Sequence[Report]) -> list[int]:
    """For each report, a number shared by the reports of the same folder (its real path)."""
    numbers: dict[str, int] = {}
    return [numbers.setdefault(os.path.realpath(r.root), len(numbers)) for r in reports]


def _pairs(group: list[Mark], owners: Sequence[int]) -> Iterator[tuple[Mark, Mark]]:
    """(mark, the first mark of each other submission) for every mark of a key that several submissions hold."""
    firsts: dict[int, Mark] = {}
    for mark in group:
        firsts.setdefault(owners[mark.submission], mark)
    if len(firsts) < 2:
        return
    for mark in group:
        own = owners[mark.submission]
        for owner, other in firsts.items():
            if owner != own:
                yield mark, other


def _overlaps(windows: list[Window], owners: Sequence[int]) -> Iterator[tuple[Mark, Mark, float]]:
    """(mark, other, seconds) for each pair of windows of one UUID in two submissions that share wall time."""
    by_uuid: dict[str, list[Window]] = {}
    for window in windows:
        by_uuid.setdefault(window.uuid, []).append(window)
    for uuid in sorted(by_uuid):
        ordered = sorted(by_uuid[uuid], key=lambda w: (w.first_s, w.last_s, w.mark.submission, w.mark.file))
        active: list[Window] = []
        for window in ordered:
            active = [a for a in active if a.last_s > window.first_s]
            for earlier in active:
                if owners[earlier.mark.submission] != owners[window.mark.submission]:
                    overlap = min(earlier.last_s, window.last_s) - window.first_s
                    yield earlier.mark, window.mark, overlap
                    yield window.mark, earlier.mark, overlap
            active.append(window)


def _message(code: str, mark: Mark, other: Mark, paths: Sequence[str]) -> str:
    where = os.path.join(paths[other.submission], other.file)
    if code == "SB-DUP-001":
        return (
            f"expected a log of its own, found the same events from run_start on as {where} "
            "(identity lines, seed, source lines and clock origin aside)"
        )
    if code == "SB-DUP-004":
        return f"expected a run start of its own, found {mark.what}, as in {where}"
    return f"expected readings of its own, found {mark.what} equal to {other.what} in {where}"
