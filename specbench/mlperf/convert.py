"""One MLPerf system's results as a specbench submission folder (ORG/SYSTEM), written atomically.

Per benchmark that a spec answers (resnet -> mlperf-resnet50): submission.yaml with the
hyperparameters the first run logged, and per result file one run folder with the log verbatim,
state.json, result.json (what the validator's own log reading shows, so that validation agrees by
construction) and, where node power logs exist, power.csv and power.json. import.json records every
source file with its sha256 and the benchmark's scaling.json; manifest.json signs the folder. The
source tree is only read.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specbench.formats.mllog import ParsedLog, parse_log
from specbench.formats.mlperf_import import (
    IMPORT_FILE,
    ImportedBenchmark,
    ImportedRun,
    ImportFinding,
    ImportRecord,
    ImportSource,
    MlperfDialect,
    Scaling,
    SourceFile,
    SystemJson,
)
from specbench.formats.strictjson import parse_json_text
from specbench.mlperf.check import declared_hyperparameters
from specbench.mlperf.energylabel import energy_label
from specbench.mlperf.power import write_trace
from specbench.mlperf.powerfiles import read_power_folders
from specbench.mlperf.publish import published_figures
from specbench.mlperf.runresult import RunImport, RunInputs, convert_run, iso
from specbench.mlperf.source import BenchmarkSource, SourceError, SystemSource, natural_key, read_bytes, result_name
from specbench.mlperf.source import source_file as file_of
from specbench.mlperf.staging import Staging
from specbench.mlperf.system import framework_warning, node_count, safe_name, system_yaml
from specbench.spec.loader import LoadedSpec, spec_digest
from specbench.spec.resolve import resolve_once
from specbench.spec.rules import Level
from specbench.spec.system import SubmissionMeta
from specbench.validator.values import is_int, is_number, show

DEFAULT_RULESET = "4.0.0"
LEVELS: dict[str, Level] = {"closed": "system", "open": "free"}

__all__ = [
    "BenchmarkImport",
    "ConvertError",
    "RunImport",
    "StagedSystem",
    "SystemImport",
    "convert_system",
    "stage_system",
]


class ConvertError(Exception):
    """A system that cannot be imported at all (its description is unreadable)."""


@dataclass
class BenchmarkImport:
    name: str
    mlperf: str
    level: Level
    runs: list[RunImport]
    record: ImportedBenchmark


@dataclass
class SystemImport:
    """One imported system: where it came from, where it went, and its benchmarks."""

    source: SystemSource
    output: Path
    benchmarks: list[BenchmarkImport]
    notes: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        org = self.source.org
        return f"{org.rel}/{self.source.name}" if org.rel != "." else f"{org.name}/{self.source.name}"

    def slim(self) -> SystemImport:
        """This import without the parsed logs (what a report needs, cheap to send between processes)."""
        for bench in self.benchmarks:
            for run in bench.runs:
                run.data.log = None
        return self


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


@dataclass
class Context:
    """What converting one system needs: where to write, and the system's description."""

    system: SystemSource
    description: dict[str, Any]
    description_file: SourceFile
    org_name: str
    system_name: str
    ruleset: str


def output_folder(system: SystemSource, out_root: Path) -> Path:
    """Where a system's submission goes: out_root / the organisation's path below the root / ORG / SYSTEM."""
    org = system.org
    parent = out_root / Path(org.rel).parent if org.rel != "." else out_root
    return parent / safe_name(org.name) / safe_name(system.name)


def _context(system: SystemSource) -> Context:
    org = system.org
    where = f"{org.rel}/systems/{system.json_path.name}"
    try:
        raw = read_bytes(system.json_path)
        description = parse_json_text(_text(raw))
    except (SourceError, ValueError, RecursionError) as err:
        raise ConvertError(f"{where}: not a readable system description: {err}") from err
    if not isinstance(description, dict):
        raise ConvertError(f"{where}: expected a JSON object")
    return Context(
        system,
        description,
        file_of(org, system.json_path, raw),
        safe_name(org.name),
        safe_name(system.name),
        org.ruleset or DEFAULT_RULESET,
    )


def convert_system(system: SystemSource, specs: Mapping[str, LoadedSpec], out_root: Path) -> SystemImport | None:
    """Write one system's submission under out_root (output_folder); None when no benchmark of it has a spec."""
    staged = stage_system(system, specs, out_root)
    return None if staged is None else staged.complete()


@dataclass
class StagedSystem:
    """A system converted, its files queued to its staging folder's writer thread; complete() puts it in place."""

    result: SystemImport
    staging: Staging

    def complete(self) -> SystemImport:
        """Wait until every file is written, then move the folder to its output (the writer's error raised here)."""
        try:
            self.staging.finish()
            _replace(self.staging.root, self.result.output)
        finally:
            self.discard()
        return self.result

    def discard(self) -> None:
        """Stop the writer thread and remove the staging folder (nothing is left of it once moved into place)."""
        with contextlib.suppress(BaseException):
            self.staging.finish()  # the writer thread stops before its folder goes
        shutil.rmtree(self.staging.root, ignore_errors=True)


