"""Pydantic models of the spec format and of rule sets (`rules/*.yaml`).

These models are the one source of truth: the JSON Schemas in `schemas/` and the reference in
`docs/spec-reference.md` are generated from them.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from specbench.spec.rules import LEVELS, Level, Rule, Scalar

SPEC_FORMAT_VERSION = 1
RULESET_FORMAT_VERSION = 1

LayerName = Literal[
    "hardware",
    "operating_system",
    "driver_firmware",
    "accelerator_libraries",
    "communication",
    "framework",
    "parallelism_precision",
    "workload",
    "problem",
]
LAYER_NAMES: tuple[LayerName, ...] = (
    "hardware",
    "operating_system",
    "driver_firmware",
    "accelerator_libraries",
    "communication",
    "framework",
    "parallelism_precision",
    "workload",
    "problem",
)
Identifier = Field(pattern=r"^[a-z0-9][a-z0-9._-]{0,63}$")


def first_error(err: ValidationError) -> tuple[str, str]:
    """The JSON path ('' at the top) and message of a validation error's first problem, for one-line errors."""
    first = err.errors()[0]
    return ".".join(str(part) for part in first["loc"]), first["msg"]


class Strict(BaseModel):
    """Base of every file-format model: unknown keys are errors.

    Each model's validator is built when the model is first used (`defer_build`): a command uses a few of the
    package's models, and building all of them took a third of the start of `specbench import mlperf`.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, defer_build=True)


class StrictTyped(Strict):
    """Base of the files a run writes and the validator reads (system.yaml, submission.yaml, result.json): no
    value is coerced, so `1.0` or `"1"` where a count goes, or `0` where a flag goes, is a schema error."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True, defer_build=True)


def at(path: str, message: str) -> ValueError:
    """A validation error located at `path` (dotted, relative to the model) rather than at the model."""
    return ValueError(f"@{path} {message}")


class Reference(Strict):
    """A public source for facts in a spec."""

    id: str = Field(pattern=r"^[A-Za-z0-9._-]{1,64}$")
    title: str
    url: str = Field(pattern=r"^https://")
    facts: list[str] = Field(default_factory=list, description="Which facts of the spec this source supports.")


class LayerInfo(Strict):
    """One of the nine layers of an AI system (HPC AI500 V2)."""

    number: int = Field(ge=1, le=9)
    name: LayerName
    title: str
    description: str
    examples: list[str] = Field(default_factory=list)


class LevelInfo(Strict):
    """A benchmarking level: which layers a submitter may change."""

    description: str
    varies: list[LayerName] = Field(description="Layers a submitter may choose freely at this level.")
    forced: list[LayerName] = Field(
        default_factory=list,
        description="Layers that may change only as far as the varied layers force them "
        "(for example a driver the new hardware needs).",
    )
    scaling_rules: bool = Field(
        default=False,
        description="Whether the workload layer follows the reference only within declared scaling rules.",
    )

    @model_validator(mode="after")
    def _problem_never_varies(self) -> LevelInfo:
        if "problem" in self.varies or "problem" in self.forced:
            raise ValueError("layer 9 'problem' (dataset, target quality, epoch budget) never varies")
        return self


LayerRules = dict[str, Rule]
Rules = dict[LayerName, LayerRules]


def _check_layers(layers: list[LayerInfo]) -> None:
    numbers = [layer.number for layer in layers]
    if sorted(numbers) != list(range(1, 10)):
        raise ValueError(f"expected the nine layers numbered 1 to 9, found numbers {sorted(numbers)}")
    for layer in layers:
        expected = LAYER_NAMES[layer.number - 1]
        if layer.name != expected:
            raise ValueError(f"layer {layer.number} must be named {expected!r}, found {layer.name!r}")


