"""MLPerf HPC DeepCAM's reference network, rebuilt layer for layer to count its training FLOPs.

The structure of `DeepLabv3_plus` in mlcommons/hpc, deepcam/src/deepCam/architecture/deeplab_xception.py
(commit c622604875d526f9ba252854adc483c5ed01e3a3), as deepcam/src/deepCam/train.py builds it for the
closed division: `n_input=16` (the 16 CAM5 channels), `n_classes=3`, `os=16`. A modified aligned
Xception (entry flow, 16 middle blocks, exit flow with dilation 2) gives stride-16 features; ASPP
(1x1 and 3x3 at rates 6, 12, 18, plus image pooling) reduces them to 256 channels; a decoder of
transposed convolutions joins the stride-4 features of the first block and returns logits at the
input's size.

NVIDIA's optimized DeepCAM (mlcommons/hpc_results_v3.0, NVIDIA/benchmarks/deepcam/implementations/pytorch/
src/deepCam/architecture/deeplab_xception.py) has the same convolutions and batch norms; it fuses ReLUs
into the norms and may run them as group batch norm, which changes no FLOP count. Kept here: every
convolution (channels, kernel, stride, padding, dilation, groups, bias), batch norm, ReLU, concatenation
and the image-pooling branch; left out: process groups (SyncBatchNorm is BatchNorm2d) and weight init.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

REFERENCE_SOURCE = (
    "mlcommons/hpc deepcam/src/deepCam/architecture/deeplab_xception.py "
    "@ c622604875d526f9ba252854adc483c5ed01e3a3 (DeepLabv3_plus(n_input=16, n_classes=3, os=16))"
)
SAMPLE_SHAPE = (16, 768, 1152)
CLASSES = 3
MIDDLE_BLOCKS = 16
ASPP_RATES = (1, 6, 12, 18)


def _separable(inplanes: int, planes: int, stride: int = 1, dilation: int = 1) -> nn.Sequential:
    """The reference's SeparableConv2d_same at kernel 3: depthwise 3x3 ("same" padding), then pointwise 1x1."""
    return nn.Sequential(
        nn.Conv2d(inplanes, inplanes, 3, stride, dilation, dilation, groups=inplanes, bias=False),
        nn.Conv2d(inplanes, planes, 1, bias=False),
    )


class XceptionBlock(nn.Module):
    """The reference's `Block`: separable convolutions with batch norm and a (projected) residual."""

    def __init__(
        self,
        inplanes: int,
        planes: int,
        reps: int,
        stride: int = 1,
        dilation: int = 1,
        end_with_relu: bool = True,
        grow_first: bool = True,
        is_last: bool = False,
    ) -> None:
        super().__init__()
        self.skip: nn.Module | None = None
        if planes != inplanes or stride != 1:
            self.skip = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride=stride, bias=False), nn.BatchNorm2d(planes))
        layers: list[nn.Module] = []
        filters = inplanes
        if grow_first:
            layers += [_separable(inplanes, planes, dilation=dilation), nn.BatchNorm2d(planes), nn.ReLU()]
            filters = planes
        for _ in range(reps - 1):
            layers += [_separable(filters, filters, dilation=dilation), nn.BatchNorm2d(filters), nn.ReLU()]
        if not grow_first:
            layers += [_separable(inplanes, planes, dilation=dilation), nn.BatchNorm2d(planes), nn.ReLU()]
        layers = layers[:-1]
        if stride != 1:
            layers.append(_separable(planes, planes, stride=2))
        elif is_last:
            layers.append(_separable(planes, planes))
        self.rep = nn.Sequential(*layers)
        self.end_with_relu = end_with_relu

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.rep(x) + (x if self.skip is None else self.skip(x))
        return F.relu(out) if self.end_with_relu else out


def _separable_bn_relu(inplanes: int, planes: int, dilation: int) -> nn.Sequential:
    return nn.Sequential(_separable(inplanes, planes, dilation=dilation), nn.BatchNorm2d(planes), nn.ReLU())


class Xception(nn.Module):
    """The reference's modified aligned Xception at output stride 16; returns (features, stride-4 features)."""

    def __init__(self, in_channels: int = 16) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(in_channels, 32, 3, stride=2, padding=1, bias=False),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.Conv2d(32, 64, 3, padding=1, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(),
        )
        self.block1 = XceptionBlock(64, 128, reps=2, stride=2, end_with_relu=False)
        self.entry = nn.Sequential(
            XceptionBlock(128, 256, reps=2, stride=2),
            XceptionBlock(256, 728, reps=2, stride=2, is_last=True),
        )
        self.middle = nn.Sequential(*(XceptionBlock(728, 728, reps=3) for _ in range(MIDDLE_BLOCKS)))
        self.exit = nn.Sequential(
            XceptionBlock(728, 1024, reps=2, end_with_relu=False, grow_first=False, is_last=True),
            _separable_bn_relu(1024, 1536, dilation=2),
            _separable_bn_relu(1536, 1536, dilation=2),
            _separable_bn_relu(1536, 2048, dilation=2),
        )

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # The reference applies an in-place ReLU after block1, so its low-level features are rectified too.
        low_level = F.relu(self.block1(self.stem(x)))
        return self.exit(self.middle(self.entry(low_level))), low_level


