"""A bounded run of the project's mutation fuzzer over every committed submission (the long run: benchmarks/fuzz_validate.py)."""

from __future__ import annotations

from pathlib import Path

from specbench.scoring.fuzz import CONTRADICTS, OPERATORS, VARIANTS, fuzz

SUBMISSIONS = Path(__file__).resolve().parents[2] / "submissions"


def test_mutations_never_crash_and_contradictions_are_never_accepted(tmp_path: Path) -> None:
    sources = sorted(p.parent for p in SUBMISSIONS.glob("*/*/system.yaml"))
    assert len(sources) >= 10
    report = fuzz(sources, 160, seed=20261201, work=tmp_path)
    summary = report.summary()
    assert summary["tracebacks"] == 0, report.failures[:3]
    assert summary["accepted_contradictions"] == 0, report.failures[:3]
    assert summary["ranked_per_watt_without_hardware_meter"] == 0, report.failures[:3]
    assert {o.operator for o in report.outcomes} == set(OPERATORS)
    assert {o.variant for o in report.outcomes} == set(VARIANTS)
    refused = [o for o in report.outcomes if o.label == CONTRADICTS and not o.compliant]
    assert len(refused) >= 60
