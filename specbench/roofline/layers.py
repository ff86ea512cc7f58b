"""A network as a list of layers per sample: conv and matmul geometries, FLOPs, and the bytes a training step moves.

The byte models of the roofline (ResNet-50, DeepLabv3+, GPT) describe their networks with these layers;
one count of activation traffic per op, one count of weight and optimizer traffic per step.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

LayerOp = Literal[
    "conv",
    "fc",
    "attention",
    "scores",
    "bn",
    "ln",
    "relu",
    "gelu",
    "add",
    "maxpool",
    "avgpool",
    "upsample",
    "concat",
    "dropout",
    "embedding",
    "loss",
]
MATMUL_OPS = ("conv", "fc")
FUSED_OPS = ("conv", "fc", "attention")
"""Ops whose operands cross memory even when everything else rides in their prologues and epilogues."""

OPTIMIZER_BYTES_PER_PARAM = {"sgd": 5 * 4, "lars": 7 * 4, "adam": 7 * 4, "adamw": 7 * 4}
"""fp32 state per parameter and step. SGD with momentum reads weight, grad and momentum and writes weight and
momentum; LARS reads weight and grad once more for its layer-wise norms; Adam(W) reads weight, grad and two
moments and writes weight and both moments."""
CAST_BYTES_PER_PARAM = (4 + 2) + (2 + 4)
"""Mixed precision, per step: weights cast fp32 -> 16 bit, weight grads cast 16 bit -> fp32."""


@dataclass(frozen=True)
class ConvGeometry:
    """A convolution per sample (no batch): C x H x W in, K filters of R x S, square stride, padding and dilation.

    A fully connected layer is a 1 x 1 convolution on a 1 x 1 input.
    """

    c: int
    h: int
    w: int
    k: int
    r: int
    s: int
    stride: int
    pad: int
    dilation: int = 1

    @property
    def p(self) -> int:
        return (self.h + 2 * self.pad - self.dilation * (self.r - 1) - 1) // self.stride + 1

    @property
    def q(self) -> int:
        return (self.w + 2 * self.pad - self.dilation * (self.s - 1) - 1) // self.stride + 1

    @property
    def macs(self) -> int:
        """Multiply-adds per sample of one pass (forward, backward-data or backward-filter)."""
        return self.k * self.p * self.q * self.c * self.r * self.s


@dataclass(frozen=True)
class Layer:
    """One layer per sample: elements read and written by its forward pass, parameters, geometry for convs and fc.

    `recomputed`: the layer's forward runs again in backward (activation checkpointing).
    """

    name: str
    op: LayerOp
    in_elems: int
    out_elems: int
    params: int = 0
    geometry: ConvGeometry | None = None
    needs_input_grad: bool = True
    recomputed: bool = False

    @property
    def conv(self) -> ConvGeometry:
        """The geometry of a conv or fc layer."""
        if self.geometry is None:
            raise ValueError(f"layer {self.name} ({self.op}) has no conv geometry")
        return self.geometry


def conv(
    name: str,
    c: int,
    h: int,
    w: int,
    k: int,
    r: int,
    stride: int,
    pad: int,
    *,
    dilation: int = 1,
    first: bool = False,
    bias: bool = False,
) -> Layer:
    """A square R x R convolution; `first`: its input (the data) needs no gradient."""
    g = ConvGeometry(c, h, w, k, r, r, stride, pad, dilation)
    params = k * c * r * r + (k if bias else 0)
    return Layer(name, "conv", c * h * w, k * g.p * g.q, params, g, needs_input_grad=not first)


def fc(name: str, c: int, k: int, *, bias: bool = True, params: int | None = None) -> Layer:
    """A matrix product of one C-vector by a C x K weight; `params` where the weight is counted elsewhere (tied)."""
    own = c * k + (k if bias else 0)
    return Layer(name, "fc", c, k, own if params is None else params, ConvGeometry(c, 1, 1, k, 1, 1, 1, 0))


def elementwise(name: str, op: LayerOp, elems: int, params: int = 0) -> Layer:
    """A layer whose output has the size of its input (norms, activations, dropout)."""
    return Layer(name, op, elems, elems, params)


def training_flops_per_sample(layers: Iterable[Layer]) -> float:
    """2 x MACs of every conv and fc, forward plus backward-filter, plus backward-data where the input needs a grad.

    This is what torch.utils.flop_counter counts for the convolutions and matrix products of a training step.
    """
    total = 0
    for layer in layers:
        if layer.geometry is not None:
            passes = 3 if layer.needs_input_grad else 2
            total += 2 * passes * layer.geometry.macs
    return float(total)


# Tensors each op moves through memory per pass, in units of its input (I) and output (O) sizes.
# Forward: conv/fc read I, write O; bn and ln read I twice (statistics, then normalize) and write O;
# relu, gelu, dropout, pools, upsampling, concatenation, embedding lookup and loss read I and write O;
# add reads both inputs (I = both), writes O; fused attention reads q, k, v (I) and writes its output.
# Backward: conv/fc read dO and I (weight grad) and write dI (data grad, unless the input needs none);
# bn and ln read dO twice and I twice and write dI; relu reads dO and O (gelu dO and I), writes dI;
# add's grad passes through, but the two branches' grads are summed at the block input: read 2 O, write O;
# fused attention reads q, k, v, its output and dO and writes dq, dk, dv; the others read dO and write dI.
# Eager attention's score matrix (`scores`, I = O = heads x sequence per token): forward QK^T writes S,
# softmax reads S and writes P, PV reads P; backward writes dP and reads P for dV, softmax's backward
# reads P and dP and writes dS, and dQ and dK read dS.
def forward_elems(layer: Layer) -> float:
    i, o = layer.in_elems, layer.out_elems
    if layer.op in ("bn", "ln"):
        return 2 * i + o
    if layer.op == "scores":
        return 4 * o
    return i + o


def backward_elems(layer: Layer) -> float:
    i, o = layer.in_elems, layer.out_elems
    if layer.op in MATMUL_OPS:
        return o + i + (o + i if layer.needs_input_grad else 0)
    if layer.op in ("bn", "ln"):
        return 2 * o + 2 * i + i
    if layer.op in ("relu", "gelu"):
        return o + o + i
    if layer.op == "add":
        return 3 * o
    if layer.op == "attention":
        return i + 2 * o + i
    if layer.op == "scores":
        return 7 * o
    return o + i


def activation_elems(layer: Layer) -> float:
    """Elements one sample moves through this layer in a training step (forward, backward, any recompute)."""
    recompute = forward_elems(layer) if layer.recomputed else 0.0
    return forward_elems(layer) + backward_elems(layer) + recompute


@dataclass(frozen=True)
class TrainingBytes:
    """Bytes per sample of one training step, by the unfused and the fully fused count."""

    unfused: float
    fused: float
    params: int


def training_bytes_per_sample(
    layers: list[Layer],
    activation_bytes: int,
    batch: int,
    mixed: bool,
    *,
    optimizer: str = "sgd",
    optimizer_batch: int | None = None,
) -> TrainingBytes:
    """Analytical device-memory traffic of one training step, per sample.

    Activations: every layer's tensors read and written once per use (`forward_elems`, `backward_elems`)
    at `activation_bytes` per element. Weights, per step of `batch` samples: each conv/fc reads its weight
    in forward and backward-data and writes its weight grad, at the activation width; casts in mixed
    precision. The optimizer's fp32 state per step of `optimizer_batch` samples (default `batch`).
    """
    if optimizer not in OPTIMIZER_BYTES_PER_PARAM:
        known = ", ".join(OPTIMIZER_BYTES_PER_PARAM)
        raise ValueError(f"no byte count for optimizer {optimizer!r} (known: {known})")
    params = sum(layer.params for layer in layers)
    weight_elems = sum(layer.params for layer in layers if layer.geometry is not None)
    per_step = 3 * weight_elems * activation_bytes + (weight_elems * CAST_BYTES_PER_PARAM if mixed else 0)
    per_update = params * OPTIMIZER_BYTES_PER_PARAM[optimizer]
    shared = per_step / batch + per_update / (optimizer_batch or batch)
    unfused = sum(activation_elems(layer) for layer in layers) * activation_bytes
    fused = sum(activation_elems(layer) for layer in layers if layer.op in FUSED_OPS) * activation_bytes
    return TrainingBytes(unfused + shared, fused + shared, params)
