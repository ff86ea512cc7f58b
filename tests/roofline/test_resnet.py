from __future__ import annotations

import pytest
import torch
import torchvision

from specbench.roofline.layers import training_bytes_per_sample, training_flops_per_sample
from specbench.roofline.resnet import conv_layers, resnet50_layers
from specbench.spec.builtin import find_spec
from specbench.spec.loader import apply_profile, load_spec

pytestmark = pytest.mark.needs("torch", "torchvision")


def _torchvision_convs(image: tuple[int, int, int], classes: int) -> dict[str, tuple[object, ...]]:
    """Every Conv2d of torchvision's resnet50 as run on a meta tensor: input shape, weight shape, stride, padding."""
    seen: dict[str, tuple[object, ...]] = {}
    with torch.device("meta"):
        model = torchvision.models.resnet50(num_classes=classes).eval()
        for name, module in model.named_modules():
            if isinstance(module, torch.nn.Conv2d):
                module.register_forward_hook(
                    lambda mod, inputs, out, name=name: seen.__setitem__(
                        name, (tuple(inputs[0].shape[1:]), tuple(mod.weight.shape), mod.stride[0], mod.padding[0])
                    )
                )
        model(torch.empty(1, *image))
    return seen


@pytest.mark.parametrize(("image", "classes"), [((3, 224, 224), 1000), ((3, 32, 32), 10)])
def test_layer_table_matches_torchvision(image: tuple[int, int, int], classes: int) -> None:
    ours = {
        layer.name: (
            (layer.conv.c, layer.conv.h, layer.conv.w),
            (layer.conv.k, layer.conv.c, layer.conv.r, layer.conv.s),
            layer.conv.stride,
            layer.conv.pad,
        )
        for layer in conv_layers(resnet50_layers(image, classes))
    }
    assert ours == _torchvision_convs(image, classes)
    params = sum(layer.params for layer in resnet50_layers(image, classes))
    assert params == sum(p.numel() for p in torchvision.models.resnet50(num_classes=classes).parameters())


@pytest.mark.parametrize(("spec_id", "profile"), [("caraml-resnet50", "official"), ("resnet50", "smoke")])
def test_training_flops_equal_the_specs(spec_id: str, profile: str) -> None:
    workload = apply_profile(load_spec(find_spec(spec_id)), profile).workload
    shape = workload.dataset.sample_shape
    assert shape is not None and workload.dataset.num_classes is not None
    layers = resnet50_layers((shape[0], shape[1], shape[2]), workload.dataset.num_classes)
    assert training_flops_per_sample(layers) == workload.flops_per_sample


def test_byte_count_behaves() -> None:
    layers = resnet50_layers()
    bf16 = training_bytes_per_sample(layers, 2, 256, mixed=True)
    fp32 = training_bytes_per_sample(layers, 4, 256, mixed=False)
    small_batch = training_bytes_per_sample(layers, 2, 8, mixed=True)
    assert 0 < bf16.fused < bf16.unfused < fp32.unfused < 2 * bf16.unfused
    assert small_batch.unfused > bf16.unfused
    assert small_batch.unfused - bf16.unfused == pytest.approx(small_batch.fused - bf16.fused)
    assert bf16.params == 25_557_032
