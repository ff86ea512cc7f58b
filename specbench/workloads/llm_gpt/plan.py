"""What a configuration of the llm-gpt executor decides, checked once: its options, the model shape, the batch split.

Model FLOPs are the spec's (6 x parameters + attention per token, no credit for recomputation or
vocabulary padding); the matrix-product FLOPs actually executed are logged separately as
`hardware_flops_per_sample`. A sample is a token.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from specbench.accounting.flops import GptShape, gpt_train_flops_per_token
from specbench.errors import UsageError
from specbench.run.config import Option, RunConfig
from specbench.run.distributed import from_env as dist_from_env
from specbench.spec.resolve import ResolvedSpec

OPTIONS = {
    "precision": Option(
        "precision",
        "parallelism_precision",
        "bf16 or fp16 autocast (over fp32 weights, or bf16 ones with weights=bf16), or fp32 throughout",
        ("bf16", "fp16", "fp32"),
        "fp32",
        "bf16",
    ),
    "weights": Option(
        "weights",
        "parallelism_precision",
        "the dtype the model's weights are kept in: fp32 (cast to bf16 or fp16 by autocast at each use) or bf16 "
        "(with fp32 master copies that the optimizer updates and gradients summed in fp32, as Megatron-LM's --bf16; "
        "needs precision=bf16 and one process)",
        ("fp32", "bf16"),
        "fp32",
        "fp32",
        absent="fp32",  # before the option, the weights were fp32
    ),
    "attention": Option(
        "attention",
        "parallelism_precision",
        "attention kernel: sdpa (PyTorch chooses), flash (flash-attn if installed, else SDPA's flash kernel), "
        "cudnn (SDPA's cuDNN kernel), eager (matrix products and softmax)",
        ("sdpa", "flash", "cudnn", "eager"),
        "sdpa",
        "sdpa",
    ),
    "activation_checkpointing": Option(
        "activation_checkpointing",
        "parallelism_precision",
        "recompute each block's activations in backward (costs FLOPs that model FLOPs do not credit)",
        (False, True),
        False,
        False,
    ),
    "micro_batch_size": Option(
        "micro_batch_size",
        "parallelism_precision",
        "sequences per forward/backward; gradient accumulation = global_batch_size / micro_batch_size",
    ),
    "vocab_padding": Option(
        "vocab_padding",
        "parallelism_precision",
        "pad the embedding and output rows to a multiple of this for aligned matrix products (Megatron's "
        "make-vocab-size-divisible-by); padded logits are left out of the loss, so the model is unchanged",
        None,
        1,
        128,
    ),
    "parallelism": Option(
        "parallelism",
        "parallelism_precision",
        "across processes: ddp (weights replicated, gradients all-reduced) or fsdp (weights, gradients and "
        "optimizer state sharded with FSDP2's fully_shard per transformer block)",
        ("ddp", "fsdp"),
        "ddp",
        "ddp",
    ),
    "compile_mode": Option(
        "compile_mode",
        "framework",
        "torch.compile of each transformer block and of the output layer with the loss",
        ("none", "default", "max-autotune-no-cudagraphs"),
        "none",
        "default",
    ),
    "fused_optimizer": Option(
        "fused_optimizer",
        "framework",
        "AdamW as one fused kernel (else the foreach kernels)",
        (True, False),
        False,
        True,
    ),
}
DEFAULTS: dict[str, Any] = {
    "learning_rate": 1e-4,
    "min_learning_rate": 1e-5,
    "lr_warmup_steps": 0,
    "adam_beta1": 0.9,
    "adam_beta2": 0.999,
    "adam_eps": 1e-8,
    "weight_decay": 0.1,
    "grad_clip_norm": 1.0,
    "dropout": 0.1,
    "init_std": 0.02,
}


@dataclass(frozen=True)
class Plan:
    """Everything a run's configuration decides, checked once."""

    variant: str
    shape: GptShape
    global_batch: int
    micro_batch: int
    accumulation: int
    precision: str
    attention: str
    compile_mode: str
    checkpointing: bool
    fused_optimizer: bool
    padded_vocab: int
    world: int = 1
    parallelism: str = "ddp"
    weights: str = "fp32"

    @property
    def tokens_per_step(self) -> int:
        return self.global_batch * self.shape.sequence


CHOICES = (
    "precision",
    "weights",
    "attention",
    "compile_mode",
    "activation_checkpointing",
    "fused_optimizer",
    "parallelism",
)
"""The options with a fixed set of values, checked by make_plan."""


def _value(config: RunConfig, name: str, device: str) -> Any:
    """A setting wherever the configuration holds it: an executor option, or a spec hyperparameter of that name."""
    if name in config.settings:
        return config.settings[name]
    if name in config.hyperparameters:
        return config.hyperparameters[name]
    return OPTIONS[name].default(device)


def _positive_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"{what} must be a positive integer, found {value!r}")
    return value