class RuleSet(Strict):
    """A shared rule set (`rules/*.yaml`): the nine layers, the levels, and rules common to many specs.

    A released rule set is frozen: a fix is a new version, so an old round is never judged by newer rules.
    """

    format_version: Literal[1] = Field(description="Version of the rule-set file format.")
    id: str = Identifier
    version: str = Field(pattern=r"^\d+(\.\d+){0,2}$")
    title: str
    description: str = ""
    references: list[Reference] = Field(default_factory=list)
    layers: list[LayerInfo]
    levels: dict[Level, LevelInfo]
    rules: Rules = Field(default_factory=dict)

    @model_validator(mode="after")
    def _nine_layers(self) -> RuleSet:
        _check_layers(self.layers)
        return self


class Dataset(Strict):
    """The dataset of layer 9, with its sample counts."""

    name: str
    train_samples: int = Field(gt=0)
    eval_samples: int = Field(ge=0)
    sample_shape: list[int] | None = Field(default=None, description="Shape of one input sample.")
    num_classes: int | None = Field(default=None, gt=0)
    synthetic: bool = Field(default=False, description="Generated data (allowed for throughput and smoke runs).")
    counts_checked: bool = Field(
        default=True,
        description="Whether a log's train_samples and eval_samples must equal these counts. False for MLPerf "
        "benchmarks whose rules leave them free and whose logs carry other counts there (samples or tokens "
        "trained, batches): the counts are then stated, not checked.",
    )
    checksum_sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")


class Variant(Strict):
    """A named model shape (for example an LLM size) selected with `--set model=NAME`."""

    params: dict[str, Scalar]
    flops_per_sample: float | None = Field(default=None, gt=0)
    flops_source: str = Field(
        default="", description="How this variant's flops_per_sample was obtained, where the workload's does not say."
    )
    description: str = ""


class Workload(Strict):
    """What is trained (layer 8's model and layer 9's dataset) and how its FLOPs are counted."""

    task: str
    model: str
    executor: str | None = Field(
        description="Name of the executor that runs this workload; null for a benchmark whose results are only "
        "imported (an MLPerf benchmark specbench does not run): it needs no smoke profile, and FLOPs per sample "
        "only where a sourced count exists (without one, Valid FLOPS is not stated and time to train ranks)."
    )
    dataset: Dataset
    sample_unit: Literal["image", "token", "sample"] = "sample"
    flops_per_sample: float | None = Field(
        default=None,
        gt=0,
        description="Analytical training FLOPs (forward and backward) per sample; a variant may set its own.",
    )
    flops_source: str = Field(default="", description="How flops_per_sample was obtained.")
    flop_accounting: Literal["fixed_problem", "processed"] = Field(
        description="fixed_problem: FLOPs of the epoch budget of layer 9 (the HPC AI500 ranking); "
        "processed: model FLOPs of the samples actually processed."
    )
    variants: dict[str, Variant] = Field(default_factory=dict)


class Quality(Strict):
    """The target quality (layer 9) and how missing it is penalised in Valid FLOPS."""

    metric: str
    target: float
    log_key: str = Field(
        default="eval_accuracy",
        pattern=r"^[a-z][a-z0-9_]{0,63}$",
        description="The MLLOG key whose values are the evaluations of the metric (MLPerf logs use eval_accuracy, "
        "eval_error or averaged_validation_loss, by benchmark).",
    )
    unit: str = Field(default="fraction", description="Unit of the metric, e.g. fraction or nats.")
    direction: Literal["higher", "lower"] = Field(description="Whether higher or lower values are better.")
    penalty_exponent: float = Field(
        ge=0, description="n in Valid FLOPS = FLOPS x (achieved/target)^n (target/achieved when lower is better)."
    )
    cap_ratio: bool = Field(default=True, description="Cap the quality ratio at 1 (no bonus for beating the target).")
    eval_every_epochs: float | None = Field(default=None, gt=0, description="Evaluation cadence in epochs.")
    eval_offset_epochs: float = Field(default=0, ge=0, description="Epoch of the first evaluation minus the cadence.")
    eval_every_steps: int | None = Field(default=None, gt=0, description="Evaluation cadence in optimizer steps.")


class Budget(Strict):
    """The epoch (or step) budget of layer 9: a run that reaches it without the target has failed."""

    epochs: float | None = Field(default=None, gt=0)
    steps: int | None = Field(default=None, gt=0)


