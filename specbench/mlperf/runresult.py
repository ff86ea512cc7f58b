"""One imported MLPerf run: what its log shows (read by the validator's own log checks) as result.json.

The log is read by `LogCheck` in MLPerf's dialect, so validation agrees with result.json by
construction; the node power logs of the result become one trace, and the energy is taken over
run_start..run_stop by the validator's own window code. Readings out of time order are reported
here (SB-MLP-009), where the timed window is known.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from specbench.accounting.accounts import Evidence, Problem, account
from specbench.formats.mllog import ParsedLog
from specbench.formats.mlperf_import import ImportedPower, ImportFinding, MlperfDialect, SourceFile
from specbench.mlperf.power import NodeTrace, build_trace, coverage, interconnect, window_energy
from specbench.mlperf.powerfiles import RunPower
from specbench.mlperf.system import accelerator_count
from specbench.spec.resolve import ResolvedSpec
from specbench.spec.result import PowerResult, QualityPoint, QualityResult, RunResult
from specbench.spec.system import SubmissionMeta
from specbench.validator.evidence import log_counted_samples, log_epochs, log_samples
from specbench.validator.findings import Findings
from specbench.validator.logcheck import LogCheck
from specbench.validator.model import RunData
from specbench.validator.values import is_int


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


@dataclass(frozen=True)
class RunInputs:
    """What converting one run of a benchmark needs besides its log."""

    resolved: ResolvedSpec
    meta: SubmissionMeta
    dialect: MlperfDialect
    description: dict[str, Any]
    system_name: str


def iso(time_ms: float) -> str:
    return datetime.fromtimestamp(time_ms / 1000.0, tz=timezone.utc).isoformat().replace("+00:00", "Z")


def convert_run(
    inputs: RunInputs,
    number: int,
    file: SourceFile,
    log: ParsedLog,
    power: RunPower | None,
    findings: list[ImportFinding],
) -> tuple[RunImport, NodeTrace | None]:
    """What one log shows, read by the validator's own log checks in MLPerf's dialect, as result.json."""
    folder = f"run_{number}"
    resolved = inputs.resolved
    path = f"{resolved.spec.id}/{folder}"
    reading = LogCheck(log, f"{path}/log.txt", Findings(), resolved, inputs.meta, False, inputs.dialect).run_all()
    data = RunData.of_log(folder, number, path, reading)
    result = _result(inputs, data, log)
    run = RunImport(folder, file, data, result, epochs=result.epochs)
    trace = None
    if power is not None and power.nodes:
        _report_step_backs(power, data, findings)
        trace = build_trace(power.nodes, inputs.system_name)
        run.csv_rows = trace.rows
        run.power = ImportedPower(
            folder=power.folder,
            nodes={key: node.file for key, node in power.nodes.items()},
            interconnect=[interconnect(sw) for sw in power.switches],
            conversion_eff={k: n.conversion_eff for k, n in power.nodes.items() if n.conversion_eff is not None},
        )
        run.result.power = _power_result(resolved, data, trace, run.power, findings)
    elif power is not None:
        run.result.power = PowerResult(measured=False, scope="node", reason=f"{power.folder} holds no node power log")
    return run, trace


def _report_step_backs(power: RunPower, data: RunData, findings: list[ImportFinding]) -> None:
    """SB-MLP-009 for each reading a node log has out of time order, saying where it lies against the run."""
    for log in power.nodes.values():
        for back in log.step_backs:
            findings.append(
                ImportFinding(
                    code="SB-MLP-009",
                    file=log.file.path,
                    line=back.line,
                    message=f"expected power readings in time order, found the reading of line {back.line} "
                    f"{back.after_ms - back.time_ms:g} ms before that of line {back.after_line} above it; "
                    f"read in time order ({_against_run(back.time_ms, data)})",
                )
            )


def _against_run(time_ms: float, data: RunData) -> str:
    start, stop = data.run_start_ms, data.run_stop_ms
    if start is None or stop is None:
        return "the log has no timed run"
    if time_ms < start:
        return f"{(start - time_ms) / 1000:.3f} s before run_start, outside the timed run"
    if time_ms > stop:
        return f"{(time_ms - stop) / 1000:.3f} s after run_stop, outside the timed run"
    return f"{(time_ms - start) / 1000:.3f} s after run_start, inside the timed run"


def _power_result(
    resolved: ResolvedSpec, data: RunData, trace: NodeTrace, record: ImportedPower, findings: list[ImportFinding]
) -> PowerResult:
    start, stop = data.run_start_ms, data.run_stop_ms
    if start is None or stop is None:
        return PowerResult(
            measured=False, scope="node", reason="the log has no run_start..run_stop window to take energy over"
        )
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
        return PowerResult(measured=False, scope="node", reason=f"no energy over run_start..run_stop: {energy.reason}")
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


def epochs_trained(log: ParsedLog, problem: Problem, train: int) -> float | None:
    """Epochs trained up to run_stop, as the validator's evidence reads them (the one accounting); a log whose
    epoch counter counts samples (spec mlperf.epoch_num) in epochs of `train` samples."""
    if problem.epoch_num == "samples":
        samples = log_counted_samples(log)
        return samples / train if samples is not None else None
    return log_epochs(log)


def _log_int(log: ParsedLog, key: str) -> int | None:
    event = log.first(key)
    return event.value if event is not None and is_int(event.value) else None


def _curve(data: RunData, log: ParsedLog, train: int, start_ms: float) -> list[QualityPoint]:
    batch = _log_int(log, "global_batch_size")
    return [
        QualityPoint(
            epoch=e.epoch,
            step=round(e.epoch * train / batch) if batch else 0,
            samples=round(e.epoch * train),
            value=e.value,
            t_s=(e.time_ms - start_ms) / 1000.0,
        )
        for e in data.evaluations
    ]


def _result(inputs: RunInputs, data: RunData, log: ParsedLog) -> RunResult:
    resolved, meta = inputs.resolved, inputs.meta
    spec = resolved.spec
    quality = spec.quality
    assert quality is not None
    train = _log_int(log, "train_samples") or spec.workload.dataset.train_samples
    batch = _log_int(log, "global_batch_size")
    problem = Problem.of(resolved, meta.hyperparameters)
    epochs = epochs_trained(log, problem, train)
    samples = log_samples(data, problem)  # the validator's own reading: the last evaluation's count, else epochs
    per_sample = problem.flops_per_sample
    duration = data.duration_s
    accounts = account(
        problem, Evidence(duration, samples, data.credited, None, accelerator_count(inputs.description) or 1)
    )
    start_ms = data.run_start_ms if data.run_start_ms is not None else (log.events[0].time_ms if log.events else 0.0)
    description = inputs.description
    return RunResult(
        format_version=1,
        **resolved.result_header(meta.spec_sha256),
        run=data.number,
        status=data.status,
        reason=data.reason,
        seed=data.seed if data.seed is not None else 0,
        started_at=iso(start_ms),
        duration_s=duration,
        epochs=epochs,
        steps=round(samples / batch) if samples is not None and batch else None,
        samples_processed=samples,
        devices=accelerator_count(description) or 1,
        device_kind=str(description.get("accelerator_model_name") or "unknown"),
        synthetic_data=False,
        flops_per_sample=per_sample,
        model_flops=accounts.model_flops,
        flops_per_s=accounts.flops_per_s,
        quality=QualityResult(
            metric=quality.metric,
            target=quality.target,
            direction=quality.direction,
            achieved=data.evaluations[-1].value if data.evaluations else None,
            best=data.best,
            reached=bool(data.reached),
            curve=_curve(data, log, train, start_ms),
        ),
        power=PowerResult(measured=False, reason="the MLPerf submission has no power logs for this result"),
        hyperparameters=dict(meta.hyperparameters),
    )