class ImagePooling(nn.Module):
    """ASPP's image-level branch: global average, 1x1 convolution, a per-channel affine (no batch norm), ReLU."""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 1, bias=False)
        self.weights = nn.Parameter(torch.ones(out_channels, 1, 1))
        self.bias = nn.Parameter(torch.zeros(out_channels, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pooled = F.relu(self.weights * self.conv(F.adaptive_avg_pool2d(x, 1)) + self.bias)
        return pooled.expand(-1, -1, *x.shape[-2:])


class Bottleneck(nn.Module):
    """The reference's ASPP: four atrous branches and image pooling, concatenated and projected to 256 channels."""

    def __init__(self, in_channels: int = 2048, out_channels: int = 256) -> None:
        super().__init__()
        self.branches = nn.ModuleList(
            nn.Sequential(
                nn.Conv2d(
                    in_channels,
                    out_channels,
                    1 if rate == 1 else 3,
                    padding=0 if rate == 1 else rate,
                    dilation=rate,
                    bias=False,
                ),
                nn.BatchNorm2d(out_channels),
                nn.ReLU(),
            )
            for rate in ASPP_RATES
        )
        self.image_pooling = ImagePooling(in_channels, out_channels)
        self.project = nn.Sequential(
            nn.Conv2d(5 * out_channels, out_channels, 1, bias=False), nn.BatchNorm2d(out_channels), nn.ReLU()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.project(torch.cat([*(branch(x) for branch in self.branches), self.image_pooling(x)], dim=1))


def _deconv_bn_relu(channels: int) -> list[nn.Module]:
    """A stride-2 3x3 transposed convolution that doubles height and width, then batch norm and ReLU."""
    return [
        nn.ConvTranspose2d(channels, channels, 3, stride=2, padding=1, output_padding=1, bias=False),
        nn.BatchNorm2d(channels),
        nn.ReLU(),
    ]


class DeconvUpsampler(nn.Module):
    """The reference's decoder: two deconvolutions to stride 4, join the low-level features, two more to stride 1."""

    def __init__(self, classes: int = CLASSES, low_level_channels: int = 48) -> None:
        super().__init__()
        self.deconv1 = nn.Sequential(*_deconv_bn_relu(256), *_deconv_bn_relu(256))
        self.conv1 = nn.Sequential(
            nn.Conv2d(256 + low_level_channels, 256, 3, padding=1, bias=False),
            nn.BatchNorm2d(256),
            nn.ReLU(),
            nn.Conv2d(256, 256, 3, padding=1, bias=False),
            nn.BatchNorm2d(256),
            nn.ReLU(),
            nn.Conv2d(256, 256, 1),
        )
        self.deconv2 = nn.Sequential(*_deconv_bn_relu(256))
        self.last_deconv = nn.ConvTranspose2d(256, classes, 3, stride=2, padding=1, output_padding=1, bias=False)

    def forward(self, x: torch.Tensor, low_level: torch.Tensor) -> torch.Tensor:
        x = self.conv1(torch.cat([self.deconv1(x), low_level], dim=1))
        return self.last_deconv(self.deconv2(x))


class DeepCamReference(nn.Module):
    """DeepLabv3+ as MLPerf HPC DeepCAM's reference builds it; logits at the input's size."""

    def __init__(self, in_channels: int = SAMPLE_SHAPE[0], classes: int = CLASSES) -> None:
        super().__init__()
        self.xception_features = Xception(in_channels)
        self.bottleneck = Bottleneck(2048, 256)
        self.low_level = nn.Sequential(nn.Conv2d(128, 48, 1, bias=False), nn.BatchNorm2d(48), nn.ReLU())
        self.upsample = DeconvUpsampler(classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features, low_level = self.xception_features(x)
        return self.upsample(self.bottleneck(features), self.low_level(low_level))


def reference_parameter_count() -> int:
    """Trainable parameters of the reference network, as its train.py prints them ("Total number of elements")."""
    with torch.device("meta"):
        model = DeepCamReference()
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def _conv_backward_flop(
    grad_out_shape: list[int],
    x_shape: list[int],
    w_shape: list[int],
    _bias: object,
    _stride: object,
    _padding: object,
    _dilation: object,
    transposed: bool,
    _output_padding: object,
    _groups: int,
    output_mask: list[bool],
    out_shape: object = None,
) -> int:
    """FLOPs of aten.convolution_backward: the input gradient as torch counts it, the weight gradient as the forward.

    torch's own formula (2.14) counts a grouped convolution's weight gradient `groups` times over (a
    depthwise 3x3 on 728 channels 728 times); every multiply of the forward has exactly one in the
    weight gradient, so that term is the forward's count, which torch gets right for any `groups`.
    """
    from torch.utils.flop_counter import conv_flop_count

    flops = 0
    if output_mask[0]:
        flops += conv_flop_count(grad_out_shape, w_shape, x_shape, not transposed)
    if output_mask[1]:
        flops += conv_flop_count(x_shape, w_shape, grad_out_shape, transposed)
    return flops


def reference_train_flops_per_sample(height: int = SAMPLE_SHAPE[1], width: int = SAMPLE_SHAPE[2]) -> int:
    """Forward and backward FLOPs of one 16-channel sample, counted by torch's FlopCounterMode on the meta device.

    FlopCounterMode counts convolutions (transposed ones included) and matrix products, a multiply-add
    as 2 FLOPs, with the weight gradient of grouped convolutions corrected (`_conv_backward_flop`); the
    first convolution computes no input gradient. Batch norm, ReLU, pooling, additions and the loss
    are not counted.
    """
    from torch.utils.flop_counter import FlopCounterMode

    with torch.device("meta"):
        model = DeepCamReference()
        x = torch.randn(1, SAMPLE_SHAPE[0], height, width)
        y = torch.randint(0, CLASSES, (1, height, width))
    counter = FlopCounterMode(display=False, custom_mapping={torch.ops.aten.convolution_backward: _conv_backward_flop})
    with counter:
        F.cross_entropy(model(x), y).backward()
    return int(counter.get_total_flops())
