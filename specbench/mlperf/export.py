"""`export_submission`: a specbench submission in MLPerf Training's layout, for MLPerf's own tools.

    from specbench.mlperf.export import export_submission
    outcome = export_submission("submissions/acme/box1", "mlperf/acme")   # ExportOutcome

OUT becomes (or gains) an organisation folder as MLCommons publishes one:

    OUT/systems/<system>.json
    OUT/results/<system>/<benchmark>/result_N.txt            each run's log.txt, byte for byte
    OUT/results/<system>/<benchmark>/power/result_N/node_K.txt, sw_K.txt
    OUT/results/<system>/<benchmark>/scaling.json            an imported result's, as MLPerf's RCP checker wrote it

<benchmark> is MLPerf's name of the spec (mlperf-resnet50 -> resnet); benchmarks of other specs are
skipped. An imported MLPerf result goes back under its own names (system, result files), so
MLPerf's package checker and result summarizer read the export as they read the source. The
submission is validated first and only read; the export is written into a staging folder and
moved into place, and never replaces existing files.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specbench.errors import EXIT_NONCOMPLIANT, EXIT_OK, UsageError
from specbench.formats.mlperf_import import IMPORT_FILE, ImportedBenchmark, ImportRecord, mlperf_benchmarks
from specbench.mlperf.export_power import node_logs, switch_logs
from specbench.mlperf.export_system import built_description, imported_description, parse_fields
from specbench.mlperf.staging import Staging
from specbench.validator import validate_submission
from specbench.validator.model import BenchmarkData, Report

DEFAULT_RULESET = "4.0.0"


@dataclass(frozen=True)
class Exported:
    """One written file (relative to OUT) and what it came from (relative to the submission)."""

    path: str
    source: str


@dataclass
class ExportOutcome:
    submission: Path
    out: Path
    system: str
    ruleset: str
    report: Report
    files: list[Exported] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def exit_code(self, werror: bool = False) -> int:
        """0 when the exported submission validates compliant, else 1 (the export is written either way)."""
        return EXIT_OK if self.report.compliant(werror) else EXIT_NONCOMPLIANT


def _overlap(a: Path, b: Path) -> bool:
    return a == b or a in b.parents or b in a.parents


COPIED = frozenset({"log.txt", "power.csv", "power.json"})
"""The files an export copies or converts, kept from validation's one confined read of each."""


def export_submission(submission: str | Path, out: str | Path, fields: list[str] | None = None) -> ExportOutcome:
    """Write the MLPerf benchmarks of one ORG/SYSTEM submission into OUT in MLPerf's layout.

    `fields` are `KEY=VALUE` items of MLPerf's system description that system.yaml does not state.
    Raises UsageError for an unusable submission, one without an MLPerf benchmark, or files in the way.
    """
    submission, out = Path(submission), Path(out)
    extra = parse_fields(fields or [])
    if _overlap(submission.resolve(), out.resolve()):
        raise UsageError(f"--out {out} overlaps SUBMISSION {submission}: choose a folder outside it")
    report = validate_submission(submission, retain=COPIED)
    if not report.usable or report.system is None:
        first = report.findings[0].message if report.findings else "no system.yaml"
        raise UsageError(f"{submission}: not a usable submission ({first}); see specbench validate {submission}")
    record = report.imported
    chosen = [b for b in report.benchmarks if b.meta is not None and b.meta.spec_id in mlperf_benchmarks()]
    outcome = ExportOutcome(
        submission, out, record.source.system if record else report.system.system, DEFAULT_RULESET, report
    )
    outcome.skipped = [
        f"{b.name}: spec {b.meta.spec_id if b.meta else '?'} is no MLPerf benchmark"
        for b in report.benchmarks
        if b not in chosen
    ]
    if not chosen:
        known = ", ".join(mlperf_benchmarks())
        raise UsageError(f"{submission}: no benchmark answers an MLPerf spec ({known}); nothing to export")
    if record is not None:
        outcome.ruleset = record.source.ruleset
        description = imported_description(record.system_json.content, outcome.notes)
    else:
        division = "open" if chosen[0].meta is not None and chosen[0].meta.level == "free" else "closed"
        description = built_description(report.system, division, extra, outcome.notes)
    _write(outcome, record, chosen, description)
    return outcome


