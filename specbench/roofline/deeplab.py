"""DeepLabv3+ (specbench.workloads.extreme_weather.deeplab) as a list of layers, for its byte model.

A ResNet encoder with the input's channels in the stem and output stride 16 (the last stage dilated,
not strided), ASPP (1x1, three 3x3 at rates 6, 12, 18, image pooling; concatenated, projected,
dropout), and a decoder that joins the upsampled ASPP output with the projected stride-4 features,
two 3x3 convs and a 1x1 to the classes, upsampled to the input. tests/roofline checks the conv
geometries and parameters against the module and the FLOPs against the spec.
"""

from __future__ import annotations

from collections.abc import Iterator

from specbench.roofline.layers import Layer, conv, elementwise
from specbench.roofline.resnet import bottleneck, stem

BACKBONES: dict[str, tuple[str, tuple[int, ...]]] = {
    "resnet18": ("basic", (2, 2, 2, 2)),
    "resnet34": ("basic", (3, 4, 6, 3)),
    "resnet50": ("bottleneck", (3, 4, 6, 3)),
    "resnet101": ("bottleneck", (3, 4, 23, 3)),
}
WIDTHS = (64, 128, 256, 512)
ASPP_RATES = (6, 12, 18)
STEM_NAMES = ("stem.0", "stem.1", "stem.2", "stem.3")


def deeplab_layers(
    backbone: str,
    sample_shape: tuple[int, int, int],
    classes: int,
    aspp_channels: int = 256,
    low_level_channels: int = 48,
) -> list[Layer]:
    """Every layer of specbench's DeepLabV3Plus in forward order, its convs named as the module's are, then the loss."""
    if backbone not in BACKBONES:
        raise ValueError(f"backbone {backbone!r}: expected one of {', '.join(BACKBONES)}")
    height, width = sample_shape[1], sample_shape[2]
    layers, shape = stem(sample_shape, STEM_NAMES)
    encoder, low, (c, h, w) = _encoder(backbone, shape)
    layers += encoder
    layers += _aspp(c, h, w, aspp_channels)
    low_c, low_h, low_w = low
    a, m = aspp_channels, low_level_channels
    layers.append(Layer("upsample_aspp", "upsample", a * h * w, a * low_h * low_w))
    layers += _conv_bn_relu("project_low", low_c, low_h, low_w, m, 1, 0)
    layers.append(elementwise("concat_decoder", "concat", (a + m) * low_h * low_w))
    layers += _conv_bn_relu("decoder", a + m, low_h, low_w, a, 3, 1)
    layers += _conv_bn_relu("decoder", a, low_h, low_w, a, 3, 1, first_index=3)
    layers.append(conv("decoder.6", a, low_h, low_w, classes, 1, 1, 0, bias=True))
    layers.append(Layer("upsample_logits", "upsample", classes * low_h * low_w, classes * height * width))
    layers.append(elementwise("loss", "loss", classes * height * width))
    return layers


def _encoder(
    backbone: str, shape: tuple[int, int, int]
) -> tuple[list[Layer], tuple[int, int, int], tuple[int, int, int]]:
    """The four stages at output stride 16: the layers, the stride-4 features' shape, the output's shape."""
    kind, counts = BACKBONES[backbone]
    layers: list[Layer] = []
    c, h, w = shape
    low = shape
    for stage, (blocks, width) in enumerate(zip(counts, WIDTHS, strict=True), start=1):
        dilated = stage == 4
        for block in range(blocks):
            prefix = f"layer{stage}.{block}"
            stride = 1 if dilated or stage == 1 or block else 2
            if kind == "basic":
                block_layers = list(_basic(prefix, c, h, w, width, stride, 2 if dilated else 1))
                out = width
            else:
                dilation = 2 if dilated and block else 1
                block_layers = list(bottleneck(prefix, c, h, w, width, stride, dilation))
                out = 4 * width
            layers += block_layers
            last = next(layer.conv for layer in reversed(block_layers) if layer.geometry is not None)
            c, h, w = out, last.p, last.q
        if stage == 1:
            low = (c, h, w)
    return layers, low, (c, h, w)


def _basic(prefix: str, c: int, h: int, w: int, width: int, stride: int, dilation: int) -> Iterator[Layer]:
    """torchvision's BasicBlock; in the dilated stage every 3x3 at dilation 2 and no stride."""
    conv1 = conv(f"{prefix}.conv1", c, h, w, width, 3, stride, dilation, dilation=dilation)
    p, q = conv1.conv.p, conv1.conv.q
    yield conv1
    yield elementwise(f"{prefix}.bn1", "bn", width * p * q, 2 * width)
    yield elementwise(f"{prefix}.relu1", "relu", width * p * q)
    yield conv(f"{prefix}.conv2", width, p, q, width, 3, 1, dilation, dilation=dilation)
    yield elementwise(f"{prefix}.bn2", "bn", width * p * q, 2 * width)
    if stride != 1 or c != width:
        yield conv(f"{prefix}.downsample.0", c, h, w, width, 1, stride, 0)
        yield elementwise(f"{prefix}.downsample.1", "bn", width * p * q, 2 * width)
    yield Layer(f"{prefix}.add", "add", 2 * width * p * q, width * p * q)
    yield elementwise(f"{prefix}.relu2", "relu", width * p * q)


def _aspp(c: int, h: int, w: int, a: int) -> list[Layer]:
    """torchvision's ASPP: five branches on the encoder output, concatenated, projected, dropout."""
    layers = _conv_bn_relu("aspp.convs.0", c, h, w, a, 1, 0)
    for index, rate in enumerate(ASPP_RATES, start=1):
        layers += _conv_bn_relu(f"aspp.convs.{index}", c, h, w, a, 3, rate, dilation=rate)
    pooled = len(ASPP_RATES) + 1
    layers.append(Layer(f"aspp.convs.{pooled}.0", "avgpool", c * h * w, c))
    layers += _conv_bn_relu(f"aspp.convs.{pooled}", c, 1, 1, a, 1, 0, first_index=1)
    layers.append(Layer(f"aspp.convs.{pooled}.upsample", "upsample", a, a * h * w))
    branches = pooled + 1
    layers.append(elementwise("aspp.concat", "concat", branches * a * h * w))
    layers += _conv_bn_relu("aspp.project", branches * a, h, w, a, 1, 0)
    layers.append(elementwise("aspp.project.3", "dropout", a * h * w))
    return layers


def _conv_bn_relu(
    prefix: str, c: int, h: int, w: int, k: int, r: int, pad: int, *, dilation: int = 1, first_index: int = 0
) -> list[Layer]:
    """A conv without bias, batch norm and ReLU, named `prefix.N` as in an nn.Sequential from `first_index`."""
    layer = conv(f"{prefix}.{first_index}", c, h, w, k, r, 1, pad, dilation=dilation)
    elems = k * layer.conv.p * layer.conv.q
    return [
        layer,
        elementwise(f"{prefix}.{first_index + 1}", "bn", elems, 2 * k),
        elementwise(f"{prefix}.{first_index + 2}", "relu", elems),
    ]
