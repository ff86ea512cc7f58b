"""What a roofline measurement runs: presets per device and profile, and the ResNet-50 conv geometries."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, cast

from specbench.errors import UsageError
from specbench.roofline.format import PRECISIONS, ConvShape, Precision
from specbench.roofline.resnet import conv_layers, resnet50_layers
from specbench.roofline.timing import RepeatPolicy

MiB = 2**20


@dataclass(frozen=True)
class MeasureConfig:
    """What to measure and how long; `profile` names the preset it came from."""

    profile: str
    device: str
    precisions: tuple[Precision, ...]
    gemm_sizes: tuple[int, ...]
    conv_precisions: tuple[Precision, ...]
    conv_batch: int
    conv_image: tuple[int, int, int]
    copy_buffer_bytes: tuple[int, ...]
    policy: RepeatPolicy
    hold_s: float
    interval_s: float = 0.1
    channels_last: bool = True
    threads: int | None = None
    max_input_sets: int = 8
    command: str = field(default_factory=lambda: " ".join(sys.argv))


PROFILES: dict[tuple[str, str], dict[str, Any]] = {
    ("cuda", "full"): {
        "precisions": PRECISIONS,
        "gemm_sizes": (2048, 3072, 4096, 6144, 8192, 12288, 16384),
        "conv_precisions": ("bf16",),
        "conv_batch": 256,
        "conv_image": (3, 224, 224),
        "copy_buffer_bytes": (256 * MiB, 1024 * MiB, 4096 * MiB),
        "policy": RepeatPolicy(warmup=3, target_s=0.05, min_repeats=5, max_repeats=30),
        "hold_s": 2.0,
    },
    ("cpu", "full"): {
        "precisions": ("fp32", "bf16"),
        "gemm_sizes": (256, 512, 1024, 2048),
        "conv_precisions": ("fp32",),
        "conv_batch": 8,
        "conv_image": (3, 224, 224),
        "copy_buffer_bytes": (64 * MiB, 256 * MiB),
        "policy": RepeatPolicy(warmup=2, target_s=0.2, min_repeats=3, max_repeats=50, min_sample_s=0.01),
        "hold_s": 2.0,
    },
    ("cpu", "quick"): {
        "precisions": ("fp32", "bf16"),
        "gemm_sizes": (64, 128),
        "conv_precisions": ("fp32",),
        "conv_batch": 2,
        "conv_image": (3, 32, 32),
        "copy_buffer_bytes": (4 * MiB,),
        "policy": RepeatPolicy(warmup=1, target_s=0.002, min_repeats=3, max_repeats=10, min_sample_s=0.0005),
        "hold_s": 0.2,
        "max_input_sets": 1,
    },
    ("cuda", "quick"): {
        "precisions": PRECISIONS,
        "gemm_sizes": (1024, 4096),
        "conv_precisions": ("bf16",),
        "conv_batch": 32,
        "conv_image": (3, 224, 224),
        "copy_buffer_bytes": (256 * MiB,),
        "policy": RepeatPolicy(warmup=2, target_s=0.02, min_repeats=3, max_repeats=20),
        "hold_s": 0.5,
    },
}


def default_config(device: str, profile: str = "full", **overrides: Any) -> MeasureConfig:
    """The preset for a device ('cuda' or 'cpu') and profile ('full' or 'quick'), with overrides."""
    if (device, profile) not in PROFILES:
        raise UsageError(f"no roofline profile {profile!r} for device {device!r}; profiles: full, quick")
    values = dict(PROFILES[(device, profile)])
    values.update({k: v for k, v in overrides.items() if v is not None})
    for key in ("precisions", "conv_precisions"):
        values[key] = tuple(_precision(p) for p in values[key])
    return MeasureConfig(profile=profile, device=device, **values)


def resolve_device(device: str) -> str:
    """'auto' is 'cuda' where torch sees a GPU, else 'cpu'."""
    if device != "auto":
        return device
    try:
        import torch
    except ImportError as err:
        raise UsageError("measuring a roofline needs torch: pip install 'specbench[run]'") from err
    return "cuda" if torch.cuda.is_available() else "cpu"


def _precision(name: str) -> Precision:
    if name not in PRECISIONS:
        raise UsageError(f"unknown precision {name!r}; known: {', '.join(PRECISIONS)}")
    return cast(Precision, name)


def conv_shapes(batch: int, image: tuple[int, int, int]) -> list[ConvShape]:
    """The distinct conv geometries of ResNet-50 v1.5 at this batch and image size, with how often each occurs."""
    groups: dict[tuple[int, int, int, int, int, int, int, int], list[str]] = {}
    geometries = {}
    for layer in conv_layers(resnet50_layers(image)):
        g = layer.geometry
        assert g is not None
        key = (g.c, g.h, g.w, g.k, g.r, g.s, g.stride, g.pad)
        groups.setdefault(key, []).append(layer.name)
        geometries[key] = g
    shapes = []
    for key, names in groups.items():
        g = geometries[key]
        fields = {"c": g.c, "h": g.h, "w": g.w, "k": g.k, "r": g.r, "s": g.s, "stride": g.stride, "pad": g.pad}
        shapes.append(ConvShape(names=names, count=len(names), n=batch, p=g.p, q=g.q, **fields))
    return shapes


def backward_data_count(shape: ConvShape) -> int:
    """Layers of this geometry whose input needs a gradient in training (all but the stem's conv1)."""
    return shape.count - (1 if "conv1" in shape.names else 0)
