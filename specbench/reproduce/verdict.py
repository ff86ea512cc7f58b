"""The re-run judged against the submission, and the record written beside it (reproduction.json, then the manifest).

The re-run is validated like any submission and scored by the same code as the board; the comparison
is scoring.reproduction's, the one `specbench score --reproductions` repeats. A re-run that cannot
stand as evidence (not compliant for another reason than its run count or failed runs, another
configuration, other devices, a claimed metric it did not measure) gets no record: no verdict rather
than a wrong one.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from specbench.errors import SpecbenchError
from specbench.files import atomic_write_json, write_manifest
from specbench.formats.reproduction import REPRODUCTION_FILE, ReproductionRecord, SubmissionRef
from specbench.reproduce.host import host_facts
from specbench.reproduce.plan import Plan
from specbench.reproduce.source import Source
from specbench.scoring.leaderboard import build
from specbench.scoring.reproduction import Comparison, compare, configuration_mismatch, device_mismatch
from specbench.scoring.reproductions import usable_problem
from specbench.validator.validate import validate_submission


class NoVerdict(SpecbenchError):
    """The re-run ran but cannot settle the claim; its folder is kept, no record is written (exit code 2)."""


def judge(source: Source, plan: Plan, layers: Mapping[str, Any]) -> tuple[ReproductionRecord, Comparison]:
    """Validate and score the re-run in plan.options.out, compare it with the submission, and build the record."""
    out = plan.options.out
    benchmark = source.bench.spec.spec.id if source.bench.spec is not None else source.meta.spec_id
    report = validate_submission(out)
    problem = usable_problem(report, benchmark)
    if problem is not None:
        raise NoVerdict(f"{out}: {problem}; no verdict recorded (run `specbench validate {out}`)")
    entry = next(e for g in build([report]).groups for e in g.entries if e.benchmark == benchmark)
    rerun_side, claim_side = entry.side(), source.entry.side()
    assert entry.bench is not None and entry.bench.meta is not None and rerun_side is not None
    assert claim_side is not None
    hardware = report.system.layers.get("hardware", {}) if report.system is not None else {}
    mismatch = configuration_mismatch(source.meta, entry.bench.meta) or device_mismatch(source.hardware, hardware)
    if mismatch is not None:
        raise NoVerdict(f"{out}: the re-run is not of the submission's configuration and devices: {mismatch}")
    comparison = compare(claim_side, rerun_side)
    if comparison.unsettled:
        raise NoVerdict(
            f"{out}: the re-run cannot settle the claim ({'; '.join(comparison.unsettled)}): a reproduction "
            "measures what the submission measured (for energy, a power meter: --power auto); no verdict recorded"
        )
    return _record(source, plan, layers, benchmark, len(rerun_side.runs), comparison), comparison


def _record(
    source: Source, plan: Plan, layers: Mapping[str, Any], benchmark: str, runs: int, comparison: Comparison
) -> ReproductionRecord:
    """The record of a judged re-run of `runs` runs."""
    meta = source.meta
    return ReproductionRecord(
        format="specbench.reproduction",
        format_version=1,
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        submission=SubmissionRef(
            path=str(source.given),
            submitter=meta.submitter,
            system=meta.system,
            benchmark=source.bench.name,
            manifest_sha256=source.manifest_sha256,
            spec_id=meta.spec_id,
            spec_version=meta.spec_version,
            spec_sha256=meta.spec_sha256,
            profile=meta.profile,
            level=meta.level,
        ),
        rerun_benchmark=benchmark,
        host=host_facts(layers),
        runs=runs,
        overrides=list(plan.overrides),
        notes=list(plan.notes),
        seeds=plan.seeds,
        metrics=comparison.metrics,
        verdict=comparison.verdict,
        reasons=comparison.reasons,
    )


def write_record(out: Path, record: ReproductionRecord) -> Path:
    """reproduction.json at the re-run's root, then its manifest anew, so that `specbench sign` covers both."""
    path = out / REPRODUCTION_FILE
    atomic_write_json(path, record.model_dump(mode="json"))
    write_manifest(out)
    return path