def _write(
    outcome: ExportOutcome,
    record: ImportRecord | None,
    chosen: list[BenchmarkData],
    description: dict[str, Any],
) -> None:
    out, system = outcome.out, outcome.system
    targets = [out / "systems" / f"{system}.json", out / "results" / system]
    taken = [t for t in targets if t.exists() or t.is_symlink()]
    if taken:
        raise UsageError(f"{taken[0]} exists: an export never replaces files; remove it or choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".export-", dir=out) as tmp:
        staging = Staging(Path(tmp))
        staging.text(f"systems/{system}.json", json.dumps(description, indent=4) + "\n")
        outcome.files.append(Exported(f"systems/{system}.json", IMPORT_FILE if record else "system.yaml"))
        for bench in chosen:
            imported = record.benchmarks.get(bench.name) if record else None
            _write_benchmark(outcome, staging, outcome.report.retained, bench, imported)
        for target in targets:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(Path(tmp) / target.relative_to(out), target)


def _write_benchmark(
    outcome: ExportOutcome,
    staging: Staging,
    files: dict[str, bytes],
    bench: BenchmarkData,
    imported: ImportedBenchmark | None,
) -> None:
    assert bench.meta is not None
    folder = f"results/{outcome.system}/{mlperf_benchmarks()[bench.meta.spec_id]}"
    for index, run in enumerate(sorted(bench.runs, key=lambda r: r.number)):
        name = f"result_{index}"
        if imported is not None and run.name in imported.runs:
            name = Path(imported.runs[run.name].result_file.path).stem
        log = files.get(f"{run.folder}/log.txt")
        if log is None:
            outcome.notes.append(f"{run.folder}/log.txt: not read (refused or missing, see the findings): not written")
            continue
        staging.write(f"{folder}/{name}.txt", log)
        outcome.files.append(Exported(f"{folder}/{name}.txt", f"{run.folder}/log.txt"))
        _write_power(outcome, staging, files, f"{folder}/power/{name}", run.folder, imported, run.name)
    if imported is not None and imported.scaling is not None:
        staging.text(f"{folder}/scaling.json", json.dumps({"scaling_factor": imported.scaling.scaling_factor}))
        outcome.files.append(Exported(f"{folder}/scaling.json", f"{IMPORT_FILE} ({imported.scaling.file.path})"))


def _write_power(
    outcome: ExportOutcome,
    staging: Staging,
    files: dict[str, bytes],
    folder: str,
    run_folder: str,
    imported: ImportedBenchmark | None,
    run_name: str,
) -> None:
    csv_bytes, json_bytes = files.get(f"{run_folder}/power.csv"), files.get(f"{run_folder}/power.json")
    if csv_bytes is None or json_bytes is None:
        return
    notes: list[str] = []
    try:
        metadata = json.loads(json_bytes)
        logs = node_logs(csv_bytes.decode("utf-8"), metadata, notes) if isinstance(metadata, dict) else []
    except (ValueError, TypeError, AttributeError, KeyError) as err:  # validation found what is wrong
        outcome.notes.append(f"{run_folder}: power files not converted ({type(err).__name__}; see the findings)")
        return
    outcome.notes.extend(f"{run_folder}: {note}" for note in notes)
    for log in logs:
        staging.text(f"{folder}/{log.name}", log.text)
        outcome.files.append(
            Exported(f"{folder}/{log.name}", f"{run_folder}/power.csv ({log.device}, {log.readings} readings)")
        )
    run = imported.runs.get(run_name) if imported is not None else None
    if logs and run is not None and run.power is not None and run.power.interconnect:
        first = json.loads(logs[0].text.partition("\n")[0].removeprefix(":::MLLOG "))["time_ms"]
        estimates = [entry.model_dump(mode="json") for entry in run.power.interconnect]
        for name, text in switch_logs(estimates, first):
            staging.text(f"{folder}/{name}", text)
            outcome.files.append(Exported(f"{folder}/{name}", f"{IMPORT_FILE} (interconnect estimate)"))


def render_text(outcome: ExportOutcome, werror: bool = False) -> str:
    """What `specbench export mlperf` prints: the files written and their sources, notes, the checks to run."""
    verdict = "compliant" if outcome.report.compliant(werror) else "non-compliant"
    lines = [f"{outcome.submission} -> {outcome.out} (MLPerf Training layout, ruleset {outcome.ruleset}): {verdict}"]
    lines.extend(f"  {item.path}  <- {item.source}" for item in outcome.files)
    lines.extend(f"  note: {note}" for note in outcome.notes)
    lines.extend(f"  skipped: {item}" for item in outcome.skipped)
    for finding in outcome.report.errors if not werror else outcome.report.findings:
        lines.append(f"  {finding.severity} {finding.code} {finding.location.file or ''}: {finding.message}")
    lines.append(
        f"MLPerf's tools: python -m mlperf_logging.package_checker {outcome.out} training {outcome.ruleset}\n"
        f"               python -m mlperf_logging.result_summarizer {outcome.out} training {outcome.ruleset}"
    )
    return "\n".join(lines) + "\n"


def render_json(outcome: ExportOutcome, werror: bool = False) -> str:
    data = {
        "format_version": 1,
        "submission": str(outcome.submission),
        "out": str(outcome.out),
        "system": outcome.system,
        "ruleset": outcome.ruleset,
        "exit_code": outcome.exit_code(werror),
        "compliant": outcome.report.compliant(werror),
        "files": [{"path": f.path, "source": f.source} for f in outcome.files],
        "notes": outcome.notes,
        "skipped": outcome.skipped,
        "findings": [f.to_dict() for f in outcome.report.findings],
    }
    return json.dumps(data, indent=2, allow_nan=False) + "\n"
