"""One run from its folder to its result: state.json, the MLLOG log, the power window, setup and training.

A run that fails or is interrupted closes its window, logs run_stop 'aborted' and writes its
result as incomplete, all without waiting for the other ranks (a collective they may never reach
would hang the job): the failed process ends, and torchrun stops the others.
"""

from __future__ import annotations

import json
import signal
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType
from typing import Any

from specbench.errors import SpecbenchError
from specbench.files import atomic_write_json, write_manifest
from specbench.power.base import PowerError
from specbench.power.scopes import device_scopes
from specbench.power.trace import read_metadata
from specbench.run.base import RunOutcome
from specbench.run.config import RunConfig
from specbench.run.context import RunContext
from specbench.run.mllog import NullLog, RunLog, write_header
from specbench.run.request import Job, RunCrashed, RunInterrupted
from specbench.run.result import RunEvidence, compute_result, failure_reason, power_result, summary_line
from specbench.run.runfolder import RunFolder
from specbench.run.runpower import collect_job_trace, run_sampler
from specbench.spec.result import PowerResult, QualityPoint, RunResult


@contextmanager
def signals_as_interrupts() -> Iterator[None]:
    def handler(signum: int, frame: FrameType | None) -> None:
        raise RunInterrupted(f"interrupted by {signal.Signals(signum).name}")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def sync_fn(device: str) -> Callable[[], None]:
    if device == "cuda":
        import torch

        return torch.cuda.synchronize
    return lambda: None


def run_once(job: Job, config: RunConfig, run_dir: Path, number: int, seed: int) -> RunResult:
    """Execute run `number` into `run_dir` and return its result (written by rank 0); raise when it did not complete."""
    dist, request = job.dist, job.request
    folder = RunFolder(run_dir, seed, dist.writer, devices=dist.world, device_kind=job.device)
    folder.open()
    dist.barrier()
    log: RunLog | NullLog = RunLog(run_dir / "log.txt") if dist.writer else NullLog()
    sampler = run_sampler(job.meters, dist, run_dir, request.interval_ms)
    ctx = RunContext(
        job.resolved, config, job.device, seed, run_dir, log, job.progress, request.data, request.synthetic,
        sync_fn(job.device), sampler, dist, checkpoint=folder.checkpoint,
    )  # fmt: skip
    outcome, failure = _setup_and_train(job, ctx)
    if failure is None:
        try:
            ctx.window = collect_job_trace(dist, sampler, ctx.window, run_dir)
        except Exception as err:  # a node that fails now leaves the run without its trace: incomplete
            failure = err
    evidence = RunEvidence(
        number, seed, folder.started_at, ctx.started_wall, _duration(ctx), ctx.curve, dist.world, job.device,
        request.synthetic,
    )  # fmt: skip
    scope = job.resolved.spec.measurement.power.scope
    power = power_result(ctx.window, job.meters, scope, job.unmeasured)
    reason = failure_reason(failure) if failure is not None else None
    result = compute_result(job.resolved, config, evidence, outcome, reason, power)
    if not dist.writer:
        if failure is not None:
            raise _rank_failure(failure, dist.rank, number, result)
        return result
    _finish(job, folder, log, result, failure)
    return result


def _setup_and_train(job: Job, ctx: RunContext) -> tuple[RunOutcome | None, BaseException | None]:
    """setup inside init_start..init_stop, then train; a failure closes the window before sampling stops."""
    outcome: RunOutcome | None = None
    failure: BaseException | None = None
    sampler = ctx.sampler
    try:
        with signals_as_interrupts():
            if sampler is not None:
                sampler.start()
            log_header(ctx.log, job, ctx.config, ctx.seed)
            state = job.executor.setup(ctx)
            ctx.log.end(ctx.log.constants.INIT_STOP)
            outcome = job.executor.train(ctx, state)
    except (KeyboardInterrupt, RunInterrupted) as err:
        failure = err if isinstance(err, RunInterrupted) else RunInterrupted("interrupted by Ctrl-C (SIGINT)")
    except BaseException as err:  # the run is marked incomplete with its reason, then the error is reported
        failure = err
    if failure is not None:
        ctx.abort()
    if sampler is not None:
        sampler.stop()
    return outcome, failure


