"""DeepLabv3+ for climate segmentation: a torchvision ResNet encoder with a 16-channel stem, ASPP and decoder.

The structure is DeepLabv3+'s (Chen et al., 2018), as MLPerf HPC DeepCAM uses it: an encoder at
output stride 16 (the last stage dilated instead of strided), atrous spatial pyramid pooling
(rates 6, 12, 18, plus image pooling) on its output, and a decoder that joins the upsampled ASPP
features with the stride-4 features of the first stage, then upsamples to the input size. DeepCAM's
reference encoder is Xception; specbench uses torchvision's ResNets (no pretrained weights, so
nothing is downloaded) and records the backbone in layer 8 as the `model` variant.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
import torchvision
from torch import nn
from torchvision.models.segmentation.deeplabv3 import ASPP

BACKBONES = {
    "resnet18": (torchvision.models.resnet18, 64, 512),
    "resnet34": (torchvision.models.resnet34, 64, 512),
    "resnet50": (torchvision.models.resnet50, 256, 2048),
    "resnet101": (torchvision.models.resnet101, 256, 2048),
}
ASPP_RATES = (6, 12, 18)


def _dilate_last_stage(stage: nn.Module) -> None:
    """Output stride 16 for ResNets whose blocks torchvision cannot dilate (BasicBlock): stride 1, dilation 2."""
    for module in stage.modules():
        if isinstance(module, nn.Conv2d):
            if module.stride == (2, 2):
                module.stride = (1, 1)
            if module.kernel_size == (3, 3):
                module.dilation, module.padding = (2, 2), (2, 2)


class DeepLabV3Plus(nn.Module):
    """DeepLabv3+ over a ResNet encoder; logits at the input's resolution."""

    def __init__(
        self,
        backbone: str = "resnet50",
        in_channels: int = 16,
        classes: int = 3,
        aspp_channels: int = 256,
        low_level_channels: int = 48,
    ) -> None:
        super().__init__()
        if backbone not in BACKBONES:
            raise ValueError(f"backbone {backbone!r}: expected one of {', '.join(BACKBONES)}")
        build, low_in, high_in = BACKBONES[backbone]
        if backbone in ("resnet50", "resnet101"):
            net = build(weights=None, replace_stride_with_dilation=[False, False, True])
        else:
            net = build(weights=None)
            _dilate_last_stage(net.layer4)
        net.conv1 = nn.Conv2d(in_channels, 64, kernel_size=7, stride=2, padding=3, bias=False)
        self.stem = nn.Sequential(net.conv1, net.bn1, net.relu, net.maxpool)
        self.layer1, self.layer2, self.layer3, self.layer4 = net.layer1, net.layer2, net.layer3, net.layer4
        self.aspp = ASPP(high_in, list(ASPP_RATES), aspp_channels)
        self.project_low = nn.Sequential(
            nn.Conv2d(low_in, low_level_channels, 1, bias=False), nn.BatchNorm2d(low_level_channels), nn.ReLU()
        )
        self.decoder = nn.Sequential(
            nn.Conv2d(aspp_channels + low_level_channels, aspp_channels, 3, padding=1, bias=False),
            nn.BatchNorm2d(aspp_channels),
            nn.ReLU(),
            nn.Conv2d(aspp_channels, aspp_channels, 3, padding=1, bias=False),
            nn.BatchNorm2d(aspp_channels),
            nn.ReLU(),
            nn.Conv2d(aspp_channels, classes, 1),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        size = x.shape[-2:]
        low = self.layer1(self.stem(x))
        high = self.aspp(self.layer4(self.layer3(self.layer2(low))))
        high = F.interpolate(high, size=low.shape[-2:], mode="bilinear", align_corners=False)
        logits = self.decoder(torch.cat([high, self.project_low(low)], dim=1))
        return F.interpolate(logits, size=size, mode="bilinear", align_corners=False)


def train_flops_per_sample(backbone: str, height: int, width: int, in_channels: int = 16, classes: int = 3) -> int:
    """Forward and backward FLOPs of one sample, counted by torch's FlopCounterMode on the meta device."""
    from torch.utils.flop_counter import FlopCounterMode

    with torch.device("meta"):
        model = DeepLabV3Plus(backbone, in_channels, classes)
        x = torch.randn(2, in_channels, height, width)
        y = torch.randint(0, classes, (2, height, width))
    counter = FlopCounterMode(display=False)
    with counter:
        F.cross_entropy(model(x), y).backward()
    return int(counter.get_total_flops()) // 2
