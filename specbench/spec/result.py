"""`result.json`: what an executor computed for one run (the validator recomputes it from the log and trace)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from specbench.spec.models import StrictTyped
from specbench.spec.rules import Level, Scalar

RESULT_FORMAT_VERSION = 1
RunStatus = Literal["success", "failed", "incomplete"]


class QualityPoint(StrictTyped):
    """One evaluation: when, and the value of the quality metric."""

    epoch: float
    step: int
    samples: int
    value: float
    t_s: float = Field(description="Seconds since run_start.")


class QualityResult(StrictTyped):
    metric: str
    target: float
    direction: Literal["higher", "lower"]
    achieved: float | None = Field(description="The last evaluated value (the best for a failed run is in `best`).")
    best: float | None
    reached: bool
    curve: list[QualityPoint] = Field(default_factory=list)


class ThroughputResult(StrictTyped):
    warmup_steps: int
    timed_steps: int
    samples_per_s: float
    step_time_s_median: float | None = None


class PowerResult(StrictTyped):
    """Energy over the timed window (run_start to run_stop), or why it was not measured."""

    measured: bool
    reason: str | None = Field(default=None, description="Why power was not measured; set when measured is false.")
    scope: Literal["accelerator", "node", "wall"] | None = None
    meters: list[str] = Field(default_factory=list)
    devices: list[str] = Field(default_factory=list, description="Identities of the measured devices.")
    energy_j: float | None = None
    mean_power_w: float | None = None
    method: Literal["counter", "integrated", "mixed"] | None = None
    trace_files: list[str] = Field(default_factory=list)


class RunResult(StrictTyped):
    """One run of one benchmark."""

    format_version: Literal[1]
    spec_id: str
    spec_version: str
    spec_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    kind: Literal["time_to_quality", "throughput"]
    profile: str
    level: Level
    run: int = Field(ge=1)
    status: RunStatus
    reason: str | None = Field(default=None, description="Why a run failed or is incomplete.")
    seed: int
    started_at: str = Field(description="ISO 8601 wall time of run_start.")
    duration_s: float | None = Field(default=None, ge=0, description="run_start to run_stop, seconds.")
    epochs: float | None = Field(default=None, ge=0)
    steps: int | None = Field(default=None, ge=0)
    samples_processed: int | None = Field(default=None, ge=0)
    sample_unit: Literal["image", "token", "sample"]
    devices: int = Field(ge=1, description="Accelerators (or CPU processes) that trained.")
    device_kind: str = Field(description="cuda, cpu, ...")
    synthetic_data: bool
    flops_per_sample: float | None = Field(
        gt=0, description="The spec's FLOPs per sample; null where the spec states none (an imported MLPerf benchmark)."
    )
    flop_accounting: Literal["fixed_problem", "processed"]
    model_flops: float | None = Field(default=None, ge=0, description="FLOPs by the spec's accounting.")
    flops_per_s: float | None = Field(default=None, ge=0)
    quality: QualityResult | None = None
    throughput: ThroughputResult | None = None
    power: PowerResult
    hyperparameters: dict[str, Scalar | list[Scalar] | None]
    settings: dict[str, Scalar | None] = Field(
        default_factory=dict, description="Executor options recorded in layers 6 and 7 (precision, compile, ...)."
    )
