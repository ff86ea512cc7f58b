"""The parameters each executor reads, by name: what a spec, a `--set` and a submission may name for it.

The executors (specbench/workloads) give each parameter its type, default and help and import torch;
these names are what the spec loader and the validator check against without it. A test
(tests/test_executor_params.py) keeps the two in sync: each executor's options are its settings here, in
the same layers, and each default it records is one of its hyperparameters here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from specbench.registry import Registry, did_you_mean
from specbench.spec.models import LayerName


@dataclass(frozen=True)
class ExecutorParams:
    """One executor's parameters: layer 8 hyperparameters, settings of the other layers, and retired names."""

    executor: str
    hyperparameters: frozenset[str]
    settings: Mapping[str, LayerName]
    """The executor's options (`--set` names outside layer 8), each with the layer it is recorded in."""
    retired: frozenset[str] = field(default_factory=frozenset)
    """Names that released specs or earlier submissions state and this executor no longer reads: accepted, so that
    they keep loading and validating, never offered as a suggestion."""

    def known(self) -> list[str]:
        """The names the executor reads (hyperparameters and settings), sorted."""
        return sorted(self.hyperparameters | set(self.settings))

    def knows(self, name: str) -> bool:
        return name in self.hyperparameters or name in self.settings or name in self.retired

    def unknown(self, name: str, what: str = "hyperparameter") -> str:
        """The message for a name this executor does not read, with 'did you mean' and the names it reads."""
        known = self.known()
        return (
            f"unknown {what} {name!r}{did_you_mean(name, known)}: the {self.executor} executor does not read it; "
            f"known: {', '.join(known)}"
        )


MODEL = frozenset({"model"})
"""Layer 8's model: a spec with variants chooses one with `hyperparameters.model`."""
CONV_SETTINGS: dict[str, LayerName] = {
    "precision": "parallelism_precision",
    "memory_format": "parallelism_precision",
    "compile_mode": "framework",
    "kernel_tuning": "framework",
    "num_workers": "framework",
}
"""specbench.workloads.conv's options (the convolutional executors')."""
IMAGE_DATA_SETTINGS: dict[str, LayerName] = {
    "data_decoder": "framework",
    "augment_device": "framework",
    "data_cpu_share": "framework",
    "data_decode_threads": "framework",
    "augment_kernel": "framework",
    "fused_kernels": "framework",
}
"""The ResNet-50 executors' data-path and kernel options."""
SGD = frozenset(
    {
        "optimizer", "global_batch_size", "base_learning_rate", "momentum", "nesterov", "weight_decay",
        "weight_decay_on_bn", "label_smoothing", "lr_schedule", "warmup", "warmup_epochs", "zero_init_residual",
    }
)  # fmt: skip
"""The resnet50 executor's SGD with warm-up and cosine decay."""
LARS = frozenset(
    {
        "opt_name", "lars_opt_base_learning_rate", "lars_opt_end_learning_rate", "lars_opt_momentum",
        "lars_opt_weight_decay", "lars_epsilon", "lars_trust_coefficient", "lars_opt_learning_rate_decay_poly_power",
        "lars_opt_learning_rate_decay_steps", "lars_opt_learning_rate_warmup_epochs",
    }
)  # fmt: skip
"""MLPerf's LARS under MLPerf's log keys (specbench.workloads.lars)."""
MLPERF_SGD = frozenset(
    {
        "sgd_opt_base_learning_rate", "sgd_opt_end_learning_rate", "sgd_opt_momentum", "sgd_opt_weight_decay",
        "sgd_opt_learning_rate_decay_poly_power", "sgd_opt_learning_rate_decay_steps",
        "opt_learning_rate_warmup_epochs", "model_bn_span",
    }
)  # fmt: skip
"""MLPerf ResNet-50's SGD under MLPerf's log keys, and its batch-norm span."""

EXECUTOR_PARAMS: Registry[ExecutorParams] = Registry("executor")
"""Executor name (a spec's `workload.executor`) -> the parameters it reads."""
EXECUTOR_PARAMS.register(
    "resnet50",
    ExecutorParams(
        "resnet50",
        MODEL | SGD | LARS,
        {**CONV_SETTINGS, **IMAGE_DATA_SETTINGS},
        # mlperf-resnet50 4.0.0 (run by this executor, LARS only) states MLPerf's SGD rules; compile was compile_mode
        retired=MLPERF_SGD | {"compile"},
    ),
)
EXECUTOR_PARAMS.register(
    "mlperf-resnet50",
    ExecutorParams(
        "mlperf-resnet50",
        MODEL | LARS | MLPERF_SGD | {"global_batch_size", "label_smoothing", "zero_init_residual"}
        | {"gradient_accumulation_steps"},
        {**CONV_SETTINGS, **IMAGE_DATA_SETTINGS},
    ),
)  # fmt: skip
EXECUTOR_PARAMS.register(
    "llm-gpt",
    ExecutorParams(
        "llm-gpt",
        MODEL
        | {
            "sequence_length", "global_batch_size", "gradient_accumulation_steps", "optimizer", "learning_rate",
            "min_learning_rate", "lr_warmup_steps", "weight_decay", "adam_beta1", "adam_beta2", "adam_eps",
            "grad_clip_norm", "dropout", "init_std",
        },
        {
            "precision": "parallelism_precision",
            "weights": "parallelism_precision",
            "attention": "parallelism_precision",
            "activation_checkpointing": "parallelism_precision",
            "micro_batch_size": "parallelism_precision",
            "vocab_padding": "parallelism_precision",
            "parallelism": "parallelism_precision",
            "compile_mode": "framework",
            "fused_optimizer": "framework",
        },
    ),
)  # fmt: skip
EXECUTOR_PARAMS.register(
    "extreme-weather",
    ExecutorParams(
        "extreme-weather",
        MODEL
        | {
            "global_batch_size", "loss", "loss_weight_pow", "opt_name", "opt_lr", "opt_eps", "opt_betas",
            "opt_weight_decay", "scheduler_type", "scheduler_lr_warmup_steps", "scheduler_lr_warmup_factor",
            "scheduler_milestones", "scheduler_decay_rate", "scheduler_t_max", "scheduler_eta_min",
        },
        {**CONV_SETTINGS, "eval_batch_size": "framework"},
    ),
)  # fmt: skip
