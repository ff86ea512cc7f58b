"""One MLPerf system's results as a specbench submission folder (ORG/SYSTEM), written atomically.

Per benchmark that a spec answers (resnet -> mlperf-resnet50): submission.yaml with the
hyperparameters the first run logged, and per result file one run folder with the log verbatim,
state.json, result.json (what the validator's own log reading shows, so that validation agrees by
construction) and, where node power logs exist, power.csv and power.json. import.json records every
source file with its sha256; manifest.json signs the folder. The source tree is only read.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from specbench.files import atomic_write_bytes, atomic_write_json, atomic_write_yaml, write_manifest
from specbench.mlperf.check import declared_hyperparameters
from specbench.mlperf.power import (
    NodeTrace,
    PowerLog,
    build_trace,
    check_markers,
    coverage,
    device_key,
    interconnect,
    parse_power_log,
    window_energy,
    write_trace,
)
from specbench.mlperf.source import (
    NODE,
    BenchmarkSource,
    SourceError,
    SystemSource,
    natural_key,
    read_bytes,
    result_name,
    source_file,
)
from specbench.mlperf.system import accelerator_count, node_count, safe_name, system_yaml
from specbench.spec.loader import LoadedSpec, spec_digest
from specbench.spec.resolve import ResolvedSpec, resolve
from specbench.spec.result import PowerResult, QualityPoint, QualityResult, RunResult
from specbench.spec.rules import Level
from specbench.spec.system import SubmissionMeta
from specbench.validator.documents import parse_json_text
from specbench.validator.findings import Findings
from specbench.validator.logcheck import LogCheck
from specbench.validator.mllog import ParsedLog, parse_log
from specbench.validator.mlperf import (
    IMPORT_FILE,
    MLPERF_BENCHMARKS,
    ImportedBenchmark,
    ImportedPower,
    ImportedRun,
    ImportFinding,
    ImportRecord,
    ImportSource,
    MlperfDialect,
    SourceFile,
    SystemJson,
)
from specbench.validator.model import RunData
from specbench.validator.results import flops_per_sample
from specbench.validator.values import is_int, is_number

DEFAULT_RULESET = "4.0.0"
LEVELS: dict[str, Level] = {"closed": "system", "open": "free"}


class ConvertError(Exception):
    """A system that cannot be imported at all (its description is unreadable)."""


@dataclass
class RunImport:
    """One run: its source log, what the log shows, and how power.csv rows map back to node log lines."""

    folder: str
    source: SourceFile
    data: RunData
    result: RunResult
    power: ImportedPower | None = None
    csv_rows: list[tuple[str, int]] = field(default_factory=list)
    epochs: float | None = None


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


def _iso(time_ms: float) -> str:
    return datetime.fromtimestamp(time_ms / 1000.0, tz=timezone.utc).isoformat().replace("+00:00", "Z")


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


@dataclass
class Context:
    """What converting one system needs: the spec, where to write, and the system's description."""

    spec: LoadedSpec
    system: SystemSource
    description: dict[str, Any]
    org_name: str
    system_name: str
    ruleset: str


def convert_system(
    system: SystemSource, spec: LoadedSpec, out_root: Path, taken: dict[Path, str] | None = None
) -> SystemImport | None:
    """Write one system's submission under out_root; None when no benchmark of it has a spec.

    `taken` maps output folders already written in this import to their source, so that two
    systems whose names clean up alike never overwrite each other.
    """
    org = system.org
    try:
        description = parse_json_text(_text(read_bytes(system.json_path)))
    except (SourceError, ValueError, RecursionError) as err:
        raise ConvertError(
            f"{org.rel}/systems/{system.json_path.name}: not a readable system description: {err}"
        ) from err
    if not isinstance(description, dict):
        raise ConvertError(f"{org.rel}/systems/{system.json_path.name}: expected a JSON object")
    ctx = Context(
        spec, system, description, safe_name(org.name), safe_name(system.name), org.ruleset or DEFAULT_RULESET
    )
    wanted = MLPERF_BENCHMARKS.get(spec.spec.id)
    sources = [b for b in system.benchmarks if b.name == wanted]
    if not sources:
        return None
    parent = out_root / Path(org.rel).parent if org.rel != "." else out_root
    output = parent / ctx.org_name / ctx.system_name
    if taken is not None and output.resolve() in taken:
        raise ConvertError(f"its folder {output} is already taken by {taken[output.resolve()]}")
    result = SystemImport(system, output, [])
    if org.ruleset is None:
        result.notes.append(f"round unknown (no vN.M folder above {org.rel}): MLPerf ruleset {DEFAULT_RULESET} assumed")
    for name, wanted_name in (("organisation", org.name), ("system", system.name)):
        if safe_name(wanted_name) != wanted_name:
            result.notes.append(f"{name} {wanted_name!r} is named {safe_name(wanted_name)!r} in specbench")
    with tempfile.TemporaryDirectory(prefix=f".{ctx.system_name}.import-", dir=_mkdir(output.parent)) as tmp:
        staging = Path(tmp) / ctx.system_name
        for source in sources:
            result.benchmarks.append(_convert_benchmark(ctx, source, staging))
        first = [
            r.data.log.events[0].time_ms for b in result.benchmarks for r in b.runs if r.data.log and r.data.log.events
        ]
        captured = _iso(min(first)) if first else _iso(0)
        atomic_write_yaml(staging / "system.yaml", system_yaml(description, ctx.org_name, ctx.system_name, captured))
        atomic_write_json(staging / IMPORT_FILE, _record(ctx, result).model_dump(mode="json"))
        for path in staging.rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        write_manifest(staging)
        (staging / "manifest.json").chmod(0o644)
        _replace(staging, output)
    return result


