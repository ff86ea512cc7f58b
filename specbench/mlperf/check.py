"""One MLPerf result log checked on its own: MLPerf's log rules and the spec's closed-division rules.

What MLPerf's compliance checker does for one result file (its common, division and benchmark rule
files, including the LARS or SGD hyperparameter rules), done by the validator's own checks in
MLPerf's dialect: the findings carry the log's line, the run's status and best quality come back.
`specbench import mlperf` runs the same checks inside the validation of a whole submission.
"""

from __future__ import annotations

from functools import cache

from specbench.formats.mllog import ParsedLog, parse_log
from specbench.formats.mlperf_import import MlperfDialect, mlperf_benchmarks
from specbench.spec.loader import LoadedSpec, load_spec
from specbench.spec.resolve import ResolvedSpec, resolve
from specbench.spec.rules import Level, applies, evaluate
from specbench.spec.system import ParamValue, SubmissionMeta
from specbench.validator.findings import Finding, Findings
from specbench.validator.logcheck import LogCheck
from specbench.validator.model import RunData
from specbench.validator.values import show

LOG = "log.txt"


@cache
def _resolved(spec: str, level: Level) -> ResolvedSpec:
    return resolve(load_spec(spec), "official", level)


def declared_hyperparameters(resolved: ResolvedSpec, log: ParsedLog) -> dict[str, ParamValue]:
    """Layer 8 as a log states it: every parameter the spec's workload rules name, at its first value."""
    declared: dict[str, ParamValue] = {}
    for key in resolved.rules.get("workload", {}):
        events = log.all(key)
        if events and isinstance(events[0].value, (bool, int, float, str)):
            declared[key] = events[0].value
    return declared


def check_log(
    text: str, spec: str | LoadedSpec = "mlperf-resnet50", ruleset: str = "4.0.0", division: str = "closed"
) -> tuple[RunData, list[Finding]]:
    """Check one MLPerf result log; returns what it shows (status, times, evaluations) and every finding."""
    loaded = spec if isinstance(spec, LoadedSpec) else None
    level: Level = "free" if division == "open" else "system"
    resolved = resolve(loaded, "official", level) if loaded is not None else _resolved(str(spec), level)
    log = parse_log(text)
    declared = declared_hyperparameters(resolved, log)
    meta = SubmissionMeta(
        format_version=1,
        spec_id=resolved.spec.id,
        spec_version=resolved.spec.version,
        spec_sha256=resolved.digest,
        level=resolved.level,
        profile=resolved.profile,
        submitter="mlperf",
        system="mlperf",
        hyperparameters=declared,
    )
    findings = Findings()
    binding = resolved.spec.mlperf
    usage = binding.usage if binding is not None else "training"
    dialect = MlperfDialect(ruleset, mlperf_benchmarks()[resolved.spec.id], division, usage)
    run = RunData.of_log("run_1", 1, "", LogCheck(log, LOG, findings, resolved, meta, False, dialect).run_all())
    for name, rule in resolved.rules.get("workload", {}).items():
        if not applies(rule, declared) or rule.kind == "free":  # type: ignore[attr-defined]
            continue
        if name not in declared:
            if rule.cardinality in ("exactly_one", "at_least_one"):  # type: ignore[attr-defined]
                findings.add("SB-EQV-002", LOG, f"expected hyperparameter {name!r} in the log, found it missing")
            continue
        verdict = evaluate(rule, declared[name], declared)
        if not verdict.ok:
            event = log.first(name)
            findings.add(
                "SB-EQV-001",
                LOG,
                f"hyperparameter {name!r}: expected {verdict.expected}, found {show(declared[name])}",
                line=event.line if event else None,
            )
    return run, findings.items
