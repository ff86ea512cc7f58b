"""The fused Triton crop kernel against crops.py's torch kernels: in Triton's interpreter on a CPU, on CUDA too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from specbench.data import cropkernel
from specbench.data.imagenet import ImageTree, scan_tree
from specbench.data.jpegloader import DeviceImageLoader, Geometry, LoaderOptions
from specbench.data.jpegtree import TreeSpec, write_tree
from specbench.errors import UsageError

pytestmark = pytest.mark.needs("torch", "torchvision", "triton")

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
# Triton 3.6's interpreter (the GPU machine's) fails on a loop bounded by a loaded value; 3.8's runs the kernel
INTERPRETER = pytest.mark.skipif(
    tuple(int(v) for v in __import__("triton").__version__.split(".")[:2]) < (3, 8),
    reason="Triton's interpreter before 3.8 cannot run the kernel's loops",
)
# On CUDA the kernel and roi_align round differently (fused multiply-adds, summation order): within 5e-4 of a
# normalised value, 0.03 of one uint8 level of a pixel; in the interpreter (numpy, no fusion) within 1e-5
CUDA_TOLERANCE = 5e-4

# Run in a child process: Triton reads TRITON_INTERPRET when a kernel is defined, at import.
COMPARE = r"""
import json, sys, warnings
import torch
warnings.simplefilter("ignore")
from specbench.data import cropkernel
from specbench.data.crops import (
    center_boxes, crop_boxes_xyxy, crops_of_planes, normalisation, packed_planes, random_resized_boxes)
from specbench.data.jpegloader import IMAGENET_MEAN, IMAGENET_STD, _packed

device = sys.argv[1]
g = torch.Generator().manual_seed(7)
norm = normalisation(IMAGENET_MEAN, IMAGENET_STD, device)
report = {}
for size, low, high in ((16, 6, 70), (24, 20, 40)):
    n = 9
    images = []
    for k in range(n):
        h, w = (int(v) for v in torch.randint(low, high, (2,), generator=g))
        image = torch.randint(0, 256, (3, h, w), dtype=torch.uint8, generator=g)
        if k % 2:  # interleaved (H, W, 3), as the engines and libjpeg-turbo write pixels
            image = image.permute(1, 2, 0).contiguous().permute(2, 0, 1)
        images.append(image.to(device))
    flat, layout = _packed(images)
    sizes = layout[:, 1:3]
    h, w = sizes[:, 0].double(), sizes[:, 1].double()
    cases = {
        "random resized crops": crop_boxes_xyxy(random_resized_boxes(sizes[:, 0], sizes[:, 1], g)),
        "centre crops": center_boxes(sizes[:, 0], sizes[:, 1], round(size * 256 / 224), size),
        "whole images": torch.stack([torch.zeros_like(w), torch.zeros_like(h), w, h], dim=1),
        "one pixel at the far corner": torch.stack([w - 1, h - 1, w, h], dim=1),
        "fractional boxes": torch.stack([w * 0.13, h * 0.31, w * 0.77, h * 0.97], dim=1),
    }
    height, width = (int(v) + 1 for v in sizes.max(dim=0).values)
    planes = packed_planes(flat, layout.to(device), height, width)
    for name, boxes in cases.items():
        flips = torch.rand(n, generator=g) < 0.5
        reference = crops_of_planes(planes, boxes, size, norm, flips)
        for memory_format in (torch.channels_last, torch.contiguous_format):
            out = torch.empty((n, 3, size, size), device=device).contiguous(memory_format=memory_format)
            cropkernel.fused_crops(flat, layout.to(device), boxes, flips, norm, out)
            key = f"{size} {name} {'channels_last' if memory_format == torch.channels_last else 'contiguous'}"
            report[key] = float((out - reference).abs().max())
report["largest value"] = float(reference.abs().max())
print(json.dumps(report))
"""

LOADER = r"""
import json, sys, warnings
from pathlib import Path
import torch
warnings.simplefilter("ignore")
from specbench.data.imagenet import scan_tree
from specbench.data.jpegloader import DeviceImageLoader, Geometry, LoaderOptions