def _mkdir(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _replace(staging: Path, output: Path) -> None:
    """Move the finished folder into place; an earlier import of the same system is replaced, nothing else."""
    if output.exists() or output.is_symlink():
        if output.is_symlink() or not (output / IMPORT_FILE).is_file():
            raise ConvertError(f"{output} exists and is not an earlier import (no {IMPORT_FILE}): not replaced")
        old = staging.parent / "previous"
        os.replace(output, old)
        os.replace(staging, output)
        shutil.rmtree(old)
    else:
        os.replace(staging, output)


def _record(ctx: Context, result: SystemImport) -> ImportRecord:
    data = read_bytes(ctx.system.json_path)
    org = ctx.system.org
    return ImportRecord(
        format="specbench.mlperf-import",
        format_version=1,
        source=ImportSource(
            kind="mlperf-training",
            round=org.round,
            ruleset=ctx.ruleset,
            org=org.name,
            system=ctx.system.name,
            path=org.rel,
        ),
        system_json=SystemJson(**source_file(org, ctx.system.json_path, data).model_dump(), content=ctx.description),
        benchmarks={bench.name: bench.record for bench in result.benchmarks},
    )


def _convert_benchmark(ctx: Context, source: BenchmarkSource, staging: Path) -> BenchmarkImport:
    spec = ctx.spec.spec
    division = str(ctx.description.get("division", "closed")).strip().lower()
    level: Level = LEVELS.get(division, "system")
    resolved = resolve(ctx.spec, "official", level)
    org = ctx.system.org
    findings: list[ImportFinding] = []
    logs: list[tuple[Path, SourceFile, bytes, ParsedLog]] = []
    for path in sorted(source.results, key=lambda p: natural_key(p.name)):
        data = read_bytes(path)
        logs.append((path, source_file(org, path, data), data, parse_log(_text(data))))
    first = logs[0][3] if logs else ParsedLog()
    declared = declared_hyperparameters(resolved, first)
    meta = SubmissionMeta(
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
    bench_dir = staging / spec.id
    atomic_write_yaml(bench_dir / "submission.yaml", meta.model_dump(mode="json"))
    power = _power_folders(ctx, source, findings)
    dialect = MlperfDialect(ctx.ruleset, source.name, "open" if level == "free" else "closed")
    runs = []
    for number, (path, file, data, log) in enumerate(logs, start=1):
        name = result_name(path)
        if power and name not in power:
            findings.append(
                ImportFinding(
                    code="SB-MLP-005",
                    file=file.path,
                    message=f"expected power/{name}/ (other results of {source.name} have power logs), found none",
                )
            )
        run, trace = _convert_run(ctx, resolved, meta, dialect, number, file, log, power.get(name), findings)
        run_dir = bench_dir / run.folder
        atomic_write_bytes(run_dir / "log.txt", data)
        atomic_write_json(
            run_dir / "state.json", {"format_version": 1, "status": "done", "started_at": run.result.started_at}
        )
        atomic_write_json(run_dir / "result.json", run.result.model_dump(mode="json"))
        if trace is not None:
            write_trace(run_dir, trace)
        runs.append(run)
    folder = source.path.relative_to(org.path).as_posix()
    for name in sorted(set(power) - {result_name(p) for p, *_ in logs}, key=natural_key):
        findings.append(
            ImportFinding(
                code="SB-MLP-005",
                file=f"{folder}/power/{name}",
                message=f"expected a result file {name}.txt for this power folder, found none",
            )
        )
    record = ImportedBenchmark(
        mlperf_benchmark=source.name,
        folder=folder,
        runs={run.folder: ImportedRun(result_file=run.source, power=run.power) for run in runs},
        ignored=source.ignored + sorted({note for p in power.values() for note in p.ignored}),
        findings=findings,
    )
    return BenchmarkImport(spec.id, source.name, level, runs, record)


def _dataset(log: ParsedLog) -> dict[str, Any]:
    used = {}
    for key in ("train_samples", "eval_samples"):
        event = log.first(key)
        if event is not None and is_int(event.value):
            used[key] = event.value
    return used


@dataclass
class RunPower:
    """The power folder of one result: node logs by device key, interconnect estimates, other files."""

    folder: str
    nodes: dict[str, PowerLog]
    switches: list[PowerLog]
    ignored: list[str]


def _power_folders(ctx: Context, source: BenchmarkSource, findings: list[ImportFinding]) -> dict[str, RunPower]:
    """Every power/result_* folder, with MLPerf's naming and completeness rules checked."""
    if source.power is None:
        return {}
    org = ctx.system.org
    nodes_wanted = node_count(ctx.description)
    out: dict[str, RunPower] = {}
    for folder in sorted(
        (p for p in source.power.iterdir() if p.is_dir() and not p.is_symlink()), key=lambda p: natural_key(p.name)
    ):
        rel = folder.relative_to(org.path).as_posix()
        found: dict[str, list[tuple[int, Path]]] = {"node": [], "sw": []}
        ignored = []
        for path in sorted(folder.iterdir(), key=lambda p: natural_key(p.name)):
            match = NODE.match(path.name)
            if match and path.is_file() and not path.is_symlink():
                found[match.group(1)].append((int(match.group(2)), path))
            else:
                ignored.append(f"power/{folder.name}/{path.name}: not a node_N.txt or sw_N.txt power log")
        for kind, files in found.items():
            indices = sorted(index for index, _ in files)
            if indices != list(range(len(files))):
                names = ", ".join(p.name for _, p in files)
                wanted = f"{kind}_0.txt" + (f" to {kind}_{len(files) - 1}.txt" if len(files) > 1 else "")
                findings.append(
                    ImportFinding(
                        code="SB-MLP-005",
                        file=rel,
                        message=f"expected {wanted} (MLPerf's power checker numbers them from 0), found {names}",
                    )
                )
        if len(found["node"]) != nodes_wanted:
            findings.append(
                ImportFinding(
                    code="SB-MLP-005",
                    file=rel,
                    message=f"expected one node log per node ({nodes_wanted}, number_of_nodes of the system), "
                    f"found {len(found['node'])}",
                )
            )
        nodes = {}
        for _, path in sorted(found["node"]):
            log = _read_power(org, path, findings)
            if log is not None:
                check_markers(log)
                if not log.readings:
                    log.problem("SB-MLP-005", "expected power_reading events, found none")
                findings.extend(log.problems)
                nodes[device_key(path.name)] = log
        switches = [log for _, path in sorted(found["sw"]) if (log := _read_power(org, path, findings)) is not None]
        for switch in switches:
            findings.extend(switch.problems)
        out[folder.name] = RunPower(rel, nodes, switches, ignored)
    return out


def _read_power(org: Any, path: Path, findings: list[ImportFinding]) -> PowerLog | None:
    try:
        data = read_bytes(path)
    except SourceError as err:
        rel = path.relative_to(org.path).as_posix()
        findings.append(
            ImportFinding(code="SB-MLP-005", file=rel, message=f"expected a readable power log, found: {err}")
        )
        return None
    return parse_power_log(_text(data), source_file(org, path, data))


def _convert_run(
    ctx: Context,
    resolved: ResolvedSpec,
    meta: SubmissionMeta,
    dialect: MlperfDialect,
    number: int,
    file: SourceFile,
    log: ParsedLog,
    power: RunPower | None,
    findings: list[ImportFinding],
) -> tuple[RunImport, NodeTrace | None]:
    """What one log shows, read by the validator's own log checks in MLPerf's dialect, as result.json."""
    folder = f"run_{number}"
    data = RunData(folder, number, f"{resolved.spec.id}/{folder}")
    LogCheck(log, f"{data.folder}/log.txt", data, Findings(), resolved, meta, False, dialect).run_all()
    run = RunImport(folder, file, data, _result(ctx, resolved, meta, data, log), epochs=_epochs(log))
    trace = None
    if power is not None and power.nodes:
        trace = build_trace(power.nodes, ctx.system_name)
        run.csv_rows = trace.rows
        run.power = ImportedPower(
            folder=power.folder,
            nodes={key: node.file for key, node in power.nodes.items()},
            interconnect=[interconnect(sw) for sw in power.switches],
            conversion_eff={k: n.conversion_eff for k, n in power.nodes.items() if n.conversion_eff is not None},
        )
        run.result.power = _power_result(resolved, data, trace, run.power, findings)
    elif power is not None:
        run.result.power = PowerResult(measured=False, reason=f"{power.folder} holds no node power log")
    return run, trace


def _power_result(
    resolved: ResolvedSpec, data: RunData, trace: NodeTrace, record: ImportedPower, findings: list[ImportFinding]
) -> PowerResult:
    start, stop = data.run_start_ms, data.run_stop_ms
    if start is None or stop is None:
        return PowerResult(measured=False, reason="the log has no run_start..run_stop window to take energy over")
    record.coverage = [coverage(key, node, start, stop) for key, node in trace.logs.items()]
    energy = window_energy(trace, resolved.spec.measurement.power, start, stop)
    duration = (stop - start) / 1000.0
    if energy.energy_j is None:
        findings.append(
            ImportFinding(
                code="SB-MLP-005",
                file=record.folder,
                message=f"expected node readings between run_start and run_stop of {data.folder}, found: {energy.reason}",
            )
        )
        return PowerResult(measured=False, reason=f"no energy over run_start..run_stop: {energy.reason}")
    return PowerResult(
        measured=True,
        scope="node",
        meters=["mlperf"],
        devices=energy.devices,
        energy_j=energy.energy_j,
        mean_power_w=energy.energy_j / duration if duration > 0 else None,
        method="integrated",
        trace_files=["power.csv", "power.json"],
    )


def _epochs(log: ParsedLog) -> float | None:
    """Epochs trained up to run_stop: the highest epoch an evaluation, epoch or block names (counted from 1)."""
    stop = log.first("run_stop")
    values: list[float] = []
    for event in log:
        if stop is not None and event.line > stop.line:
            break
        meta = event.metadata
        if event.key in ("eval_accuracy", "eval_stop", "epoch_stop") and is_number(meta.get("epoch_num")):
            values.append(float(meta["epoch_num"]))
        elif (
            event.key == "block_stop" and is_number(meta.get("first_epoch_num")) and is_number(meta.get("epoch_count"))
        ):
            values.append(float(meta["first_epoch_num"]) + float(meta["epoch_count"]) - 1)
    return max(values) if values else None


def _log_int(log: ParsedLog, key: str) -> int | None:
    event = log.first(key)
    return event.value if event is not None and is_int(event.value) else None


def _result(ctx: Context, resolved: ResolvedSpec, meta: SubmissionMeta, data: RunData, log: ParsedLog) -> RunResult:
    spec = resolved.spec
    quality = spec.quality
    assert quality is not None
    train = _log_int(log, "train_samples") or spec.workload.dataset.train_samples
    batch = _log_int(log, "global_batch_size")
    epochs = _epochs(log)
    samples = round(epochs * train) if epochs is not None else None
    per_sample = flops_per_sample(resolved, meta) or 0.0
    model_flops = per_sample * samples if samples is not None else None
    duration = data.duration_s
    start_ms = data.run_start_ms if data.run_start_ms is not None else (log.events[0].time_ms if log.events else 0.0)
    curve = [
        QualityPoint(
            epoch=e.epoch,
            step=round(e.epoch * train / batch) if batch else 0,
            samples=round(e.epoch * train),
            value=e.value,
            t_s=(e.time_ms - start_ms) / 1000.0,
        )
        for e in data.evaluations
    ]
    description = ctx.description
    return RunResult(
        format_version=1,
        spec_id=spec.id,
        spec_version=spec.version,
        spec_sha256=meta.spec_sha256,
        kind=spec.kind,
        profile=resolved.profile,
        level=resolved.level,
        run=data.number,
        status=data.status,
        reason=data.reason,
        seed=data.seed if data.seed is not None else 0,
        started_at=_iso(start_ms),
        duration_s=duration,
        epochs=epochs,
        steps=round(samples / batch) if samples is not None and batch else None,
        samples_processed=samples,
        sample_unit=spec.workload.sample_unit,
        devices=accelerator_count(description) or 1,
        device_kind=str(description.get("accelerator_model_name") or "unknown"),
        synthetic_data=False,
        flops_per_sample=per_sample,
        flop_accounting=spec.workload.flop_accounting,
        model_flops=model_flops,
        flops_per_s=model_flops / duration if model_flops is not None and duration else None,
        quality=QualityResult(
            metric=quality.metric,
            target=quality.target,
            direction=quality.direction,
            achieved=data.evaluations[-1].value if data.evaluations else None,
            best=data.best,
            reached=bool(data.reached),
            curve=curve,
        ),
        power=PowerResult(measured=False, reason="the MLPerf submission has no power logs for this result"),
        hyperparameters=dict(meta.hyperparameters),
    )