def _shape(resolved: ResolvedSpec, config: RunConfig) -> tuple[str, GptShape]:
    """The variant the configuration names and its model shape, checked against the sequence length."""
    workload = resolved.spec.workload
    variant = str(config.hyperparameters.get("model"))
    if variant not in workload.variants:
        known = ", ".join(workload.variants)
        raise UsageError(f"--set model={variant}: spec {resolved.spec.id!r} has the variants {known}")
    params = workload.variants[variant].params
    try:
        shape = GptShape(
            hidden=int(params["hidden"]),
            layers=int(params["layers"]),
            heads=int(params["heads"]),
            sequence=int(params["sequence_length"]),
            vocab=int(params["vocab"]),
        )
    except (KeyError, TypeError, ValueError) as err:
        raise UsageError(
            f"variant {variant!r} needs integer params hidden, layers, heads, sequence_length, vocab; found {params}"
        ) from err
    if shape.hidden % shape.heads:
        raise UsageError(f"variant {variant!r}: hidden {shape.hidden} is not a multiple of heads {shape.heads}")
    sequence = config.hyperparameters.get("sequence_length", shape.sequence)
    if sequence != shape.sequence:
        raise UsageError(
            f"sequence_length {sequence} differs from variant {variant!r}'s {shape.sequence} (its FLOPs assume that)"
        )
    return variant, shape


def _choices(config: RunConfig, device: str) -> dict[str, Any]:
    """The options with a fixed set of values, each checked against its choices and the device."""
    choices: dict[str, Any] = {}
    for name in CHOICES:
        value = _value(config, name, device)
        allowed = OPTIONS[name].choices or ()
        if value not in allowed or type(value) is not type(allowed[0]):
            raise UsageError(f"{name}={value!r}: expected one of {', '.join(map(str, allowed))}")
        choices[name] = value
    if choices["attention"] in ("flash", "cudnn") and device != "cuda":
        raise UsageError(
            f"attention={choices['attention']} needs a CUDA GPU; on the CPU use sdpa (it picks its flash kernel "
            "where that applies) or eager"
        )
    return choices


def _check_bf16_weights(precision: str, world: int) -> None:
    """weights=bf16 computes in bf16 (its gradients are bf16) and keeps its fp32 gradients out of DDP's reach."""
    if precision != "bf16":
        raise UsageError(f"weights=bf16 needs precision=bf16, found precision={precision}")
    if world > 1:
        raise UsageError(
            f"weights=bf16 runs in one process ({world} here): across processes the gradients would be all-reduced "
            "in bf16; use weights=fp32"
        )


def make_plan(resolved: ResolvedSpec, config: RunConfig, device: str) -> Plan:
    """Check the configuration (shape, batch split, options) and return what the run will do."""
    variant, shape = _shape(resolved, config)
    global_batch = _positive_int(config.hyperparameters.get("global_batch_size"), "global_batch_size")
    micro = _value(config, "micro_batch_size", device)
    micro = global_batch if micro is None else _positive_int(micro, "micro_batch_size")
    world = dist_from_env().world
    if global_batch % (micro * world):
        raise UsageError(
            f"global_batch_size {global_batch} is not a multiple of micro_batch_size {micro} x {world} processes; "
            "global_batch_size = micro_batch_size x gradient accumulation steps x processes"
        )
    choices = _choices(config, device)
    if choices["weights"] == "bf16":
        _check_bf16_weights(choices["precision"], world)
    padding = _positive_int(_value(config, "vocab_padding", device), "vocab_padding")
    return Plan(
        variant=variant,
        shape=shape,
        global_batch=global_batch,
        micro_batch=micro,
        accumulation=global_batch // (micro * world),
        precision=choices["precision"],
        attention=choices["attention"],
        compile_mode=choices["compile_mode"],
        checkpointing=choices["activation_checkpointing"],
        fused_optimizer=choices["fused_optimizer"],
        padded_vocab=-(-shape.vocab // padding) * padding,
        world=world,
        parallelism=choices["parallelism"],
        weights=choices["weights"],
    )


def _vector_parameters(shape: GptShape) -> int:
    """Biases and layer norms: counted in model FLOPs' 6 x parameters, but no matrix product touches them."""
    return shape.layers * 13 * shape.hidden + 2 * shape.hidden


def hardware_flops_per_token(plan: Plan) -> float:
    """Matrix-product FLOPs executed per token (as torch.utils.flop_counter counts them), labelled hardware.

    The model FLOPs of accounting.flops at the padded vocabulary, less the biases and norms (not matrix
    products), plus the block forward recomputed under activation checkpointing. The recompute stops
    early (torch.utils.checkpoint's default), before the MLP's output projection, whose result
    backward does not need.
    """
    s = plan.shape
    padded = dataclasses.replace(s, vocab=plan.padded_vocab)
    flops = gpt_train_flops_per_token(padded) - 6.0 * _vector_parameters(s)
    if plan.checkpointing:
        flops += s.layers * (2.0 * 8 * s.hidden * s.hidden + 4.0 * s.hidden * s.sequence)
    return flops
