"""One run from its folder to its result: state.json, the MLLOG log, the power window, setup and training.

A run that fails or is interrupted closes its window, logs run_stop 'aborted' and writes its
result as incomplete, all without waiting for the other ranks (a collective they may never reach
would hang the job): the failed process ends, and torchrun stops the others. An interrupted run's
state.json names the signal (`interrupted_by`), so the next execute runs it again (runfolder).
"""

from __future__ import annotations

import signal
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from specbench.errors import SpecbenchError
from specbench.files import atomic_write_json, write_manifest
from specbench.run.base import RunOutcome
from specbench.run.config import RunConfig
from specbench.run.context import RunContext
from specbench.run.mllog import NullLog, RunLog, write_header
from specbench.run.request import Job, RunCrashed, RunInterrupted
from specbench.run.result import RunEvidence, compute_result, failure_reason, power_result, summary_line
from specbench.run.runfolder import RunFolder
from specbench.run.runpower import collect_job_trace, run_sampler
from specbench.spec.result import RunResult

INTERRUPTING = (signal.SIGTERM, signal.SIGHUP)
"""Signals that interrupt a run as Ctrl-C does (SIGINT is Python's KeyboardInterrupt), unless ignored (nohup)."""


@contextmanager
def signals_as_interrupts() -> Iterator[None]:
    def handler(signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        raise RunInterrupted(f"interrupted by {name}", name)

    previous = {sig: signal.getsignal(sig) for sig in INTERRUPTING}
    for sig, old in previous.items():
        if old is not signal.SIG_IGN:
            signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, old in previous.items():
            if old is not signal.SIG_IGN:
                signal.signal(sig, old)


def sync_fn(device: str) -> Callable[[], None]:
    if device == "cuda":
        import torch

        return torch.cuda.synchronize
    return lambda: None


def run_once(
    job: Job, config: RunConfig, run_dir: Path, number: int, seed: int, replaces: dict[str, Any] | None = None
) -> RunResult:
    """Execute run `number` into `run_dir` and return its result (written by rank 0); raise when it did not complete.

    `replaces` is what an interrupted attempt at this run number recorded; the new state.json keeps it."""
    dist, request = job.dist, job.request
    folder = RunFolder(run_dir, seed, dist.writer, devices=dist.world, device_kind=job.device, replaces=replaces)
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
            job.progress.phase("building the model and data...")
            state = job.executor.setup(ctx)
            ctx.log.end(ctx.log.constants.INIT_STOP)
            outcome = job.executor.train(ctx, state)
    except (KeyboardInterrupt, RunInterrupted) as err:
        failure = err if isinstance(err, RunInterrupted) else RunInterrupted("interrupted by Ctrl-C (SIGINT)", "SIGINT")
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
    interrupted_by = failure.signal_name if isinstance(failure, RunInterrupted) else None
    folder.close("done" if failure is None else "incomplete", result.reason, interrupted_by)
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
