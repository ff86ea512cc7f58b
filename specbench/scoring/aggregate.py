"""Combining runs as a spec says: olympic mean (drop the fastest and the slowest), mean or median.

A run that failed to reach its target counts as infinitely slow, as in MLPerf: under the olympic
mean it is the slowest run and is dropped, so one failure (the spec's `max_failed`) is tolerated.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from specbench.scoring.metrics import RunScore

Aggregation = Literal["olympic", "mean", "median"]
VALID_FLOPS_ORDER = "hpcai500-valid-flops"
"""Runs of an HPC AI500 spec order by Valid FLOPS: below-target runs are penalised, not failed."""
METRICS = (
    "time_s",
    "model_flops",
    "flops_per_s",
    "achieved",
    "quality_ratio",
    "penalty_factor",
    "valid_flops_per_s",
    "energy_j",
    "mean_power_w",
    "valid_flops_per_w",
    "samples_per_s",
    "tflops_per_device",
    "mfu",
    "energy_per_sample_j",
)
"""The report keys of a run's score (RunScore.to_dict) that aggregate over the runs used."""


def olympic_mean(values: Sequence[float]) -> float:
    """Mean after dropping one lowest and one highest value (needs at least 3 values)."""
    if len(values) < 3:
        raise ValueError(f"the olympic mean needs at least 3 values, found {len(values)}")
    ordered = sorted(values)
    return math.fsum(ordered[1:-1]) / (len(ordered) - 2)


@dataclass
class Aggregate:
    """The combined value of each metric, the runs it used, and the spread of the primary metric."""

    values: dict[str, float | None]
    used: list[str]
    dropped: list[str]
    spread: tuple[float, float, float] | None
    problem: str | None = None
    notes: list[str] = field(default_factory=list)
    spread_metric: str = "time_s"
    """The metric of `spread` (and the ordering): time_s, samples_per_s or valid_flops_per_s."""
    brief: str | None = None
    """`problem` in a few words, for the tables (the failed runs' reasons are on the entry's page)."""


def _order_key(score: RunScore, kind: str) -> float:
    """Slow first is +inf for failures; for throughput, lower rate counts as 'slower'."""
    if score.status != "success":
        return math.inf
    if kind == "throughput":
        return -(score.samples_per_s or 0.0)
    if kind == VALID_FLOPS_ORDER:
        return -(score.valid_flops_per_s or 0.0)
    return score.time_s if score.time_s is not None else math.inf


def aggregate(scores: Sequence[RunScore], method: Aggregation, kind: str, max_failed: int, required: int) -> Aggregate:
    """Combine completed runs (success or failed); incomplete runs never count."""
    completed = [s for s in scores if s.status in ("success", "failed")]
    failed = [s for s in completed if s.status == "failed"]
    problem = brief = None
    if len(completed) < required:
        problem = f"{len(completed)} completed runs, the spec requires {required}"
    elif len(failed) > max_failed:
        reasons = "; ".join(f"{s.run}: {s.reason or 'failed'}" for s in failed)
        problem = f"{len(failed)} runs failed ({reasons}), the spec allows {max_failed}"
        brief = f"{len(failed)} runs failed, the spec allows {max_failed}"
    ordered = sorted(completed, key=lambda s: _order_key(s, kind))
    if method == "olympic" and len(ordered) >= 3:
        used, dropped = ordered[1:-1], [ordered[0], ordered[-1]]
    else:
        used, dropped = [s for s in ordered if s.status == "success"], [s for s in ordered if s.status != "success"]
    if any(s.status != "success" for s in used) and problem is None:
        problem = "a failed run remains after dropping the slowest; too many runs failed"
        brief = "too many runs failed"
    reported = [s.to_dict() for s in used if s.status == "success"]
    values: dict[str, float | None] = {}
    for metric in METRICS:
        series = [numbers[metric] for numbers in reported]
        if not series or any(v is None for v in series):
            values[metric] = None
            continue
        numbers = [float(v) for v in series]
        values[metric] = statistics.median(numbers) if method == "median" else math.fsum(numbers) / len(numbers)
    primary = {"throughput": "samples_per_s", VALID_FLOPS_ORDER: "valid_flops_per_s"}.get(kind, "time_s")
    series = sorted(float(v) for s in completed if s.status == "success" and (v := getattr(s, primary)) is not None)
    spread = (series[0], statistics.median(series), series[-1]) if series else None
    used_runs, dropped_runs = [s.run for s in used], [s.run for s in dropped]
    return Aggregate(values, used_runs, dropped_runs, spread, problem, spread_metric=primary, brief=brief)
