"""The GPU pipeline's crops of one batch: the fused Triton kernel (cropkernel.py) against crops.py's torch
kernels (float planes of the batch, roi_align, flip, normalisation, copy into the channels_last batch),
in the same run on the same batch. One batch of RandomResizedCrop regions of ImageNet's sizes (images
380-520 x 300-420), packed as the hardware decoder leaves them (`lab/probes/probe32.py`'s batch).
Prints each one's time per batch (the median of `--repeat`, CUDA events), the ratio torch / triton and
the largest difference between their crops.

    python3 benchmarks/crop_kernel.py [--batch 256] [--repeat 20] [--out $OUT/crop_kernel.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lab" / "probes"))
from probe32 import batch

from specbench.data import cropkernel
from specbench.data.crops import crops_of_planes, normalisation, packed_planes
from specbench.data.jpegloader import IMAGENET_MEAN, IMAGENET_STD


def torch_path(flat: Any, layout: Any, height: int, width: int, boxes: Any, flips: Any, norm: Any, out: Any) -> None:
    """What DeviceImageLoader.assemble runs with augment_kernel=torch for a batch of one canvas group."""
    out.copy_(crops_of_planes(packed_planes(flat, layout, height, width), boxes, out.shape[-1], norm, flips))


def fused(flat: Any, layout: Any, height: int, width: int, boxes: Any, flips: Any, norm: Any, out: Any) -> None:
    cropkernel.fused_crops(flat, layout, boxes, flips, norm, out)


def timed(fn: Any, args: tuple[Any, ...], repeat: int) -> float:
    """Median milliseconds of `fn(*args)` on the device, after two untimed calls (compilation, allocation)."""
    for _ in range(2):
        fn(*args)
    times = []
    for _ in range(repeat):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*args)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=256, help="images per batch (default 256)")
    parser.add_argument("--size", type=int, default=224, help="crop size (default 224)")
    parser.add_argument("--repeat", type=int, default=20, help="timed calls of each (default 20)")
    parser.add_argument("--out", type=Path, help="write the result as JSON here")
    args = parser.parse_args()
    if not torch.cuda.is_available() or not cropkernel.available("cuda"):
        raise SystemExit("this benchmark needs a CUDA GPU and Triton")
    flat, layout, height, width, boxes = batch(args.batch, "cuda")
    flips = torch.rand(args.batch, generator=torch.Generator().manual_seed(1)) < 0.5
    flips = flips.cuda()
    norm = normalisation(IMAGENET_MEAN, IMAGENET_STD, "cuda")
    outs = [
        torch.empty((args.batch, 3, args.size, args.size), device="cuda").contiguous(memory_format=torch.channels_last)
        for _ in range(2)
    ]
    common = (flat, layout, height, width, boxes, flips, norm)
    torch_path(*common, outs[0])
    fused(*common, outs[1])
    difference = float((outs[0] - outs[1]).abs().max())
    old = timed(torch_path, (*common, outs[0]), args.repeat)
    new = timed(fused, (*common, outs[1]), args.repeat)
    result = {
        "benchmark": "crop_kernel",
        "command": " ".join([sys.executable, *sys.argv]),
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": __import__("triton").__version__,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "batch": args.batch,
        "size": args.size,
        "canvas": [height, width],
        "torch_kernels_ms": old,
        "triton_kernel_ms": new,
        "ratio_torch_over_triton": old / new,
        "max_abs_difference": difference,
    }
    print(
        f"{args.batch} crops of {args.size}: torch kernels {old:.2f} ms, triton kernel {new:.3f} ms per batch "
        f"(ratio {old / new:.1f}); largest difference {difference:.2e}",
        flush=True,
    )
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
