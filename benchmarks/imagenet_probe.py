"""In one process: the compiled ResNet-50 step fed synthetic tensors, then the GPU JPEG pipeline's batches.

A probe for benchmarks/imagenet_input.py: one compiled model serves every variant (reading threads,
queue depth), so each costs seconds; the ratio says how much of the step the data path takes away.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import torch
import torchvision

from specbench.data.jpegloader import DeviceImageLoader, LoaderOptions
from specbench.workloads.resnet50.datapath import crop_geometry


def _model(batch: int) -> tuple[Any, Any]:
    model = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.875, fused=True)
    criterion = torch.nn.CrossEntropyLoss(label_smoothing=0.1)
    compiled = torch.compile(model)

    def step(images: torch.Tensor, labels: torch.Tensor) -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = criterion(compiled(images), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    images = torch.randn(batch, 3, 224, 224, device="cuda").contiguous(memory_format=torch.channels_last)
    labels = torch.randint(0, 1000, (batch,), device="cuda")
    return step, (images, labels)


def _timed(step: Any, batches: Any, count: int, batch: int) -> tuple[float, float]:
    """Images per second over `count` steps after three, and the share of that time spent waiting for batches."""
    for _ in range(3):
        step(*next(batches))
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    waited = 0.0
    for _ in range(count):
        w0 = time.perf_counter()
        item = next(batches)
        waited += time.perf_counter() - w0
        step(*item)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    return count * batch / seconds, waited / seconds


def _loader(tree: Any, batch: int, workers: int, depth: int, **options: Any) -> DeviceImageLoader:
    chosen = LoaderOptions(
        batch_size=batch,
        geometry=crop_geometry([3, 224, 224]),
        device=torch.device("cuda"),
        decoder=options.pop("decoder", "nvjpeg"),
        workers=workers,
        seed=3,
        depth=depth,
        **options,
    )
    return DeviceImageLoader(tree.root, tree.train, chosen, train=True)


def probe(
    tree: Any, batch: int, workers: list[int], depths: list[int], variants: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """img/s of the step on synthetic data and fed by the pipeline, per (workers, depth) or per loader variant.

    A variant is a dict of LoaderOptions fields (`cpu_share`, `stream_priority`, `decoder`), plus
    `workers`, `depth` and `switch_interval` (sys.setswitchinterval while it runs); `alone: True` times the
    pipeline without training.
    """
    step, synthetic = _model(batch)
    for _ in range(20):
        step(*synthetic)

    def repeat() -> Any:
        while True:
            yield synthetic

    count = min(len(tree.train) // batch - 4, 90)
    base, _ = _timed(step, repeat(), count, batch)
    out: dict[str, Any] = {"steps": count, "synthetic img/s": base}
    if variants is None:
        variants = [{"workers": w, "depth": d} for w in workers for d in depths]
    for variant in variants:
        options = dict(variant)
        name = " ".join(f"{k}={v}" for k, v in variant.items())
        alone = options.pop("alone", False)
        interval = options.pop("switch_interval", None)
        loader = _loader(tree, batch, options.pop("workers", 15), options.pop("depth", 3), **options)
        before = sys.getswitchinterval()
        if interval is not None:
            sys.setswitchinterval(interval)
        try:
            if alone:
                real, waited = _timed(lambda images, labels: None, iter(loader.epoch(1)), count, batch)
            else:
                real, waited = _timed(step, iter(loader.epoch(1)), count, batch)
        finally:
            sys.setswitchinterval(before)
            loader.close()
        out[name] = {"img/s": real, "ratio": real / base, "waiting": waited}
        print(f"probe {name:<60} {real:>9,.0f} img/s  ratio {real / base:.3f}  waiting {waited:.2f}", flush=True)
    return out