class Throughput(Strict):
    """How a throughput benchmark times its work (CARAML style)."""

    warmup_steps: int = Field(ge=0)
    measure_steps: int = Field(gt=0)
    metrics: list[str] = Field(min_length=1, description="Reported metrics, e.g. images_per_s, energy_per_image_j.")
    sweep: dict[str, list[Scalar]] = Field(
        default_factory=dict, description="Sweep axes: each value runs as its own result."
    )


class PowerRequirement(Strict):
    """What a power trace must satisfy."""

    required: bool = Field(description="Whether a ranked result needs measured power.")
    min_sampling_hz: float = Field(gt=0)
    min_samples: int = Field(ge=1)
    window: Literal["timed_region"] = Field(
        default="timed_region", description="Energy is measured from run_start to run_stop."
    )
    scope: Literal["accelerator", "node", "wall"]
    counter_tolerance: float = Field(
        default=0.05, gt=0, description="Allowed relative gap between counter energy and the integrated trace."
    )


class RunsRequirement(Strict):
    """How many runs a result needs and how they are combined."""

    count: int = Field(ge=1)
    aggregation: Literal["olympic", "mean", "median"]
    max_failed: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _olympic_needs_three(self) -> RunsRequirement:
        if self.aggregation == "olympic" and self.count < 3:
            raise at(
                "count",
                f"olympic aggregation drops the fastest and slowest run, so it needs count >= 3, found {self.count}",
            )
        if self.max_failed >= self.count:
            raise at("max_failed", f"expected fewer than count ({self.count}) failed runs, found {self.max_failed}")
        return self


class Measurement(Strict):
    power: PowerRequirement
    runs: RunsRequirement


class Profile(Strict):
    """A scale at which the spec runs; `overrides` is merged into the spec (local keys win)."""

    description: str
    ranked: bool = Field(description="Whether results at this profile may be ranked.")
    overrides: dict[str, Any] = Field(
        default_factory=dict,
        description="Merged into the spec at this profile: workload, quality, budget, throughput, hyperparameters "
        "or measurement. Every profile is validated when the spec loads.",
    )


ScoringMethod = Literal["hpcai500-valid-flops", "mlperf-time-to-train", "caraml-throughput"]
SCORING_METHODS: dict[str, str] = {
    "hpcai500-valid-flops": "HPC AI500 V2: train the whole epoch budget; the quality at its end; Valid FLOPS = "
    "the FLOPs processed / the run's time x (achieved/target)^n, capped at 1; a run below its target is ranked "
    "with its penalty, only crashed, aborted or incomplete runs fail",
    "mlperf-time-to-train": "MLPerf Training: stop at the first evaluation that reaches the target; a run that "
    "never does fails; runs combine by the olympic mean",
    "caraml-throughput": "CARAML: fixed timed steps after warm-up; samples/s, TFLOP/s per device, energy per sample",
}
EpochCounter = Literal["epochs", "samples"]
"""What an MLPerf log's epoch_num counts (MlperfBinding.epoch_num)."""


class ListedResults(Strict):
    """Results of another spec that this spec's leaderboard lists beside its own, under this spec's identity and
    Valid FLOPS, in groups of their own: ranked only among results that followed the same rule."""

    spec: str = Field(
        pattern=r"^[a-z0-9][a-z0-9._-]{0,63}$", description="The id of the spec whose results are listed (any version)."
    )
    variant: str = Field(description="This spec's workload variant (model) the listed results trained.")
    scoring: ScoringMethod = Field(
        description="The rule the listed results followed, which the listed spec's own `scoring` must be; they are "
        "grouped under it and never ranked with results that followed another rule."
    )
    levels: list[Level] = Field(
        min_length=1,
        description="The levels at which a listed result trained the variant's model, so that its FLOPs per sample "
        "apply; a result at another level is listed unranked.",
    )
    description: str = Field(description="How the listed results are scored, in words.")


