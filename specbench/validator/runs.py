"""Runs of one benchmark: their number, how many failed, and that their checked metadata agree."""

from __future__ import annotations

from typing import Any

from specbench.spec.resolve import ResolvedSpec
from specbench.validator.findings import Findings
from specbench.validator.model import RunData
from specbench.validator.values import same, show

CHECKED_METADATA = ("hyperparameters", "settings", "device_kind", "devices", "synthetic_data", "sample_unit")
"""result.json fields that every run of one result shares (as pyperf refuses to merge runs whose metadata differ)."""


def allowed_failures(spec: ResolvedSpec) -> int:
    """Failed runs the aggregation tolerates: the spec's max_failed, and at most one for an olympic mean."""
    runs = spec.spec.measurement.runs
    return min(runs.max_failed, 1) if runs.aggregation == "olympic" else runs.max_failed


def check_runs(
    findings: Findings, benchmark: str, runs: list[RunData], spec: ResolvedSpec | None, weak_scaling: bool = False
) -> None:
    """Run folders numbered 1..N, as many as the spec asks, no more failures than its aggregation tolerates.

    An MLPerf HPC weak-scaling folder (`weak_scaling`) holds one run per model instance: at least the spec's
    count of them, and as many that reach the target (SB-MLP-030), instead of exactly the count.
    """
    numbers = [run.number for run in runs]
    if numbers != list(range(1, len(runs) + 1)):
        found = ", ".join(run.name for run in runs) or "none"
        findings.add("SB-RUN-003", benchmark, f"expected run folders run_1 to run_{len(runs)}, found {found}")
    if spec is not None:
        required = spec.spec.measurement.runs
        if weak_scaling:
            _check_models(findings, benchmark, runs, required.count)
        elif len(runs) != required.count:
            findings.add(
                "SB-RUN-001",
                benchmark,
                f"expected {required.count} run(s) ({spec.spec.id} at profile {spec.profile}), found {len(runs)}",
            )
        failed = [run for run in runs if run.status != "success"]
        allowed = allowed_failures(spec)
        if failed and len(failed) > allowed:
            listed = "; ".join(f"{run.name}: {run.status} ({run.reason})" for run in failed)
            findings.add(
                "SB-RUN-002",
                benchmark,
                f"expected at most {allowed} failed run(s) ({required.aggregation} aggregation), found {len(failed)}: {listed}",
            )
    check_consistency(findings, runs)


def _check_models(findings: Findings, benchmark: str, runs: list[RunData], count: int) -> None:
    """SB-MLP-030: MLPerf's package checker wants at least `count` result logs in a weak-scaling folder, and its
    result summarizer publishes nothing with fewer than `count` models that reach the target."""
    converged = sum(run.status == "success" for run in runs)
    if len(runs) < count:
        findings.add(
            "SB-MLP-030",
            benchmark,
            f"expected at least {count} model instances (result logs) in this MLPerf HPC weak-scaling result, "
            f"found {len(runs)}",
        )
    elif converged < count:
        findings.add(
            "SB-MLP-030",
            benchmark,
            f"expected at least {count} model instances that reach the target in this MLPerf HPC weak-scaling "
            f"result, found {converged} of {len(runs)}",
        )


def _metadata(run: RunData) -> dict[str, Any]:
    assert run.result is not None
    values = {name: getattr(run.result, name) for name in CHECKED_METADATA}
    values["power.scope"] = run.result.power.scope
    values["power.devices"] = sorted(run.result.power.devices)
    return values


def check_consistency(findings: Findings, runs: list[RunData]) -> None:
    with_result = [run for run in runs if run.result is not None]
    if len(with_result) < 2:
        return
    first = with_result[0]
    reference = _metadata(first)
    for run in with_result[1:]:
        values = _metadata(run)
        for name, expected in reference.items():
            if not same(_plain(values[name]), _plain(expected)):
                findings.add(
                    "SB-RUN-004",
                    f"{run.folder}/result.json",
                    f"expected {name} {show(expected)} (as in {first.name}), found {show(values[name])}",
                    json_path=name,
                )


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return [[k, _plain(v)] for k, v in sorted(value.items())]
    return value
