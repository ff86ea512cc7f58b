"""MLPerf HPC DeepCAM's reference network: its parameters and training FLOPs against its layer list, and its shapes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from specbench.workloads.extreme_weather.deepcam_reference import (
    DeepCamReference,
    _conv_backward_flop,
    reference_parameter_count,
    reference_train_flops_per_sample,
)

pytestmark = pytest.mark.needs("torch")

TRAIN_FLOPS_PER_SAMPLE = 1_963_974_567_936
PARAMETERS = 56_454_720

# (in, out, kernel, groups, positions, bias, batch norm) of one convolution.
Conv = tuple[int, int, int, int, int, bool, bool]


def _separable(cin: int, cout: int, positions: int, bn: bool = False) -> Iterator[Conv]:
    yield (cin, cin, 3, cin, positions, False, False)
    yield (cin, cout, 1, 1, positions, False, bn)


def _block(
    cin: int, cout: int, reps: int, size: int, stride: int = 1, grow_first: bool = True, last: bool = False
) -> Iterator[Conv]:
    """deeplab_xception.py's Block(inplanes, planes, reps, stride, grow_first, is_last) at `size` input positions."""
    out_size = size // (stride * stride)
    if cout != cin or stride != 1:
        yield (cin, cout, 1, 1, out_size, False, True)
    pairs = [(cin, cout)] + [(cout, cout)] * (reps - 1) if grow_first else [(cin, cin)] * (reps - 1) + [(cin, cout)]
    for a, b in pairs:
        yield from _separable(a, b, size, bn=True)
    if stride != 1 or last:
        yield from _separable(cout, cout, out_size)


def _reference_layers(height: int, width: int) -> Iterator[Conv]:
    """Every convolution of DeepLabv3_plus(n_input=16, n_classes=3, os=16), written from its constructor arguments.

    Transposed convolutions are placed at their input positions, as torch's flop counter counts them.
    """
    s2, s4, s8, s16 = (height * width // f**2 for f in (2, 4, 8, 16))
    yield (16, 32, 3, 1, s2, False, True)
    yield (32, 64, 3, 1, s2, False, True)
    yield from _block(64, 128, 2, s2, stride=2)
    yield from _block(128, 256, 2, s4, stride=2)
    yield from _block(256, 728, 2, s8, stride=2, last=True)
    for _ in range(16):
        yield from _block(728, 728, 3, s16)
    yield from _block(728, 1024, 2, s16, grow_first=False, last=True)
    for cin, cout in ((1024, 1536), (1536, 1536), (1536, 2048)):
        yield from _separable(cin, cout, s16, bn=True)
    yield (2048, 256, 1, 1, s16, False, True)
    yield from ((2048, 256, 3, 1, s16, False, True) for _rate in (6, 12, 18))
    yield (2048, 256, 1, 1, 1, False, False)  # image pooling; its affine adds 2 x 256 parameters
    yield (1280, 256, 1, 1, s16, False, True)
    yield (128, 48, 1, 1, s4, False, True)
    yield (256, 256, 3, 1, s16, False, True)
    yield (256, 256, 3, 1, s8, False, True)
    yield (304, 256, 3, 1, s4, False, True)
    yield (256, 256, 3, 1, s4, False, True)
    yield (256, 256, 1, 1, s4, True, False)
    yield (256, 256, 3, 1, s4, False, True)
    yield (256, 3, 3, 1, s2, False, False)


def test_parameter_count_is_the_reference_layer_lists() -> None:
    layers = list(_reference_layers(768, 1152))
    expected = sum(cin // g * cout * k * k + bias * cout + bn * 2 * cout for cin, cout, k, g, _, bias, bn in layers)
    assert expected + 2 * 256 == PARAMETERS
    assert reference_parameter_count() == PARAMETERS


def test_training_flops_per_sample_are_three_forwards_less_the_first_input_gradient() -> None:
    macs = [cin // g * cout * k * k * positions for cin, cout, k, g, positions, _, _ in _reference_layers(768, 1152)]
    assert 2 * (3 * sum(macs) - macs[0]) == TRAIN_FLOPS_PER_SAMPLE
    assert reference_train_flops_per_sample() == TRAIN_FLOPS_PER_SAMPLE


def test_grouped_convolution_weight_gradient_costs_what_its_forward_does() -> None:
    conv = torch.nn.Conv2d(64, 64, 3, padding=1, groups=64, bias=False)
    x = torch.randn(1, 64, 8, 8, requires_grad=True)
    counter = FlopCounterMode(display=False, custom_mapping={torch.ops.aten.convolution_backward: _conv_backward_flop})
    with counter:
        conv(x).sum().backward()
    forward = 2 * 9 * 64 * 8 * 8
    assert counter.get_flop_counts()["Global"] == {
        torch.ops.aten.convolution: forward,
        torch.ops.aten.convolution_backward: 2 * forward,
    }


def test_forward_gives_three_class_logits_at_the_input_size_from_stride_16_features() -> None:
    torch.manual_seed(0)
    model = DeepCamReference()
    x = torch.randn(1, 16, 32, 48)
    features, low_level = model.xception_features(x)
    assert features.shape == (1, 2048, 2, 3) and low_level.shape == (1, 128, 8, 12)
    logits = model(x)
    assert logits.shape == (1, 3, 32, 48)
    torch.nn.functional.cross_entropy(logits, torch.randint(0, 3, (1, 32, 48))).backward()
    assert all(p.grad is not None for p in model.parameters())
    with torch.device("meta"):
        assert DeepCamReference()(torch.empty(1, 16, 768, 1152)).shape == (1, 3, 768, 1152)
