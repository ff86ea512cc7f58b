"""Per-run scores: time to quality, energy, FLOPs by the spec's accounting, Valid FLOPS and Valid FLOPS per watt.

Valid FLOPS (HPC AI500 V2) = FLOPS x q^n, where q = achieved/target for higher-is-better metrics
(target/achieved for lower-is-better), capped at 1 when the spec says so, and n is the spec's
penalty exponent. Valid FLOPS per watt = Valid FLOPS / mean power over the timed window, which
equals valid FLOPs per joule.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Literal

Direction = Literal["higher", "lower"]


def quality_ratio(achieved: float, target: float, direction: Direction, cap: bool = True) -> float:
    """achieved/target (higher is better) or target/achieved (lower is better), capped at 1 if `cap`."""
    if achieved <= 0 or target <= 0 or not math.isfinite(achieved):
        return 0.0
    ratio = achieved / target if direction == "higher" else target / achieved
    return min(1.0, ratio) if cap else ratio


def valid_flops(
    flops_per_s: float, achieved: float, target: float, direction: Direction, exponent: float, cap: bool = True
) -> float:
    """FLOPS x quality_ratio^n: full credit at the target, a steep penalty below it."""
    return flops_per_s * quality_ratio(achieved, target, direction, cap) ** exponent


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
    time_s: float | None,
    samples: int | None,
    flops_per_sample: float,
    accounting: str,
    problem_samples: float | None,
    quality: dict[str, Any] | None,
    achieved: float | None,
    energy_j: float | None,
    devices: int,
    peak_flops_per_device: float | None,
) -> RunScore:
    """Score one run from what validation recomputed (times from the log, energy from the trace)."""
    if accounting == "fixed_problem" and problem_samples is not None:
        model_flops: float | None = flops_per_sample * problem_samples
    else:
        model_flops = flops_per_sample * samples if samples is not None else None
    flops = model_flops / time_s if model_flops is not None and time_s else None
    ratio = valid = None
    if quality is not None and achieved is not None and flops is not None:
        ratio = quality_ratio(achieved, quality["target"], quality["direction"], quality["cap_ratio"])
        valid = flops * ratio ** quality["penalty_exponent"]
    elif quality is None:
        valid = flops
    mean_power = energy_j / time_s if energy_j is not None and time_s else None
    per_device = flops / devices / 1e12 if flops is not None and devices else None
    return RunScore(
        run=run,
        status=status,
        reason=reason,
        time_s=time_s,
        samples=samples,
        model_flops=model_flops,
        flops_per_s=flops,
        achieved=achieved,
        quality_ratio=ratio,
        valid_flops_per_s=valid,
        energy_j=energy_j,
        mean_power_w=mean_power,
        valid_flops_per_w=valid / mean_power if valid is not None and mean_power else None,
        samples_per_s=samples / time_s if samples is not None and time_s else None,
        tflops_per_device=per_device,
        mfu=flops / devices / peak_flops_per_device if flops is not None and peak_flops_per_device else None,
        energy_per_sample_j=energy_j / samples if energy_j is not None and samples else None,
    )
