"""Per-run scores: one run's status and the numbers the accounting recomputed from its evidence."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from specbench.scoring.accounting import Accounts, Evidence, Problem, account, quality_ratio, valid_flops

__all__ = ["RunScore", "quality_ratio", "score_run", "valid_flops"]


@dataclass
class RunScore:
    """Every number scored for one run, each with its unit in its name."""

    run: str
    status: str
    reason: str | None
    time_s: float | None
    samples: int | None
    model_flops: float | None
    flops_per_s: float | None
    achieved: float | None
    quality_ratio: float | None
    penalty_factor: float | None
    valid_flops_per_s: float | None
    energy_j: float | None
    mean_power_w: float | None
    valid_flops_per_w: float | None
    samples_per_s: float | None
    tflops_per_device: float | None
    mfu: float | None
    energy_per_sample_j: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def score_run(
    *,
    run: str,
    status: str,
    reason: str | None,
    problem: Problem,
    evidence: Evidence,
    peak_flops_per_device: float | None = None,
) -> RunScore:
    """Score one run from what validation recomputed (times and samples from the log, energy from the trace)."""
    accounts: Accounts = account(problem, evidence, peak_flops_per_device)
    return RunScore(run=run, status=status, reason=reason, **accounts.to_dict())
