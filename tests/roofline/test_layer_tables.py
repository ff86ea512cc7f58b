"""The DeepLabv3+ and GPT layer tables of the byte models against the models the executors build."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from specbench.accounting.flops import GptShape, gpt_train_flops_per_token
from specbench.roofline.deeplab import deeplab_layers
from specbench.roofline.gpt import gpt_layers
from specbench.roofline.layers import (
    OPTIMIZER_BYTES_PER_PARAM,
    Layer,
    activation_elems,
    training_bytes_per_sample,
    training_flops_per_sample,
)
from specbench.spec.builtin import find_spec
from specbench.spec.loader import apply_profile, load_spec

pytestmark = pytest.mark.needs("torch", "torchvision", "transformers")


def _module_convs(model: torch.nn.Module, shape: tuple[int, ...]) -> dict[str, tuple[object, ...]]:
    """Every Conv2d as run on a meta tensor: input shape, weight shape, stride, padding, dilation."""
    seen: dict[str, tuple[object, ...]] = {}
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Conv2d):
            module.register_forward_hook(
                lambda mod, inputs, out, name=name: seen.__setitem__(
                    name,
                    (
                        tuple(inputs[0].shape[1:]),
                        tuple(mod.weight.shape),
                        mod.stride[0],
                        mod.padding[0],
                        mod.dilation[0],
                    ),
                )
            )
    model(torch.empty(2, *shape, device="meta"))
    return seen


def _table_convs(layers: list[Layer]) -> dict[str, tuple[object, ...]]:
    return {
        layer.name: (
            (layer.conv.c, layer.conv.h, layer.conv.w),
            (layer.conv.k, layer.conv.c, layer.conv.r, layer.conv.s),
            layer.conv.stride,
            layer.conv.pad,
            layer.conv.dilation,
        )
        for layer in layers
        if layer.op == "conv"
    }


@pytest.mark.parametrize(
    ("backbone", "aspp", "shape"),
    [("resnet18", 128, (16, 64, 96)), ("resnet50", 256, (16, 64, 96)), ("resnet34", 256, (4, 32, 48))],
)
def test_deeplab_table_matches_the_module(backbone: str, aspp: int, shape: tuple[int, int, int]) -> None:
    from specbench.workloads.extreme_weather.deeplab import DeepLabV3Plus

    with torch.device("meta"):
        model = DeepLabV3Plus(backbone, shape[0], 3, aspp, 48)
    layers = deeplab_layers(backbone, shape, 3, aspp, 48)
    assert _table_convs(layers) == _module_convs(model, shape)
    assert sum(layer.params for layer in layers) == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("profile", ["official", "smoke"])
def test_deeplab_flops_equal_the_spec_for_every_variant(profile: str) -> None:
    workload = apply_profile(load_spec(find_spec("extreme-weather")), profile).workload
    shape = workload.dataset.sample_shape
    assert shape is not None and workload.dataset.num_classes is not None
    tabled = {name: v for name, v in workload.variants.items() if "backbone" in v.params}
    # The MLPerf reference network has no layer table; its FLOPs are counted from the module
    # (tests/test_extreme_weather.py), and the roofline refuses it (test below).
    assert set(workload.variants) - set(tabled) == {"mlperf-reference"}
    for name, variant in tabled.items():
        params = variant.params
        image = (shape[0], shape[1], shape[2])
        layers = deeplab_layers(
            str(params["backbone"]), image, workload.dataset.num_classes, int(params["aspp_channels"])
        )
        assert training_flops_per_sample(layers) == variant.flops_per_sample, name


@pytest.mark.parametrize(("variant", "padding"), [("tiny", 1), ("800M", 128)])
def test_gpt_table_has_the_model_s_parameters_and_matmul_flops(variant: str, padding: int) -> None:
    from transformers import GPT2Config, GPT2LMHeadModel

    workload = apply_profile(load_spec(find_spec("llm-gpt")), "smoke" if variant == "tiny" else "official").workload
    p = workload.variants[variant].params
    shape = GptShape(*(int(p[key]) for key in ("hidden", "layers", "heads", "sequence_length", "vocab")))
    vocab = -(-shape.vocab // padding) * padding
    layers = gpt_layers(shape, vocab, eager_attention=False, dropout=True, checkpointing=False)
    config = GPT2Config(vocab_size=vocab, n_positions=shape.sequence, n_embd=shape.hidden, n_layer=shape.layers)
    config.n_head = shape.heads
    with torch.device("meta"):
        model = GPT2LMHeadModel(config)
    assert sum(layer.params for layer in layers) == sum(p.numel() for p in model.parameters())
    attention = 12.0 * shape.layers * shape.hidden * shape.sequence
    model_flops = gpt_train_flops_per_token(shape)
    assert training_flops_per_sample(layers) + attention == pytest.approx(model_flops, rel=0.01)


def test_gpt_options_add_the_traffic_they_cause() -> None:
    shape = GptShape(hidden=128, layers=2, heads=4, sequence=128, vocab=256)

    def unfused(**options: bool) -> float:
        layers = gpt_layers(
            shape, 256, **{"eager_attention": False, "dropout": False, "checkpointing": False, **options}
        )
        return training_bytes_per_sample(layers, 4, 16 * 128, mixed=False, optimizer="adamw").unfused

    plain = unfused()
    scores = 11 * shape.heads * shape.sequence * shape.layers * 4  # the score matrix, 11 passes, fp32
    assert unfused(eager_attention=True) - plain == pytest.approx(scores)
    assert unfused(dropout=True) > plain
    assert plain < unfused(checkpointing=True) < 2 * plain


def test_optimizer_state_is_shared_by_the_samples_of_a_step() -> None:
    layers = deeplab_layers("resnet18", (16, 64, 96), 3, 128)
    params = sum(layer.params for layer in layers)
    sgd = training_bytes_per_sample(layers, 4, 16, mixed=False, optimizer="sgd")
    adam = training_bytes_per_sample(layers, 4, 16, mixed=False, optimizer="adamw")
    assert adam.unfused - sgd.unfused == pytest.approx(params * 8 / 16)
    assert adam.unfused - adam.fused == pytest.approx(
        4 * sum(activation_elems(layer) for layer in layers if layer.op not in ("conv", "fc", "attention"))
    )
    assert set(OPTIMIZER_BYTES_PER_PARAM) == {"sgd", "lars", "adam", "adamw"}
    with pytest.raises(ValueError, match=r"no byte count for optimizer 'lamb' \(known: sgd, lars, adam, adamw\)"):
        training_bytes_per_sample(layers, 4, 16, mixed=False, optimizer="lamb")


def test_the_roofline_refuses_a_deeplab_variant_without_a_layer_table() -> None:
    from types import SimpleNamespace

    from specbench.roofline.bytemodels import BYTE_MODELS, RunContext

    result: Any = SimpleNamespace(settings={"model": "mlperf-reference"}, hyperparameters={})
    run = RunContext(
        Path("run_1"), result, "deeplabv3plus", [16, 768, 1152], 3, None, None,
        variant={"network": "mlperf-deepcam-reference"},
    )  # fmt: skip
    with pytest.raises(ValueError, match="'mlperf-reference' is not a DeepLabv3\\+ on a ResNet encoder"):
        BYTE_MODELS.get("deeplabv3plus")(run, 8, "bf16")