def stage_system(system: SystemSource, specs: Mapping[str, LoadedSpec], out_root: Path) -> StagedSystem | None:
    """Convert one system into a staging folder beside its output; None when no benchmark of it has a spec.

    `specs` maps MLPerf benchmark names (the results folders: resnet, bert, deepcam) to the spec each answers.

    The files are still being written when this returns: `complete()` waits for them and moves the
    folder into place, so the caller may convert the next system meanwhile.
    """
    sources = [b for b in system.benchmarks if b.name in specs and not system.shadowed(b)]
    if not sources:
        return None
    ctx = _context(system)
    output = output_folder(system, out_root)
    result = SystemImport(system, output, [], _notes(system))
    output.parent.mkdir(parents=True, exist_ok=True)
    staging = Staging(Path(tempfile.mkdtemp(prefix=f".{ctx.system_name}.import-", dir=output.parent)), background=True)
    staged = StagedSystem(result, staging)
    try:
        staging.root.chmod(0o755)  # mkdtemp's 0700 would become ORG/SYSTEM's
        for source in sources:
            result.benchmarks.append(_convert_benchmark(ctx, specs[source.name], source, staging))
        first = [
            r.data.log.events[0].time_ms for b in result.benchmarks for r in b.runs if r.data.log and r.data.log.events
        ]
        captured = iso(min(first)) if first else iso(0)
        staging.yaml("system.yaml", system_yaml(ctx.description, ctx.org_name, ctx.system_name, captured))
        staging.json(IMPORT_FILE, _record(ctx, result).model_dump(mode="json"))
        staging.manifest()
    except BaseException:
        staged.discard()
        raise
    return staged


def _notes(system: SystemSource) -> list[str]:
    org, notes = system.org, []
    if org.ruleset is None:
        notes.append(
            f"round unknown (no vN.M in the folder names above {org.rel}): MLPerf ruleset {DEFAULT_RULESET} assumed"
        )
    for name, wanted_name in (("organisation", org.name), ("system", system.name)):
        if safe_name(wanted_name) != wanted_name:
            notes.append(f"{name} {wanted_name!r} is named {safe_name(wanted_name)!r} in specbench")
    return notes


def _replace(staging: Path, output: Path) -> None:
    """Move the finished folder into place; an earlier import of the same system is replaced, nothing else."""
    if output.exists() or output.is_symlink():
        if output.is_symlink() or not (output / IMPORT_FILE).is_file():
            raise ConvertError(f"{output} exists and is not an earlier import (no {IMPORT_FILE}): not replaced")
        old = Path(tempfile.mkdtemp(prefix=f".{output.name}.previous-", dir=output.parent))
        os.replace(output, old)  # onto the empty folder
        os.replace(staging, output)
        shutil.rmtree(old)
    else:
        os.replace(staging, output)


def _record(ctx: Context, result: SystemImport) -> ImportRecord:
    org = ctx.system.org
    return ImportRecord(
        format="specbench.mlperf-import",
        format_version=1,
        source=ImportSource(
            kind="mlperf-hpc" if any(b.record.scaling_mode for b in result.benchmarks) else "mlperf-training",
            round=org.round,
            ruleset=ctx.ruleset,
            org=org.name,
            system=ctx.system.name,
            path=org.rel,
        ),
        system_json=SystemJson(**ctx.description_file.model_dump(), content=ctx.description),
        benchmarks={bench.name: bench.record for bench in result.benchmarks},
    )


def _meta(ctx: Context, loaded: LoadedSpec, level: Level, first: ParsedLog, declared: dict[str, Any]) -> SubmissionMeta:
    spec = loaded.spec
    return SubmissionMeta(
        format_version=1,
        spec_id=spec.id,
        spec_version=spec.version,
        spec_sha256=spec_digest(spec),
        level=level,
        profile="official",
        submitter=ctx.org_name,
        system=ctx.system_name,
        synthetic_data=False,
        hyperparameters=declared,
        dataset=_dataset(first),
    )


