"""ResNet-50 v1.5 (torchvision's resnet50) as a list of layers: conv geometries, FLOPs and an analytical byte count.

The one description of the model the roofline uses: the conv micro-benchmarks take their shapes
from it, and a ResNet-50 run's operational intensity is its FLOPs over the bytes counted here.
tests/roofline checks the conv geometries against torchvision and the FLOPs against the spec.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

LayerOp = Literal["conv", "bn", "relu", "add", "maxpool", "avgpool", "fc"]
STAGES = ((3, 64, 1), (4, 128, 2), (6, 256, 2), (3, 512, 2))
"""(blocks, bottleneck width, stride of the first block) of each stage; output channels are 4 x width."""

SGD_BYTES_PER_PARAM = 5 * 4
"""SGD with momentum on fp32 parameters: read weight, grad and momentum, write weight and momentum."""
CAST_BYTES_PER_PARAM = (4 + 2) + (2 + 4)
"""Mixed precision, per step: weights cast fp32 -> 16 bit, weight grads cast 16 bit -> fp32."""


@dataclass(frozen=True)
class ConvGeometry:
    """A convolution per sample (no batch): C x H x W in, K filters of R x S, square stride and padding."""

    c: int
    h: int
    w: int
    k: int
    r: int
    s: int
    stride: int
    pad: int

    @property
    def p(self) -> int:
        return (self.h + 2 * self.pad - self.r) // self.stride + 1

    @property
    def q(self) -> int:
        return (self.w + 2 * self.pad - self.s) // self.stride + 1

    @property
    def macs(self) -> int:
        """Multiply-adds per sample of one pass (forward, backward-data or backward-filter)."""
        return self.k * self.p * self.q * self.c * self.r * self.s


@dataclass(frozen=True)
class Layer:
    """One layer per sample: elements read and written by its forward pass, parameters, geometry for convs."""

    name: str
    op: LayerOp
    in_elems: int
    out_elems: int
    params: int = 0
    geometry: ConvGeometry | None = None
    needs_input_grad: bool = True

    @property
    def conv(self) -> ConvGeometry:
        """The geometry of a conv or fc layer."""
        if self.geometry is None:
            raise ValueError(f"layer {self.name} ({self.op}) has no conv geometry")
        return self.geometry


def _conv(name: str, c: int, h: int, w: int, k: int, r: int, stride: int, pad: int, first: bool = False) -> Layer:
    g = ConvGeometry(c, h, w, k, r, r, stride, pad)
    return Layer(name, "conv", c * h * w, k * g.p * g.q, k * c * r * r, g, needs_input_grad=not first)


def resnet50_layers(image: tuple[int, int, int] = (3, 224, 224), classes: int = 1000) -> list[Layer]:
    """Every layer of torchvision's resnet50 in forward order, named as its modules are (conv1, layer1.0.conv2, ...)."""
    c, h, w = image
    layers = [_conv("conv1", c, h, w, 64, 7, 2, 3, first=True)]
    c, h, w = 64, layers[0].conv.p, layers[0].conv.q
    layers += [Layer("bn1", "bn", c * h * w, c * h * w, 2 * c), Layer("relu", "relu", c * h * w, c * h * w)]
    ph, pw = (h + 2 - 3) // 2 + 1, (w + 2 - 3) // 2 + 1
    layers.append(Layer("maxpool", "maxpool", c * h * w, c * ph * pw))
    h, w = ph, pw
    for stage, (blocks, width, first_stride) in enumerate(STAGES, start=1):
        for block in range(blocks):
            block_layers = list(_bottleneck(f"layer{stage}.{block}", c, h, w, width, first_stride if block == 0 else 1))
            layers += block_layers
            conv3 = next(layer.conv for layer in block_layers if layer.name.endswith(".conv3"))
            c, h, w = 4 * width, conv3.p, conv3.q
    layers.append(Layer("avgpool", "avgpool", c * h * w, c))
    fc = ConvGeometry(c, 1, 1, classes, 1, 1, 1, 0)
    layers.append(Layer("fc", "fc", c, classes, c * classes + classes, fc))
    return layers


