"""ResNet-50 v1.5 (torchvision's resnet50) as a list of layers (specbench.roofline.layers), and its building blocks.

The one description of the model the roofline uses: the conv micro-benchmarks take their shapes
from it, and a ResNet-50 run's operational intensity is its FLOPs over the bytes counted here.
tests/roofline checks the conv geometries against torchvision and the FLOPs against the spec.
"""

from __future__ import annotations

from collections.abc import Iterator

from specbench.roofline.layers import Layer, conv, elementwise, fc

STAGES = ((3, 64, 1), (4, 128, 2), (6, 256, 2), (3, 512, 2))
"""(blocks, bottleneck width, stride of the first block) of each stage; output channels are 4 x width."""


def resnet50_layers(image: tuple[int, int, int] = (3, 224, 224), classes: int = 1000) -> list[Layer]:
    """Every layer of torchvision's resnet50 in forward order, named as its modules are (conv1, layer1.0.conv2, ...)."""
    layers, (c, h, w) = stem(image)
    for stage, (blocks, width, first_stride) in enumerate(STAGES, start=1):
        for block in range(blocks):
            block_layers = list(bottleneck(f"layer{stage}.{block}", c, h, w, width, first_stride if block == 0 else 1))
            layers += block_layers
            conv3 = next(layer.conv for layer in block_layers if layer.name.endswith(".conv3"))
            c, h, w = 4 * width, conv3.p, conv3.q
    layers.append(Layer("avgpool", "avgpool", c * h * w, c))
    layers.append(fc("fc", c, classes))
    return layers


def stem(
    image: tuple[int, int, int], names: tuple[str, str, str, str] = ("conv1", "bn1", "relu", "maxpool")
) -> tuple[list[Layer], tuple[int, int, int]]:
    """conv1 7x7/2 to 64 channels, bn1, relu, maxpool 3x3/2; the layers and the shape they leave."""
    c, h, w = image
    layers = [conv(names[0], c, h, w, 64, 7, 2, 3, first=True)]
    c, h, w = 64, layers[0].conv.p, layers[0].conv.q
    layers += [elementwise(names[1], "bn", c * h * w, 2 * c), elementwise(names[2], "relu", c * h * w)]
    ph, pw = (h + 2 - 3) // 2 + 1, (w + 2 - 3) // 2 + 1
    layers.append(Layer(names[3], "maxpool", c * h * w, c * ph * pw))
    return layers, (c, ph, pw)


def bottleneck(prefix: str, c: int, h: int, w: int, width: int, stride: int, dilation: int = 1) -> Iterator[Layer]:
    """conv1 1x1, conv2 3x3 (the stride sits here in v1.5), conv3 1x1 to 4 x width, downsample where shapes change."""
    out = 4 * width
    conv2 = conv(f"{prefix}.conv2", width, h, w, width, 3, stride, dilation, dilation=dilation)
    p, q = conv2.conv.p, conv2.conv.q
    yield conv(f"{prefix}.conv1", c, h, w, width, 1, 1, 0)
    yield elementwise(f"{prefix}.bn1", "bn", width * h * w, 2 * width)
    yield elementwise(f"{prefix}.relu1", "relu", width * h * w)
    yield conv2
    yield elementwise(f"{prefix}.bn2", "bn", width * p * q, 2 * width)
    yield elementwise(f"{prefix}.relu2", "relu", width * p * q)
    if stride != 1 or c != out:
        yield conv(f"{prefix}.downsample.0", c, h, w, out, 1, stride, 0)
        yield elementwise(f"{prefix}.downsample.1", "bn", out * p * q, 2 * out)
    yield conv(f"{prefix}.conv3", width, p, q, out, 1, 1, 0)
    yield elementwise(f"{prefix}.bn3", "bn", out * p * q, 2 * out)
    yield Layer(f"{prefix}.add", "add", 2 * out * p * q, out * p * q)
    yield elementwise(f"{prefix}.relu3", "relu", out * p * q)


def conv_layers(layers: list[Layer]) -> list[Layer]:
    """The conv layers (fc excluded), in forward order."""
    return [layer for layer in layers if layer.op == "conv"]
