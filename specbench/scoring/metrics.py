"""Per-run scores: one run's status and the numbers the accounting recomputed from its evidence."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from specbench.accounting.accounts import Accounts, Evidence, Problem, account, quality_ratio, valid_flops

__all__ = ["RunScore", "quality_ratio", "score_run", "valid_flops"]


@dataclass(frozen=True)
class RunScore(Accounts):
    """One run's status and every number the accounting recomputed for it, each with its unit in its name."""

    run: str
    status: str
    reason: str | None

    @classmethod
    def of(cls, accounts: Accounts, *, run: str, status: str, reason: str | None) -> RunScore:
        """The run's score from the numbers the accounting recomputed for it."""
        numbers = {f.name: getattr(accounts, f.name) for f in fields(Accounts)}
        return cls(run=run, status=status, reason=reason, **numbers)

    def to_dict(self) -> dict[str, Any]:
        numbers = super().to_dict()
        return {"run": numbers.pop("run"), "status": numbers.pop("status"), "reason": numbers.pop("reason"), **numbers}


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
    return RunScore.of(account(problem, evidence, peak_flops_per_device), run=run, status=status, reason=reason)
