"""The one accounting: time, samples, FLOPs, rates, Valid FLOPS, energy and per-watt values from the evidence.

The executor writes result.json with it, the validator recomputes every number of result.json with
it from the log, the trace, the spec and system.yaml, the scorer ranks only what it recomputed, and
the MLPerf importer uses it too. Nothing here reads a file or imports torch.

Valid FLOPS (HPC AI500 V2) = FLOPS x q^n, where q = credited/target for higher-is-better metrics
(target/credited for lower-is-better), capped at 1 when the spec says so, and n is the spec's
penalty exponent; the credited quality is the one accounting.quality credits by the scoring method
(HPC AI500 calls it the achieved quality). Valid FLOPS per watt = Valid FLOPS / mean power over the
timed window, which equals valid FLOPs per joule.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from specbench.accounting.quality import Direction
from specbench.spec.models import EpochCounter
from specbench.spec.resolve import ResolvedSpec

REPORT_KEYS = {"credited": "achieved"}
"""Report keys that differ from the attribute: reports and leaderboards have always said `achieved`."""


def quality_ratio(credited: float, target: float, direction: Direction, cap: bool = True) -> float:
    """credited/target (higher is better) or target/credited (lower is better), capped at 1 if `cap`."""
    if credited <= 0 or target <= 0 or not math.isfinite(credited):
        return 0.0
    ratio = credited / target if direction == "higher" else target / credited
    return min(1.0, ratio) if cap else ratio


def valid_flops(
    flops_per_s: float, credited: float, target: float, direction: Direction, exponent: float, cap: bool = True
) -> float:
    """FLOPS x quality_ratio^n: full credit at the target, a steep penalty below it."""
    return flops_per_s * quality_ratio(credited, target, direction, cap) ** exponent


@dataclass(frozen=True)
class Quality:
    target: float
    direction: Direction
    penalty_exponent: float
    cap_ratio: bool


@dataclass(frozen=True)
class Problem:
    """What the spec (at its profile, with the declared hyperparameters) fixes for the numbers."""

    kind: str
    flops_per_sample: float | None
    accounting: str
    train_samples: int
    budget_epochs: float | None
    budget_steps: int | None
    samples_per_step: int | None
    """Samples of one optimiser step: global batch (x sequence length where a sample is a token)."""
    timed_steps: int | None
    quality: Quality | None
    eval_key: str = "eval_accuracy"
    """The MLLOG key of the evaluations (spec quality.log_key)."""
    epoch_num: EpochCounter = "epochs"
    """What the log's epoch_num counts (spec mlperf.epoch_num): epochs of the training set, or samples."""

    @classmethod
    def of(cls, resolved: ResolvedSpec, hyperparameters: Mapping[str, Any]) -> Problem:
        spec = resolved.spec
        quality = None
        if spec.kind == "time_to_quality" and spec.quality is not None:
            q = spec.quality
            quality = Quality(q.target, q.direction, q.penalty_exponent, q.cap_ratio)
        return cls(
            kind=spec.kind,
            flops_per_sample=spec_flops_per_sample(resolved, hyperparameters),
            accounting=spec.workload.flop_accounting,
            train_samples=spec.workload.dataset.train_samples,
            budget_epochs=spec.budget.epochs,
            budget_steps=spec.budget.steps,
            samples_per_step=samples_per_step(spec.workload.sample_unit, hyperparameters),
            timed_steps=spec.throughput.measure_steps if spec.throughput is not None else None,
            quality=quality,
            eval_key=spec.quality.log_key if spec.quality is not None else "eval_accuracy",
            epoch_num=spec.mlperf.epoch_num if spec.mlperf is not None else "epochs",
        )

    def counter_samples(self, counter: float) -> float:
        """Samples trained at a log's epoch counter: the counter where it counts samples, else counter x the
        training set."""
        return counter if self.epoch_num == "samples" else counter * self.train_samples

    @property
    def problem_samples(self) -> float | None:
        """Samples of the whole budget (layer 9): epochs x the training set, or steps x the step's samples."""
        if self.budget_epochs is not None:
            return self.train_samples * self.budget_epochs
        if self.budget_steps is not None and self.samples_per_step is not None:
            return float(self.budget_steps * self.samples_per_step)
        return None

    @property
    def expected_timed_samples(self) -> int | None:
        """Samples a throughput run's timed steps process: timed steps x the step's samples."""
        if self.kind != "throughput" or self.timed_steps is None or self.samples_per_step is None:
            return None
        return self.timed_steps * self.samples_per_step

    def model_flops(self, samples: int | None) -> float | None:
        """FLOPs by the spec's accounting: the budget's problem (fixed_problem) or the samples processed."""
        if self.flops_per_sample is None:
            return None
        if self.accounting == "fixed_problem":
            problem = self.problem_samples
            return self.flops_per_sample * problem if problem is not None else None
        return self.flops_per_sample * samples if samples is not None else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def samples_per_step(sample_unit: str, hyperparameters: Mapping[str, Any]) -> int | None:
    batch = _int(hyperparameters.get("global_batch_size"))
    if batch is None:
        return None
    if sample_unit == "token":
        sequence = _int(hyperparameters.get("sequence_length"))
        return batch * sequence if sequence is not None else None
    return batch