def _bottleneck(prefix: str, c: int, h: int, w: int, width: int, stride: int) -> Iterator[Layer]:
    """conv1 1x1, conv2 3x3 (the stride sits here in v1.5), conv3 1x1 to 4 x width, downsample where shapes change."""
    out = 4 * width
    conv2 = _conv(f"{prefix}.conv2", width, h, w, width, 3, stride, 1)
    p, q = conv2.conv.p, conv2.conv.q
    yield _conv(f"{prefix}.conv1", c, h, w, width, 1, 1, 0)
    yield Layer(f"{prefix}.bn1", "bn", width * h * w, width * h * w, 2 * width)
    yield Layer(f"{prefix}.relu1", "relu", width * h * w, width * h * w)
    yield conv2
    yield Layer(f"{prefix}.bn2", "bn", width * p * q, width * p * q, 2 * width)
    yield Layer(f"{prefix}.relu2", "relu", width * p * q, width * p * q)
    if stride != 1 or c != out:
        yield _conv(f"{prefix}.downsample.0", c, h, w, out, 1, stride, 0)
        yield Layer(f"{prefix}.downsample.1", "bn", out * p * q, out * p * q, 2 * out)
    yield _conv(f"{prefix}.conv3", width, p, q, out, 1, 1, 0)
    yield Layer(f"{prefix}.bn3", "bn", out * p * q, out * p * q, 2 * out)
    yield Layer(f"{prefix}.add", "add", 2 * out * p * q, out * p * q)
    yield Layer(f"{prefix}.relu3", "relu", out * p * q, out * p * q)


def conv_layers(layers: list[Layer]) -> list[Layer]:
    """The conv layers (fc excluded), in forward order."""
    return [layer for layer in layers if layer.op == "conv"]


def training_flops_per_sample(layers: list[Layer]) -> float:
    """2 x MACs of every conv and fc, forward plus backward-filter, plus backward-data where the input needs a grad.

    This is what torch.utils.flop_counter counts for a training step (the specs' flops_per_sample).
    """
    total = 0
    for layer in layers:
        if layer.geometry is not None:
            passes = 3 if layer.needs_input_grad else 2
            total += 2 * passes * layer.geometry.macs
    return float(total)


# Tensors each op moves through memory per pass, counted in units of its input (I) and output (O) sizes.
# Forward: conv/fc read I, write O; bn reads I twice (statistics, then normalize) and writes O;
# relu reads I, writes O; add reads both inputs (I = both), writes O; pools read I, write O.
# Backward: conv/fc read dO and I (weight grad) and write dI (data grad, unless the input needs none);
# bn reads dO and I twice (reductions, then the data grad) and writes dI; relu reads dO and O, writes dI;
# add's grad passes through, but the two branches' grads are summed at the block input: read 2 O, write O;
# pools read dO and write dI.
def _activation_elems(layer: Layer) -> float:
    i, o = layer.in_elems, layer.out_elems
    if layer.op in ("conv", "fc"):
        backward = o + i + (o + i if layer.needs_input_grad else 0)
        return i + o + backward
    if layer.op == "bn":
        return (2 * i + o) + (2 * o + 2 * i + i)
    if layer.op == "relu":
        return (i + o) + (o + o + i)
    if layer.op == "add":
        return (i + o) + 3 * o
    return (i + o) + (o + i)


def _conv_only_elems(layer: Layer) -> float:
    """The fully fused bound: only conv/fc operands cross memory, everything else rides in their prologue/epilogue."""
    if layer.op not in ("conv", "fc"):
        return 0.0
    return _activation_elems(layer)


@dataclass(frozen=True)
class TrainingBytes:
    """Bytes per sample of one training step, by the unfused and the fully fused count."""

    unfused: float
    fused: float
    params: int


def training_bytes_per_sample(layers: list[Layer], activation_bytes: int, batch: int, mixed: bool) -> TrainingBytes:
    """Analytical device-memory traffic of one training step, per sample.

    Activations: every layer's tensors read and written once per use (see `_activation_elems`), at
    `activation_bytes` per element. Weights, per step and shared by the `batch` samples: each conv/fc
    reads its weight in forward and backward-data and writes its weight grad, at the activation
    width; SGD with momentum on fp32 master weights; casts in mixed precision.
    """
    params = sum(layer.params for layer in layers)
    weight_elems = sum(layer.params for layer in layers if layer.geometry is not None)
    per_step = 3 * weight_elems * activation_bytes + params * SGD_BYTES_PER_PARAM
    if mixed:
        per_step += weight_elems * CAST_BYTES_PER_PARAM
    unfused = sum(_activation_elems(layer) for layer in layers) * activation_bytes
    fused = sum(_conv_only_elems(layer) for layer in layers) * activation_bytes
    return TrainingBytes(unfused + per_step / batch, fused + per_step / batch, params)
