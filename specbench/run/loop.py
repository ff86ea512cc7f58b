"""The time-to-quality loop shared by the executors: epochs, MLLOG events, evaluation cadence, stop at target."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from typing import Any

from specbench.accounting.quality import comparison, spec_outcome
from specbench.run.base import RunOutcome
from specbench.run.context import RunContext


def epoch_batches(train: Any, epoch: int) -> Iterable[Any]:
    """One epoch of batches that make their own epochs (`epoch(n)`, as data.imagedata's TensorBatches), or of a
    DataLoader (its distributed sampler told the epoch)."""
    own_epoch = getattr(train, "epoch", None)
    if callable(own_epoch):
        return own_epoch(epoch)  # type: ignore[no-any-return]
    set_epoch = getattr(getattr(train, "sampler", None), "set_epoch", None)
    if set_epoch is not None:
        set_epoch(epoch)
    return train  # type: ignore[no-any-return]


def eval_due(epoch: int, every: float, offset: float, last: bool) -> bool:
    """Evaluate at offset + k x every epochs, and always after the budget's last epoch."""
    cadence = max(1, round(every))
    return last or (epoch > offset and (epoch - offset) % cadence == 0)


def train_to_quality(
    ctx: RunContext,
    *,
    batches: Callable[[int], Iterable[Any]],
    steps_per_epoch: int,
    batch_size: int,
    unit: str,
    step: Callable[[Any, int], object],
    evaluate: Callable[[], float],
    epochs: int | None = None,
) -> RunOutcome:
    """Train epoch by epoch within the spec's budget, evaluating at its cadence, until the target is reached.

    Under HPC AI500's scoring (`spec.trains_whole_budget`) the whole budget is trained whatever the
    quality; the run succeeds at its end, and Valid FLOPS penalises a quality below the target.

    `batches(epoch)` yields the epoch's batches; `step(batch, global_step)` trains on one (and sets
    the learning rate for that step); `evaluate()` returns the quality over the whole evaluation
    split, already summed over ranks. Opens and closes the run's power window (run_start, run_stop).
    `epochs` bounds the run where the spec has no epoch budget (MLPerf's problems have none).
    """
    spec = ctx.resolved.spec
    assert spec.quality is not None and (spec.budget.epochs is not None or epochs is not None)
    c = ctx.log.constants
    budget = epochs if epochs is not None else math.ceil(spec.budget.epochs or 0)
    total_steps = budget * steps_per_epoch
    every, offset = spec.quality.eval_every_epochs or 1.0, spec.quality.eval_offset_epochs
    whole_budget = spec.trains_whole_budget
    done = samples = 0
    reached = False
    quality_text: str | None = None
    ctx.run_start()
    epoch = 0
    for epoch in range(1, budget + 1):
        ctx.log.start(c.EPOCH_START, metadata={"epoch_num": epoch})
        epoch_t0 = time.monotonic()
        for index, batch in enumerate(batches(epoch)):
            step(batch, done)
            done += 1
            samples += batch_size
            ctx.progress.update(
                stage=f"epoch {epoch}/{budget} step {index + 1}/{steps_per_epoch}",
                done=done,
                total=total_steps,
                rate=(index + 1) * batch_size / max(1e-9, time.monotonic() - epoch_t0),
                unit=unit,
                quality=quality_text,
                power_w=ctx.power_now_w(),
            )
        ctx.log.end(c.EPOCH_STOP, metadata={"epoch_num": epoch})
        if eval_due(epoch, every, offset, epoch == budget):
            ctx.log.start(c.EVAL_START, metadata={"epoch_num": epoch})
            value = evaluate()
            reached = ctx.evaluated(epoch=epoch, step=done, samples=samples, value=value)
            ctx.log.end(c.EVAL_STOP, metadata={"epoch_num": epoch})
            quality_text = f"{spec.quality.metric} {value:.4f}/{spec.quality.target}"
            ctx.progress.update(
                stage=f"epoch {epoch}/{budget} evaluated",
                done=done,
                total=total_steps,
                rate=None,
                unit=unit,
                quality=quality_text,
                power_w=ctx.power_now_w(),
                force=True,
            )
            if reached and not whole_budget:
                break
    success = reached or whole_budget
    ctx.run_stop(success=success)
    quality = spec_outcome(spec, [p.value for p in ctx.curve])
    reason = None
    if not success:
        best = quality.best if quality.best is not None else float("nan")
        op = comparison(spec.quality.direction)
        reason = (
            f"target {spec.quality.metric} {op} {spec.quality.target} not reached in {budget} epochs; best {best:.4f}"
        )
    return RunOutcome(
        status="success" if success else "failed",
        samples=samples,
        steps=done,
        epochs=float(epoch),
        reached=quality.met,
        reason=reason,
    )