def spec_flops_per_sample(resolved: ResolvedSpec, hyperparameters: Mapping[str, Any]) -> float | None:
    """The spec's FLOPs per sample, of the model variant the hyperparameters choose."""
    workload = resolved.spec.workload
    model = hyperparameters.get("model")
    variant = workload.variants.get(model) if isinstance(model, str) else None
    if variant is not None and variant.flops_per_sample is not None:
        return variant.flops_per_sample
    return workload.flops_per_sample


@dataclass(frozen=True)
class Evidence:
    """What one run's evidence shows: the log's window and samples, the trace's energy, the devices."""

    duration_s: float | None
    samples: int | None
    credited: float | None
    """The quality the scoring method credits the run with (accounting.quality)."""
    energy_j: float | None
    devices: int


@dataclass(frozen=True)
class Accounts:
    """Every number of one run, each with its unit in its name."""

    time_s: float | None
    samples: int | None
    model_flops: float | None
    flops_per_s: float | None
    credited: float | None
    """The quality the run is credited with, under the report key `achieved`."""
    quality_ratio: float | None
    penalty_factor: float | None
    """quality_ratio^n: what Valid FLOPS multiplies FLOPS by (1 at or above the target)."""
    valid_flops_per_s: float | None
    energy_j: float | None
    mean_power_w: float | None
    valid_flops_per_w: float | None
    samples_per_s: float | None
    tflops_per_device: float | None
    mfu: float | None
    energy_per_sample_j: float | None

    def to_dict(self) -> dict[str, Any]:
        """The numbers under their report keys (REPORT_KEYS)."""
        return {REPORT_KEYS.get(key, key): value for key, value in asdict(self).items()}


def computed_flops_per_s(
    flops_per_sample: float | None, samples: int | None, time_s: float | None, devices: int = 1
) -> float | None:
    """FLOPs per sample x samples processed / time / devices: the rate a run computed, whatever its accounting ranks.

    Physics bounds it by the peak and the roofline places it; under `fixed_problem` it is not `flops_per_s`.
    """
    if not flops_per_sample or not samples or not time_s:
        return None
    return flops_per_sample * samples / time_s / devices


def _ratio(num: float | None, den: float | None) -> float | None:
    return num / den if num is not None and den else None


def account(problem: Problem, evidence: Evidence, peak_flops_per_device: float | None = None) -> Accounts:
    """All of one run's numbers from its evidence and its problem."""
    time_s = evidence.duration_s if evidence.duration_s and evidence.duration_s > 0 else None
    flops = problem.model_flops(evidence.samples)
    rate = _ratio(flops, time_s)
    ratio = valid = penalty = None
    if problem.quality is not None:
        q = problem.quality
        if evidence.credited is not None:
            ratio = quality_ratio(evidence.credited, q.target, q.direction, q.cap_ratio)
            penalty = ratio**q.penalty_exponent
            valid = rate * penalty if rate is not None else None
    else:
        valid = rate
    mean_power = _ratio(evidence.energy_j, time_s)
    per_device = _ratio(rate, evidence.devices)
    return Accounts(
        time_s=time_s,
        samples=evidence.samples,
        model_flops=flops,
        flops_per_s=rate,
        credited=evidence.credited,
        quality_ratio=ratio,
        penalty_factor=penalty,
        valid_flops_per_s=valid,
        energy_j=evidence.energy_j,
        mean_power_w=mean_power,
        valid_flops_per_w=_ratio(valid, mean_power),
        samples_per_s=_ratio(float(evidence.samples) if evidence.samples is not None else None, time_s),
        tflops_per_device=per_device / 1e12 if per_device is not None else None,
        mfu=_ratio(per_device, peak_flops_per_device),
        energy_per_sample_j=_ratio(evidence.energy_j, evidence.samples),
    )
