"""The quality outcome of a run: whether it met its target, its best value, and the value it is credited with.

One rule for every layer: the executor's loop and result.json, the validator's log check, MLPerf's log
rules and the scorer call these pure functions; none of them compares a value with a target itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from specbench.spec.models import Spec

Direction = Literal["higher", "lower"]
Credit = Literal["best", "last", "first_met"]

CREDIT_BY_SCORING: dict[str, Credit] = {"hpcai500-valid-flops": "last", "mlperf-time-to-train": "first_met"}
"""HPC AI500 credits the evaluation at the end of the budget, MLPerf the first to reach the target; others the best."""


@dataclass(frozen=True)
class QualityOutcome:
    """What a run's evaluations show against its target (all None and not met when there are none)."""

    met: bool
    """By the credit rule: the last evaluation meets the target ("last"), or any one does."""
    best: float | None
    """The best evaluation by the metric's direction."""
    credited: float | None
    """The value the run is credited with: what Valid FLOPS penalises and the leaderboard shows."""
    last: float | None
    """The last evaluation (result.json's `achieved`)."""


def meets(value: float, target: float, direction: Direction) -> bool:
    """Whether `value` reaches `target`: at or above it when higher is better, at or below it otherwise."""
    return value >= target if direction == "higher" else value <= target


def comparison(direction: Direction) -> str:
    """The operator a message states the target with."""
    return ">=" if direction == "higher" else "<="


def best_value(values: Sequence[float], direction: Direction) -> float | None:
    """The highest value (higher is better) or the lowest (lower is better); None when there are none."""
    if not values:
        return None
    return max(values) if direction == "higher" else min(values)


def first_met(values: Sequence[float], target: float, direction: Direction) -> int | None:
    """The index of the first value that meets the target, or None when none does."""
    return next((i for i, value in enumerate(values) if meets(value, target, direction)), None)


def credit_rule(scoring: str | None) -> Credit:
    """The credit rule of a scoring method (specs without one are credited with their best evaluation)."""
    return CREDIT_BY_SCORING.get(scoring or "", "best")


def quality_outcome(
    values: Sequence[float], target: float, direction: Direction, credit: Credit = "best"
) -> QualityOutcome:
    """The outcome of the evaluations `values`, in the order they were made, by the credit rule `credit`."""
    if not values:
        return QualityOutcome(met=False, best=None, credited=None, last=None)
    best = best_value(values, direction)
    first = first_met(values, target, direction)
    if credit == "last":
        return QualityOutcome(meets(values[-1], target, direction), best, values[-1], values[-1])
    credited = values[first] if credit == "first_met" and first is not None else best
    return QualityOutcome(first is not None, best, credited, values[-1])


def spec_outcome(spec: Spec, values: Sequence[float]) -> QualityOutcome:
    """The outcome by the spec's target, direction and its scoring method's credit rule."""
    quality = spec.quality
    if quality is None:
        raise ValueError(f"spec {spec.id} has no quality target, so its runs have no quality outcome")
    return quality_outcome(values, quality.target, quality.direction, credit_rule(spec.scoring))
