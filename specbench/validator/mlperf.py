"""Imported MLPerf Training results: the import record (import.json), MLPerf's log dialect, MLPerf's codes.

`specbench import mlperf` keeps every MLPerf log verbatim as a run's log.txt and records in
ORG/SYSTEM/import.json where each file came from. Such a log follows MLPerf's conventions, not
the specbench executor's (keys after run_start, placeholders for the organisation, any evaluation
offset), so it is judged by MLPerf's own log rules instead (validator.mlperf_engine). Where
specbench is stricter than MLPerf's tools, its findings on an imported benchmark are reported
under MLPerf codes, naming the MLPerf rule they go beyond (`relabel_stricter`).
docs/mlperf-import.md describes the whole import.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from specbench.formats.mlperf_import import (
    IMPORT_FILE,
    IMPORT_FORMAT,
    IMPORT_FORMAT_VERSION,
    ImportedBenchmark,
    ImportRecord,
    MlperfDialect,
    mlperf_benchmarks,
    mlperf_name,
)
from specbench.validator.codes import CODES
from specbench.validator.documents import Loaded, check_mapping, check_version, load_json, to_model
from specbench.validator.findings import Finding
from specbench.validator.values import show

if TYPE_CHECKING:
    from specbench.validator.context import Context
    from specbench.validator.model import BenchmarkData


def read_import_record(ctx: Context) -> tuple[ImportRecord | None, Loaded | None]:
    """import.json when the submission has one (an imported MLPerf result), with findings for a bad one."""
    if not ctx.tree.has(IMPORT_FILE):
        return None, None
    loaded = load_json(ctx.tree, IMPORT_FILE, ctx.findings)
    if loaded is None or not check_mapping(loaded, ctx.findings):
        return None, loaded
    if loaded.data.get("format") != IMPORT_FORMAT:
        ctx.findings.add(
            "SB-MLP-004",
            IMPORT_FILE,
            f"expected format {IMPORT_FORMAT!r}, found {show(loaded.data.get('format'))}",
            **loaded.locate("format"),
        )
        return None, loaded
    if not check_version(loaded, IMPORT_FORMAT_VERSION, ctx.findings):
        return None, loaded
    return to_model(ImportRecord, loaded, ctx.findings), loaded


def dialect_for(record: ImportRecord | None, bench: BenchmarkData) -> MlperfDialect | None:
    """The MLPerf dialect of an imported benchmark, or None for a specbench log."""
    if record is None or bench.meta is None:
        return None
    entry = record.benchmarks.get(bench.name)
    expected = mlperf_name(bench.spec.spec) if bench.spec is not None else None
    if entry is None or expected is None or entry.mlperf_benchmark != expected:
        return None
    division = "open" if bench.meta.level == "free" else "closed"
    usage = "hpc" if record.source.kind == "mlperf-hpc" else "training"
    return MlperfDialect(record.source.ruleset, expected, division, usage)


def is_weak_scaling(record: ImportRecord | None, bench: BenchmarkData) -> bool:
    """Whether an imported benchmark is an MLPerf HPC weak-scaling folder (import.json's `scaling_mode: weak`)."""
    dialect = dialect_for(record, bench)
    if record is None or dialect is None or dialect.usage != "hpc":
        return False
    return record.benchmarks[bench.name].scaling_mode == "weak"


def check_import(ctx: Context, record: ImportRecord, loaded: Loaded, benchmarks: Iterable[BenchmarkData]) -> None:
    """The record against the submission: every benchmark and run listed, each log the MLPerf log verbatim."""
    findings = ctx.findings
    seen = {bench.name: bench for bench in benchmarks}
    for name, bench in seen.items():
        entry = record.benchmarks.get(name)
        spec_id = bench.meta.spec_id if bench.meta else None
        expected = mlperf_name(bench.spec.spec) if bench.spec is not None else None
        if entry is None:
            findings.add(
                "SB-MLP-004",
                IMPORT_FILE,
                f"expected benchmark {name!r} in the import record, found it missing: its logs are judged as specbench logs",
                **loaded.locate("benchmarks"),
            )
            continue
        if entry.mlperf_benchmark != expected:
            known = ", ".join(f"{k} ({v})" for k, v in mlperf_benchmarks().items())
            findings.add(
                "SB-MLP-004",
                IMPORT_FILE,
                f"expected an MLPerf benchmark that spec {spec_id!r} answers (known: {known}), "
                f"found {entry.mlperf_benchmark!r}: its logs are judged as specbench logs",
                **loaded.locate("benchmarks", name, "mlperf_benchmark"),
            )
        _check_runs(ctx, loaded, name, entry, bench)
        if entry.scaling is not None and entry.mlperf_benchmark == expected:
            bench.mlperf_scaling_factor = entry.scaling.scaling_factor
        for i, problem in enumerate(entry.findings):
            where = f"{problem.file}:{problem.line}" if problem.line is not None else problem.file
            findings.add(
                problem.code,
                IMPORT_FILE,
                f"{where} (MLPerf results tree): {problem.message}",
                json_path=f"benchmarks.{name}.findings[{i}]",
            )
    relabel_stricter(ctx, record, seen.values())


def _check_runs(ctx: Context, loaded: Loaded, name: str, entry: ImportedBenchmark, bench: BenchmarkData) -> None:
    folders = {run.name for run in bench.runs}
    for run_name, imported in entry.runs.items():
        rel = f"{name}/{run_name}/log.txt"
        if run_name not in folders:
            ctx.findings.add(
                "SB-MLP-004",
                IMPORT_FILE,
                f"expected run folder {name}/{run_name} (imported from {imported.result_file.path}), found none",
                **loaded.locate("benchmarks", name, "runs", run_name),
            )
            continue
        digest = ctx.tree.digest(rel)
        if digest is not None and digest[0] != imported.result_file.sha256:
            ctx.findings.add(
                "SB-MLP-004",
                rel,
                f"expected the MLPerf log {imported.result_file.path} verbatim (sha256 {imported.result_file.sha256[:12]}...), "
                f"found a log with sha256 {digest[0][:12]}...",
            )
    for run_name in sorted(folders - set(entry.runs)):
        ctx.findings.add(
            "SB-MLP-004",
            IMPORT_FILE,
            f"expected run folder {name}/{run_name} in the import record, found it missing",
            **loaded.locate("benchmarks", name, "runs"),
        )


POWER_RULES = {
    "SB-PWR-003": "'Power measurement begins just before a run starts and stops just afterwards'",
    "SB-PWR-004": "'Report 1 Measurement per Second' and 'Measure max(a run, 60 power samples)'",
    "SB-PWR-005": "'at least once every second distributed evenly throughout the timed portion of a run'",
}
"""specbench's trace checks and the rule of MLPerf's power_measurement.adoc each one enforces."""
NOT_CHECKED = "which MLPerf's package checker and result summarizer do not check"


def relabel_stricter(ctx: Context, record: ImportRecord, benchmarks: Iterable[BenchmarkData]) -> None:
    """Findings on imported benchmarks where specbench is stricter than MLPerf's tools, under MLPerf codes.

    A trace check (SB-PWR-003/004/005) on a run whose energy was still computed becomes SB-MLP-008
    (warning); a layer-9 difference (SB-EQV-003) becomes SB-MLP-013 (error: the quality is measured
    on another set). Each message names the MLPerf rule it goes beyond.
    """
    imported = {b.name: b for b in benchmarks if dialect_for(record, b) is not None}
    if not imported:
        return
    measured = {r.folder for b in imported.values() for r in b.runs if r.power and r.power.energy_j is not None}
    ruleset = record.source.ruleset
    ctx.findings.items[:] = [_relabel(f, imported, measured, ruleset) for f in ctx.findings.items]


def _relabel(finding: Finding, imported: dict[str, BenchmarkData], measured: set[str], ruleset: str) -> Finding:
    file = finding.location.file or ""
    folder, _, name = file.rpartition("/")
    if file.split("/", 1)[0] not in imported:
        return finding
    if finding.code in POWER_RULES and name == "power.csv" and folder in measured:
        message = (
            f"{finding.message} (stricter than MLPerf: its power rule {POWER_RULES[finding.code]}, {NOT_CHECKED}; "
            "the energy counts the readings in the timed run)"
        )
        return _as("SB-MLP-008", finding, message)
    if finding.code == "SB-EQV-003":
        message = (
            f"{finding.message} (stricter than MLPerf: training_{ruleset}/common.yaml asks only for a non-empty "
            "train_samples and eval_samples)"
        )
        return _as("SB-MLP-013", finding, message)
    return finding


def _as(code: str, finding: Finding, message: str) -> Finding:
    info = CODES[code]
    return Finding(code, info.severity, finding.location, message, info.hint)