class MlperfBinding(Strict):
    """The MLPerf benchmark a spec is: its results are imported and judged by the typed port of MLPerf's log rules."""

    usage: Literal["training", "hpc"]
    benchmark: str = Field(
        pattern=r"^[a-z0-9_]{1,64}$", description="MLPerf's name: the results folder, submission_benchmark."
    )
    rulesets: list[str] = Field(
        min_length=1,
        description="MLPerf logging rulesets (rules/mlperf/<usage>-<ruleset>.yaml) whose logs answer this spec.",
    )
    epoch_num: EpochCounter = Field(
        default="epochs",
        description="What the logs' epoch_num (and a block's first_epoch_num) counts: epochs of the training set, "
        "or samples trained in the workload's sample_unit, as MLPerf's BERT, 3D U-Net, GPT-3 (tokens) and OpenFold "
        "logs and their reference convergence points (rcp_checker) count them. A log's samples are this counter "
        "where it counts samples, else the counter x train_samples (an evaluation's samples_count comes first).",
    )

    @model_validator(mode="after")
    def _rulesets(self) -> MlperfBinding:
        for ruleset in self.rulesets:
            if not re.fullmatch(r"\d+\.\d+\.\d+", ruleset):
                raise at("rulesets", f"expected rulesets like 4.1.0, found {ruleset!r}")
        return self