def _convert_benchmark(ctx: Context, loaded: LoadedSpec, source: BenchmarkSource, staging: Staging) -> BenchmarkImport:
    spec = loaded.spec
    division = str(ctx.description.get("division", "closed")).strip().lower()
    level: Level = LEVELS.get(division, "system")
    resolved = resolve_once(loaded, "official", level)
    org = ctx.system.org
    findings: list[ImportFinding] = []
    logs: list[tuple[Path, SourceFile, bytes, ParsedLog]] = []
    for path in sorted(source.results, key=lambda p: natural_key(p.name)):
        data = read_bytes(path)
        logs.append((path, file_of(org, path, data), data, parse_log(_text(data))))
    first = logs[0][3] if logs else ParsedLog()
    meta = _meta(ctx, loaded, level, first, declared_hyperparameters(resolved, first))
    staging.yaml(f"{spec.id}/submission.yaml", meta.model_dump(mode="json"))
    power = read_power_folders(org, source.power, node_count(ctx.description), findings)
    usage = spec.mlperf.usage if spec.mlperf is not None else "training"
    dialect = MlperfDialect(ctx.ruleset, source.name, LEVEL_DIVISION[level], usage)
    inputs = RunInputs(resolved, meta, dialect, ctx.description, ctx.system_name)
    folder = source.path.relative_to(org.path).as_posix()
    warning = framework_warning(ctx.description)
    if warning is not None:
        findings.append(ImportFinding(code="SB-MLP-012", file=f"systems/{ctx.system.json_path.name}", message=warning))
    runs = [_write_run(inputs, staging, number, log, power, findings) for number, log in enumerate(logs, start=1)]
    for name in sorted(set(power) - {result_name(p) for p, *_ in logs}, key=natural_key):
        findings.append(
            ImportFinding(
                code="SB-MLP-005",
                file=f"{folder}/power/{name}",
                message=f"expected a result file {name}.txt for this power folder, found none",
            )
        )
    scaling = _scaling(ctx, source, findings)
    verdicts = [
        (path, parsed, run.result.status == "success") for (path, *_, parsed), run in zip(logs, runs, strict=True)
    ]
    published, extra = published_figures(
        source,
        folder,
        verdicts,
        power,
        usage,
        ctx.ruleset,
        LEVEL_DIVISION[level],
        scaling.scaling_factor if scaling else 1.0,
    )
    findings.extend(extra)
    label, unmeasured = energy_label(
        [(run.power, run.result.duration_s) for run in runs],
        node_count(ctx.description),
        any(f.code == "SB-MLP-020" for f in extra),
        folder,
    )
    findings.extend(unmeasured)
    record = ImportedBenchmark(
        mlperf_benchmark=source.name,
        scaling_mode=source.scaling_mode,
        folder=folder,
        runs={run.folder: ImportedRun(result_file=run.source, power=run.power) for run in runs},
        scaling=scaling,
        published=published,
        energy=label,
        ignored=source.ignored + sorted({note for p in power.values() for note in p.ignored}),
        findings=findings,
    )
    return BenchmarkImport(spec.id, source.name, level, runs, record)


LEVEL_DIVISION: dict[Level, str] = {"system": "closed", "hardware": "closed", "free": "open"}


def _write_run(
    inputs: RunInputs,
    staging: Staging,
    number: int,
    log: tuple[Path, SourceFile, bytes, ParsedLog],
    power: dict[str, Any],
    findings: list[ImportFinding],
) -> RunImport:
    path, file, data, parsed = log
    name = result_name(path)
    if power and name not in power:
        findings.append(
            ImportFinding(
                code="SB-MLP-005",
                file=file.path,
                message=f"expected power/{name}/ (other results of this benchmark have power logs), found none",
            )
        )
    run, trace = convert_run(inputs, number, file, parsed, power.get(name), findings)
    folder = f"{inputs.resolved.spec.id}/{run.folder}"
    staging.write(f"{folder}/log.txt", data, sha256=file.sha256)  # the source's bytes, hashed as they were read
    staging.json(f"{folder}/state.json", {"format_version": 1, "status": "done", "started_at": run.result.started_at})
    staging.json(f"{folder}/result.json", run.result.model_dump(mode="json"), indent=None)
    if trace is not None:
        write_trace(staging, folder, trace)
    return run


def _scaling(ctx: Context, source: BenchmarkSource, findings: list[ImportFinding]) -> Scaling | None:
    """scaling.json's factor (MLPerf's published time to train = olympic mean x it), when usable."""
    if source.scaling is None:
        return None
    org = ctx.system.org
    try:
        raw = read_bytes(source.scaling)
        content = parse_json_text(_text(raw))
    except (SourceError, ValueError, RecursionError) as err:
        found = f"a file that is not JSON ({err})"
    else:
        factor = content.get("scaling_factor") if isinstance(content, dict) else None
        if is_number(factor) and 1.0 <= float(factor) <= 10.0:
            return Scaling(file=file_of(org, source.scaling, raw), scaling_factor=float(factor))
        found = f"scaling_factor {show(factor)}" if isinstance(content, dict) else f"a JSON {type(content).__name__}"
    findings.append(
        ImportFinding(
            code="SB-MLP-014",
            file=source.scaling.relative_to(org.path).as_posix(),
            message=f'expected {{"scaling_factor": a number from 1 to 10}} (MLPerf\'s RCP checker never writes '
            f"less than 1), found {found}; the time to train is the unscaled olympic mean",
        )
    )
    return None


def _dataset(log: ParsedLog) -> dict[str, Any]:
    used = {}
    for key in ("train_samples", "eval_samples"):
        event = log.first(key)
        if event is not None and is_int(event.value):
            used[key] = event.value
    return used
