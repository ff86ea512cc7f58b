"""In one process: the compiled ResNet-50 step fed synthetic tensors, then the GPU JPEG pipeline's batches.

A probe for benchmarks/imagenet_input.py: one compiled model serves every variant (reading threads,
queue depth), so each costs seconds; the ratio says how much of the step the data path takes away.
"""

from __future__ import annotations

import time
from typing import Any

import torch
import torchvision

from specbench.executors.datapath import crop_geometry
from specbench.executors.jpegloader import DeviceImageLoader


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


def _timed(step: Any, batches: Any, count: int, batch: int) -> float:
    for _ in range(3):
        step(*next(batches))
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(count):
        step(*next(batches))
    torch.cuda.synchronize()
    return count * batch / (time.perf_counter() - t0)


def probe(tree: Any, batch: int, workers: list[int], depths: list[int]) -> dict[str, Any]:
    """img/s of the step on synthetic data and on the pipeline per (workers, depth), with their ratios."""
    step, synthetic = _model(batch)
    for _ in range(20):
        step(*synthetic)

    def repeat() -> Any:
        while True:
            yield synthetic

    count = min(len(tree.train) // batch - 4, 90)
    base = _timed(step, repeat(), count, batch)
    out: dict[str, Any] = {"steps": count, "synthetic img/s": base}
    for w in workers:
        for depth in depths:
            loader = DeviceImageLoader(
                tree.root,
                tree.train,
                batch_size=batch,
                train=True,
                geometry=crop_geometry([3, 224, 224]),
                device=torch.device("cuda"),
                decoder="nvjpeg",
                workers=w,
                seed=3,
                depth=depth,
            )
            try:
                real = _timed(step, iter(loader.epoch(1)), count, batch)
            finally:
                loader.close()
            out[f"pipeline workers={w} depth={depth} img/s"] = real
            out[f"pipeline workers={w} depth={depth} ratio"] = real / base
    return out