class Spec(Strict):
    """One benchmark: the problem, the reference, the rules per layer and level, and how to measure."""

    format_version: Literal[1] = Field(description="Version of the spec file format.")
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]{0,63}$", description="Stable identifier, e.g. resnet50.")
    version: str = Field(
        pattern=r"^\d+(\.\d+){0,2}$", description="Version of this benchmark; a change of rules is a new version."
    )
    title: str
    description: str = ""
    kind: Literal["time_to_quality", "throughput"] = Field(
        description="time_to_quality: train until the target quality (HPC AI500, MLPerf); "
        "throughput: timed steps after warm-up (CARAML)."
    )
    extends: str | None = Field(
        default=None, description="A rule set or spec this one builds on (path or built-in id)."
    )
    based_on: list[str] = Field(
        default_factory=list, description="Filled in by the loader: `id@version` of every document extended."
    )
    references: list[Reference] = Field(min_length=1, description="Public sources of the facts in the spec.")
    layers: list[LayerInfo] | None = Field(default=None, description="The nine layers; usually inherited via extends.")
    levels: dict[Level, LevelInfo] | None = Field(
        default=None, description="The levels; usually inherited via extends."
    )
    allowed_levels: list[Level] = Field(
        default_factory=lambda: list(LEVELS), description="Levels a submission may claim; the first is the default."
    )
    scoring: ScoringMethod | None = Field(
        default=None,
        description="The methodology's rule the spec is scored by: "
        + "; ".join(f"{k}: {v}" for k, v in SCORING_METHODS.items())
        + ". Specs released before this field leave it out: their kind and flop_accounting decide, as they did.",
    )
    mlperf: MlperfBinding | None = Field(
        default=None, description="The MLPerf benchmark this spec is, for `specbench import mlperf`."
    )
    listed_results: list[ListedResults] | None = Field(
        default=None,
        description="Results of other specs that this spec's leaderboard lists beside its own (an imported MLPerf "
        "benchmark of the same problem), each scored by this spec's Valid FLOPS under the rule it followed.",
    )
    workload: Workload
    quality: Quality | None = Field(default=None, description="Required for time_to_quality specs.")
    budget: Budget = Field(default_factory=Budget, description="The epoch or step budget of layer 9.")
    throughput: Throughput | None = Field(default=None, description="Required for throughput specs.")
    hyperparameters: dict[str, Scalar | list[Scalar]] = Field(
        default_factory=dict, description="The reference hyperparameters of layer 8."
    )
    rules: Rules = Field(
        default_factory=dict,
        description="Per layer, per parameter: the rule a submission's value must satisfy where the layer is fixed.",
    )
    measurement: Measurement
    profiles: dict[str, Profile] = Field(description="Scales the spec runs at; `official` and `smoke` are required.")

    @model_validator(mode="after")
    def _consistent(self) -> Spec:
        if self.layers is None or self.levels is None:
            raise at(
                "extends", "a spec needs `layers` and `levels`: extend a rule set (extends: hpcai500) or define them"
            )
        _check_layers(self.layers)
        missing = [level for level in self.allowed_levels if level not in self.levels]
        if missing:
            raise at("allowed_levels", f"expected levels defined under `levels`, found undefined {missing}")
        if self.kind == "time_to_quality" and self.quality is None:
            raise at("kind", "a time_to_quality spec needs `quality` (metric, target, direction, penalty_exponent)")
        if (
            self.workload.flop_accounting == "fixed_problem"
            and self.budget.epochs is None
            and self.budget.steps is None
        ):
            raise at(
                "workload.flop_accounting",
                "fixed_problem FLOP accounting needs a budget (epochs or steps) to count the problem's FLOPs",
            )
        if self.kind == "throughput" and self.throughput is None:
            raise at("kind", "a throughput spec needs `throughput` (warmup_steps, measure_steps, metrics)")
        self._check_scoring()
        imported_only = self.workload.executor is None
        if imported_only and self.mlperf is None:
            raise at("workload.executor", "only an MLPerf benchmark (`mlperf:`) may name no executor")
        for name in ("official",) if imported_only else ("official", "smoke"):
            if name not in self.profiles:
                raise at("profiles", f"profile {name!r} is required")
        if "smoke" in self.profiles and self.profiles["smoke"].ranked:
            raise at("profiles.smoke.ranked", "the smoke profile is never ranked: set ranked: false")
        if self.workload.flops_per_sample is None and not self.workload.variants and not imported_only:
            raise at("workload", "workload needs flops_per_sample, or variants that set it")
        for name, variant in self.workload.variants.items():
            if variant.flops_per_sample is None and self.workload.flops_per_sample is None:
                raise at(f"workload.variants.{name}", "this variant has no flops_per_sample and the workload sets none")
        model_choice = self.hyperparameters.get("model")
        if self.workload.variants and model_choice not in self.workload.variants:
            known = ", ".join(self.workload.variants)
            raise at(
                "hyperparameters.model", f"expected one of the workload variants ({known}), found {model_choice!r}"
            )
        for index, listed in enumerate(self.listed_results or ()):
            if listed.variant not in self.workload.variants:
                known = ", ".join(self.workload.variants) or "none"
                raise at(
                    f"listed_results.{index}.variant",
                    f"expected one of the workload variants ({known}), found {listed.variant!r}",
                )
        for param, rule in self.rules.get("workload", {}).items():
            other = getattr(rule, "param", None)
            if other is not None and other not in self.hyperparameters:
                raise at(
                    f"rules.workload.{param}.param",
                    f"expected a reference hyperparameter to scale with, found {other!r} (not in hyperparameters)",
                )
        return self

    def _check_scoring(self) -> None:
        method = self.scoring
        if method is None:
            return
        wanted = "throughput" if method == "caraml-throughput" else "time_to_quality"
        if self.kind != wanted:
            raise at("scoring", f"scoring {method} needs kind {wanted}, found kind {self.kind}")
        if method == "hpcai500-valid-flops":
            if self.budget.epochs is None:
                raise at("scoring", "scoring hpcai500-valid-flops trains an epoch budget: set budget.epochs")
            if self.workload.flop_accounting != "processed":
                raise at(
                    "workload.flop_accounting",
                    "scoring hpcai500-valid-flops counts the FLOPs processed over the run's time: flop_accounting: processed",
                )

    @property
    def method(self) -> str:
        """The scoring method: the declared one, or what a spec without the field always meant."""
        if self.scoring is not None:
            return self.scoring
        return "caraml-throughput" if self.kind == "throughput" else "time-to-quality"

    @property
    def trains_whole_budget(self) -> bool:
        """HPC AI500: no stop at the target; the quality is the evaluation at the end of the budget."""
        return self.scoring == "hpcai500-valid-flops"

    def layer_is_fixed(self, layer: LayerName, level: Level) -> bool:
        """Whether a layer must follow the reference at a level."""
        assert self.levels is not None
        info = self.levels[level]
        return layer not in info.varies and layer not in info.forced