tree = scan_tree(Path(sys.argv[1]))
report = {}
for train in (True, False):
    batches = {}
    for kernel in ("torch", "triton"):
        options = LoaderOptions(
            batch_size=4, geometry=Geometry(32, 37), device=torch.device("cpu"), decoder="libjpeg", workers=2,
            seed=3, kernel=kernel)
        loader = DeviceImageLoader(tree.root, tree.train if train else tree.val, options, train=train)
        try:
            batches[kernel] = list(loader.epoch(1))[:3]
        finally:
            loader.close()
    diffs = [float((a - b).abs().max()) for (a, _), (b, _) in zip(batches["torch"], batches["triton"], strict=True)]
    same = all(torch.equal(la, lb) for (_, la), (_, lb) in zip(batches["torch"], batches["triton"], strict=True))
    layout = all(a.is_contiguous(memory_format=torch.channels_last) for a, _ in batches["triton"])
    report["train" if train else "eval"] = {"max": max(diffs), "labels": same, "channels_last": layout}
print(json.dumps(report))
"""


def device_loader(tree: ImageTree, train: bool, device: str, decoder: str, kernel: str, **kw: Any) -> DeviceImageLoader:
    split = tree.train if train else tree.val
    options: dict[str, Any] = {"batch_size": 4, "workers": 2, "seed": 3, **kw}
    chosen = LoaderOptions(
        geometry=Geometry(32, 37), device=torch.device(device), decoder=decoder, kernel=kernel, **options
    )
    return DeviceImageLoader(tree.root, split, chosen, train=train)


def interpreted(script: str, *args: str) -> dict[str, object]:
    env = {**os.environ, "TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@INTERPRETER
def test_the_kernel_gives_the_torch_kernels_crops_in_the_interpreter() -> None:
    report = interpreted(COMPARE, "cpu")
    largest = report.pop("largest value")
    assert isinstance(largest, float) and largest > 1.0  # normalised pixels, not zeros
    assert len(report) == 20
    worst = max(report.values())  # type: ignore[type-var]
    assert worst < 1e-5, report  # float32 rounding of values up to about 2.6


@INTERPRETER
def test_the_loader_gives_the_same_batches_with_either_kernel(tmp_path: Path) -> None:
    spec = TreeSpec(classes=2, train_per_class=7, val_per_class=3, widths=(40, 70), heights=(30, 60), flat_val=True)
    write_tree(tmp_path, spec)
    report = interpreted(LOADER, str(tmp_path))
    for part in ("train", "eval"):
        row = report[part]
        assert isinstance(row, dict)
        assert row["labels"] and row["channels_last"] and row["max"] < 1e-5, report


def test_without_the_interpreter_the_kernel_needs_a_cuda_device(tmp_path: Path) -> None:
    if os.environ.get("TRITON_INTERPRET") == "1":
        pytest.skip("this process runs Triton's interpreter")
    assert not cropkernel.available("cpu")
    write_tree(tmp_path, TreeSpec(classes=2, train_per_class=4, val_per_class=2, widths=(40, 41), heights=(30, 31)))
    tree = scan_tree(tmp_path)
    for kernel, message in (
        ("triton", "augment_kernel triton runs on a CUDA device"),
        ("cuda", "augment_kernel 'cuda'"),
    ):
        with pytest.raises(UsageError, match=message):
            device_loader(tree, True, "cpu", "libjpeg", kernel, batch_size=2, workers=1)


@pytest.mark.gpu
@CUDA
def test_the_kernel_gives_the_torch_kernels_crops_on_cuda() -> None:
    proc = subprocess.run([sys.executable, "-c", COMPARE, "cuda"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    report.pop("largest value")
    print(report)
    assert max(report.values()) < CUDA_TOLERANCE, report


@pytest.mark.gpu
@CUDA
@pytest.mark.parametrize("train", [True, False])
def test_the_hardware_path_gives_the_same_batches_with_either_kernel(tmp_path: Path, train: bool) -> None:
    spec = TreeSpec(classes=3, train_per_class=8, val_per_class=4, widths=(60, 90), heights=(50, 80), flat_val=True)
    write_tree(tmp_path, spec)
    tree = scan_tree(tmp_path)
    batches = {}
    for kernel in ("torch", "triton"):
        loader = device_loader(tree, train, "cuda", "nvjpeg", kernel)
        try:
            batches[kernel] = [(x.cpu(), y.cpu()) for x, y in loader.epoch(1)]
            assert loader.hardware is None or loader.engine_images > 0
        finally:
            loader.close()
    for (a, la), (b, lb) in zip(batches["torch"], batches["triton"], strict=True):
        assert torch.equal(la, lb) and float((a - b).abs().max()) < CUDA_TOLERANCE
