"""Training pieces every workload shares that need no torch: warm-up steps, a throughput run's timed steps, and
the warm-up plus cosine learning rate."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from specbench.run.base import RunOutcome
from specbench.run.context import RunContext
from specbench.spec.result import ThroughputResult


class StepClock(Protocol):
    """Times each training step without synchronising inside the loop (the median read after a synchronize)."""

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def median_s(self) -> float | None: ...


def _no_detail(result: Any) -> str:
    return ""


@dataclass(frozen=True)
class TimedSteps:
    """A throughput run's training step and what the timed loop reports of it.

    `step()` trains one optimizer step on `samples_per_step` samples (over every process) and returns what
    `describe` turns into the progress line's suffix (e.g. the loss); `train_samples` turns samples into
    epochs; `evaluate()`, where given, returns the held-out quality every `quality.eval_every_steps` steps.
    """

    step: Callable[[], object]
    samples_per_step: int
    train_samples: int
    unit: str
    describe: Callable[[Any], str] = _no_detail
    clock: StepClock | None = None
    evaluate: Callable[[], float] | None = None


def warm_up(ctx: RunContext, steps: int, step: Callable[[], object], unit: str) -> None:
    """Train `steps` untimed steps before the run's window opens, reporting each on the progress line, and how
    long they took (torch.compile's compiling and tuning happen here)."""
    started = time.perf_counter()
    for index in range(steps):
        step()
        ctx.progress.update(
            stage=f"warm-up {index + 1}/{steps}",
            done=index + 1,
            total=None,
            rate=None,
            unit=unit,
            power_w=ctx.power_now_w(),
        )
    if steps:
        ctx.progress.message(f"warm-up: {steps} steps in {time.perf_counter() - started:.1f} s")


def timed_steps(ctx: RunContext, run: TimedSteps) -> RunOutcome:
    """The spec's measured steps between run_start and run_stop, as one MLLOG block; samples/s over the window.

    The device is synchronised only where progress is reported (every fifth of the steps, the last one, and
    after each evaluation), so the steps queue back to back.
    """
    throughput, quality = ctx.resolved.spec.throughput, ctx.resolved.spec.quality
    assert throughput is not None
    c = ctx.log.constants
    steps = throughput.measure_steps
    every = quality.eval_every_steps if quality is not None and run.evaluate is not None else None
    report_every = max(1, steps // 5)
    reached = False
    quality_text: str | None = None
    samples = 0
    ctx.run_start()
    ctx.log.start(c.BLOCK_START, metadata={"first_epoch_num": 1, "samples_count": steps * run.samples_per_step})
    t0 = time.monotonic()
    for step in range(1, steps + 1):
        result = _clocked(run)
        samples += run.samples_per_step
        evaluated = every is not None and step % every == 0
        if evaluated:
            assert run.evaluate is not None and quality is not None
            value = run.evaluate()
            epoch = samples / run.train_samples
            reached = ctx.evaluated(epoch=epoch, step=step, samples=samples, value=value) or reached
            quality_text = f"{quality.metric} {value:.4f}/{quality.target}"
        elif step % report_every and step != steps:
            continue
        ctx.sync()
        ctx.progress.update(
            stage=f"step {step}/{steps}{run.describe(result)}",
            done=step,
            total=steps,
            rate=samples / max(1e-9, time.monotonic() - t0),
            unit=run.unit,
            quality=quality_text,
            power_w=ctx.power_now_w(),
            force=evaluated,
        )
    ctx.log.end(c.BLOCK_STOP, metadata={"first_epoch_num": 1, "samples_count": samples})
    ctx.run_stop(success=True)
    duration = (ctx.stopped_mono or 0) - (ctx.started_mono or 0)
    return RunOutcome(
        status="success",
        samples=samples,
        steps=steps,
        epochs=samples / run.train_samples,
        reached=reached,
        throughput=ThroughputResult(
            warmup_steps=throughput.warmup_steps,
            timed_steps=steps,
            samples_per_s=samples / duration if duration > 0 else 0.0,
            step_time_s_median=run.clock.median_s() if run.clock is not None else None,
        ),
    )


def _clocked(run: TimedSteps) -> object:
    if run.clock is None:
        return run.step()
    run.clock.start()
    result = run.step()
    run.clock.stop()
    return result


def linear_warmup(step: int, warmup_steps: int, peak: float) -> float:
    """The rate of 0-based `step` rising linearly to `peak` at the last warm-up step."""
    return peak * (step + 1) / warmup_steps


def cosine_decay(step: int, decay_steps: int, peak: float, floor: float = 0.0) -> float:
    """Half a cosine from `peak` at step 0 down to `floor` at `decay_steps`, and `floor` after that."""
    progress = min(1.0, step / max(1, decay_steps))
    return floor + 0.5 * (peak - floor) * (1 + math.cos(math.pi * progress))


def warmup_cosine(step: int, *, peak: float, warmup_steps: int, total_steps: int, floor: float = 0.0) -> float:
    """Linear warm-up over `warmup_steps`, then cosine decay to `floor` at `total_steps` (0-based `step`)."""
    if step < warmup_steps:
        return linear_warmup(step, warmup_steps, peak)
    return cosine_decay(step - warmup_steps, total_steps - warmup_steps, peak, floor)