def _duration(ctx: RunContext) -> float | None:
    if ctx.stopped_mono is None or ctx.started_mono is None:
        return None
    return ctx.stopped_mono - ctx.started_mono


def _rank_failure(failure: BaseException, rank: int, number: int, result: RunResult) -> BaseException:
    """The error a rank other than 0 ends with: its rank and reason in one line, the same exit code."""
    if isinstance(failure, SpecbenchError):
        return failure
    return RunCrashed(f"rank {rank}: run {number} did not complete: {result.reason}")


def _finish(
    job: Job, folder: RunFolder, log: RunLog | NullLog, result: RunResult, failure: BaseException | None
) -> None:
    """Rank 0: result.json, the final state, the summary line; after a failure error.txt and the manifest."""
    run_dir = folder.path
    atomic_write_json(run_dir / "result.json", result.model_dump(mode="json"))
    folder.close("done" if failure is None else "incomplete", result.reason)
    log.close()
    job.progress.message(summary_line(result, run_dir))
    if failure is None:
        return
    if not isinstance(failure, (RunInterrupted, SpecbenchError)):
        (run_dir / "error.txt").write_text("".join(traceback.format_exception(failure)))
    write_manifest(job.request.out)
    if isinstance(failure, SpecbenchError):
        raise failure
    raise RunCrashed(
        f"run {result.run} did not complete: {result.reason} (details: {run_dir / 'error.txt'})"
    ) from failure


def log_header(log: RunLog | NullLog, job: Job, config: RunConfig, seed: int) -> None:
    """The MLLOG lines before training: submission facts, init_start, seed, dataset sizes, hyperparameters."""
    dataset = job.resolved.spec.workload.dataset
    write_header(
        log,
        job.resolved,
        config.hyperparameters,
        job.org,
        job.system,
        seed,
        (dataset.train_samples, dataset.eval_samples),
    )


def recover_killed(job: Job, config: RunConfig) -> Callable[[Path, int, dict[str, Any]], dict[str, Any]]:
    """The result.json of a run killed outright, from what its state.json recorded (runfolder.Recover)."""

    def recover(run_dir: Path, number: int, state: dict[str, Any]) -> dict[str, Any]:
        scope = job.resolved.spec.measurement.power.scope
        devices = _traced_devices(run_dir, scope)
        kept = " (its trace up to the kill is in power.csv)" if devices is not None else ""
        evidence = RunEvidence(
            number=number,
            seed=int(state["seed"]),
            started_at=str(state.get("started_at") or ""),
            started_wall=_number(state.get("run_start_wall")),
            curve=[QualityPoint.model_validate(p) for p in state.get("curve") or []][: _evaluations(run_dir)],
            devices=int(state.get("devices") or job.dist.world),
            device_kind=str(state.get("device_kind") or job.device),
            synthetic=job.request.synthetic,
        )
        power = PowerResult(
            measured=False,
            reason=f"not measured: the run was killed before run_stop{kept}",
            scope=scope if devices is not None else None,  # type: ignore[arg-type]
            devices=devices or [],
        )
        result = compute_result(job.resolved, config, evidence, None, str(state["reason"]), power)
        return result.model_dump(mode="json")

    return recover


def _traced_devices(run_dir: Path, scope: str) -> list[str] | None:
    """The devices of the spec's scope in a killed run's trace (None without a readable trace)."""
    try:
        metadata = read_metadata(run_dir)
    except PowerError:
        return None
    devices = [d for meter in metadata.get("meters", []) for d in meter.get("devices", []) if isinstance(d, dict)]
    wanted = device_scopes(scope, (str(d.get("scope")) for d in devices))
    return [str(d.get("key")) for d in devices if d.get("scope") in wanted]


def _evaluations(run_dir: Path) -> int:
    """eval_accuracy lines in a run's log: the curve points a killed run's result may claim."""
    try:
        text = (run_dir / "log.txt").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return 0
    count = 0
    for line in text.splitlines():
        if line.startswith(":::MLLOG "):
            with suppress(ValueError):
                event = json.loads(line[len(":::MLLOG ") :])
                count += isinstance(event, dict) and event.get("key") == "eval_accuracy"
    return count


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
