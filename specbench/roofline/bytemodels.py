"""Byte models: the device-memory bytes one training sample moves, per workload model, from its layer table.

Registered by the spec's `workload.model` in BYTE_MODELS: resnet50_v1.5 (resnet50, mlperf-resnet50,
caraml-resnet50), deeplabv3plus (extreme-weather) and gpt (llm-gpt). Each is analytical; docs/roofline.md
says what each counts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specbench.accounting.flops import GptShape
from specbench.registry import Registry
from specbench.roofline.deeplab import deeplab_layers
from specbench.roofline.format import BytesMethod
from specbench.roofline.gpt import gpt_layers
from specbench.roofline.layers import Layer, training_bytes_per_sample, training_flops_per_sample
from specbench.roofline.resnet import resnet50_layers
from specbench.spec.result import RunResult

ACTIVATION_BYTES: dict[str, int] = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2}
FLOPS_MISMATCH = 0.01


@dataclass(frozen=True)
class RunContext:
    """A run's result with what its folders say about it: precision, dataset, model variant, accelerator."""

    path: Path
    result: RunResult
    model: str | None
    sample_shape: list[int] | None
    num_classes: int | None
    accelerator_model: str | None
    cpu_model: str | None
    precision: str | None = None
    variant: dict[str, Any] = field(default_factory=dict)

    def setting(self, name: str) -> Any:
        """An option as the run records it: result.json's settings, else its hyperparameters; None if neither."""
        settings, hyperparameters = self.result.settings, self.result.hyperparameters
        return settings[name] if name in settings else hyperparameters.get(name)


@dataclass(frozen=True)
class ByteCount:
    bytes_per_sample: float
    bytes_per_sample_fused: float
    method: BytesMethod
    description: str
    note: str | None = None


ByteModel = Callable[[RunContext, int, str], ByteCount]
BYTE_MODELS: Registry[ByteModel] = Registry("byte model")


def _optimizer(run: RunContext) -> str:
    name = run.setting("optimizer") or run.setting("opt_name")
    if not name:
        raise ValueError("no optimizer in the run's hyperparameters (optimizer or opt_name)")
    return str(name).lower()


def _flops_note(layers: list[Layer], run: RunContext) -> str | None:
    """A note where the layer table's FLOPs differ from the run's by more than 1%."""
    flops, stated = training_flops_per_sample(layers), run.result.flops_per_sample
    if stated is None:
        return f"the layer table counts {flops:.4g} FLOPs per sample, the run states none"
    if abs(flops - stated) > FLOPS_MISMATCH * stated:
        return f"the layer table counts {flops:.4g} FLOPs per sample, the run states {stated:.4g}"
    return None


def _image_shape(run: RunContext, default: list[int] | None = None) -> tuple[int, int, int]:
    shape = run.sample_shape or default
    if not shape or len(shape) != 3:
        raise ValueError(f"sample shape {shape} is not channels x height x width")
    return shape[0], shape[1], shape[2]


def _resnet50(run: RunContext, batch: int, precision: str) -> ByteCount:
    image = _image_shape(run, [3, 224, 224])
    layers = resnet50_layers(image, run.num_classes or 1000)
    optimizer = _optimizer(run)
    width = ACTIVATION_BYTES[precision]
    counted = training_bytes_per_sample(layers, width, batch, mixed=precision in ("bf16", "fp16"), optimizer=optimizer)
    description = (
        f"analytical, ResNet-50 v1.5 at {image[1]}x{image[2]}: each layer's activations read and written once per "
        f"pass at {width} B, weights and {optimizer} state per step over batch {batch}, no fusion "
        "(fused: conv/fc operands only)"
    )
    return ByteCount(counted.unfused, counted.fused, "analytical", description, _flops_note(layers, run))


def _deeplab(run: RunContext, batch: int, precision: str) -> ByteCount:
    if not run.variant:
        raise ValueError(f"model variant {run.setting('model')!r} of the spec has no params (backbone, aspp_channels)")
    if "backbone" not in run.variant:
        raise ValueError(
            f"model variant {run.setting('model')!r} is not a DeepLabv3+ on a ResNet encoder: the roofline has no "
            "layer table for it"
        )
    backbone = str(run.variant["backbone"])
    aspp = int(run.variant.get("aspp_channels", 256))
    image = _image_shape(run)
    layers = deeplab_layers(backbone, image, run.num_classes or 3, aspp, int(run.variant.get("low_level_channels", 48)))
    optimizer = _optimizer(run)
    width = ACTIVATION_BYTES[precision]
    counted = training_bytes_per_sample(layers, width, batch, mixed=precision in ("bf16", "fp16"), optimizer=optimizer)
    description = (
        f"analytical, DeepLabv3+ on {backbone} (ASPP {aspp}) at {image[1]}x{image[2]}: each layer's activations "
        f"read and written once per pass at {width} B, weights and {optimizer} state per step over batch {batch}, "
        "no fusion (fused: conv operands only)"
    )
    return ByteCount(counted.unfused, counted.fused, "analytical", description, _flops_note(layers, run))


def _gpt(run: RunContext, batch: int, precision: str) -> ByteCount:
    try:
        p = run.variant
        shape = GptShape(
            int(p["hidden"]), int(p["layers"]), int(p["heads"]), int(p["sequence_length"]), int(p["vocab"])
        )
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"model variant {run.setting('model')!r} has no GPT shape in its params: {err!r}") from err
    padding = int(run.setting("vocab_padding") or 1)
    attention = str(run.setting("attention") or "sdpa")
    checkpointing = bool(run.setting("activation_checkpointing"))
    layers = gpt_layers(
        shape,
        -(-shape.vocab // padding) * padding,
        eager_attention=attention == "eager",
        dropout=float(run.setting("dropout") or 0.0) > 0,
        checkpointing=checkpointing,
    )
    global_batch = run.setting("global_batch_size")
    per_update = global_batch // run.result.devices if isinstance(global_batch, int) else batch
    optimizer = _optimizer(run)
    width = ACTIVATION_BYTES[precision]
    counted = training_bytes_per_sample(
        layers,
        width,
        batch * shape.sequence,
        mixed=precision in ("bf16", "fp16"),
        optimizer=optimizer,
        optimizer_batch=max(batch, per_update) * shape.sequence,
    )
    description = (
        f"analytical, GPT decoder (hidden {shape.hidden}, {shape.layers} layers, sequence {shape.sequence}) per "
        f"token: each layer's activations read and written once per pass at {width} B, {attention} attention"
        f"{' with its score matrix' if attention == 'eager' else ' without a score matrix in memory'}"
        f"{', blocks recomputed' if checkpointing else ''}, weights and {optimizer} state per step over "
        f"{batch} x {shape.sequence} tokens, no fusion (fused: matmul and attention operands only)"
    )
    return ByteCount(counted.unfused, counted.fused, "analytical", description)


BYTE_MODELS.register("resnet50_v1.5", _resnet50)
BYTE_MODELS.register("deeplabv3plus", _deeplab)
BYTE_MODELS.register("gpt", _gpt)
