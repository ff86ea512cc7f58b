"""Device probe 32: how long the loader's crop kernels take per batch on the device (`crops.packed_planes`,
then `crops.crops_of_planes`: roi_align, flip, normalisation), time the training does not get; and a
leaner packing (int32 indices, one gather for the three channels) against the current one. One batch of
RandomResizedCrop regions of ImageNet's sizes, packed as the hardware decoder leaves them (RGB interleaved,
rows padded to 64 bytes). Checks that both packings agree, prints the best of `--repeat` timings.
On the 2-core CPU machine (2026-12-01, batches of 64 and 256) the ratio current / candidate spread
from 0.91 to 1.58 over six runs: not a measured gain there, so it stays a probe until the GPU says more.

    python3 lab/probes/probe32.py [--batch 256] [--device cuda] [--out $OUT/probe32.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch

from specbench.data.crops import (
    box_draws,
    boxes_of_draws,
    crop_boxes_xyxy,
    crops_of_planes,
    decode_regions,
    normalisation,
    packed_planes,
)
from specbench.data.imagedata import IMAGENET_MEAN, IMAGENET_STD


def candidate(flat: torch.Tensor, layout: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """A leaner `packed_planes`: int32 indices where the buffer allows, the three channels in one gather."""
    n = layout.shape[0]
    device = flat.device
    kind = torch.int32 if flat.numel() < 2**30 else torch.int64
    offset, h, w, sc, sy, sx = (layout[:, k].to(kind).view(n, 1, 1, 1) for k in range(6))
    y = torch.arange(height, device=device, dtype=kind).view(1, 1, height, 1)
    x = torch.arange(width, device=device, dtype=kind).view(1, 1, 1, width)
    channel = torch.arange(3, device=device, dtype=kind).view(1, 3, 1, 1)
    inside = (y < h) & (x < w)
    pixel = torch.where(inside, offset + y * sy + x * sx + channel * sc, flat.numel() - 1)
    planes = torch.empty((n, 4, height, width), dtype=torch.float32, device=device)
    planes[:, :3] = flat[pixel]
    planes[:, 3:] = inside
    return planes


def batch(n: int, device: str) -> tuple[torch.Tensor, torch.Tensor, int, int, torch.Tensor]:
    """One batch's regions (the crop boxes of images 380-520 x 300-420, widened by a pixel) packed as the
    engines pack them, random pixels; the canvas one pixel beyond the largest region."""
    generator = torch.Generator().manual_seed(0)
    heights = torch.randint(300, 421, (n,), generator=generator).double()
    widths = torch.randint(380, 521, (n,), generator=generator).double()
    boxes = crop_boxes_xyxy(boxes_of_draws(heights, widths, box_draws(n, generator)))
    regions, moved = decode_regions(boxes, torch.stack([heights, widths], dim=1))
    rows, cols = regions[:, 3], regions[:, 2]
    pitch = (cols * 3 + 63) // 64 * 64
    offsets = torch.zeros(n, dtype=torch.int64)
    offsets[1:] = torch.cumsum(rows * pitch, 0)[:-1]
    flat = torch.randint(0, 256, (int((rows * pitch).sum()) + 1,), dtype=torch.uint8, generator=generator)
    flat[-1] = 0
    layout = torch.stack([offsets, rows, cols, torch.ones(n, dtype=torch.int64), pitch, torch.full((n,), 3)], 1)
    return flat.to(device), layout.to(device), int(rows.max()) + 1, int(cols.max()) + 1, moved.to(device)


def best(fn: Any, args: tuple[Any, ...], repeat: int, device: str) -> float:
    times = []
    for _ in range(repeat):
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn(*args)
        if device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=256, help="images per batch (default 256)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--repeat", type=int, default=5, help="timings of each; the best is kept (default 5)")
    parser.add_argument("--out", type=Path, help="write the result as JSON here")
    args = parser.parse_args()
    flat, layout, height, width, moved = batch(args.batch, args.device)
    planes = packed_planes(flat, layout, height, width)
    if not torch.equal(planes, candidate(flat, layout, height, width)):
        raise SystemExit("packed_planes and the candidate disagree")
    share = float((layout[:, 1] * layout[:, 2]).double().mean()) / (height * width)
    norm = normalisation(IMAGENET_MEAN, IMAGENET_STD, args.device)
    flips = torch.zeros(args.batch, dtype=torch.bool, device=args.device)
    old = best(packed_planes, (flat, layout, height, width), args.repeat, args.device)
    new = best(candidate, (flat, layout, height, width), args.repeat, args.device)
    crops = best(crops_of_planes, (planes, moved, 224, norm, flips), args.repeat, args.device)
    result = {
        "probe": "probe32",
        "command": " ".join([sys.executable, *sys.argv]),
        "device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
        "torch": torch.__version__,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "batch": args.batch,
        "canvas": [height, width],
        "regions_share_of_canvas": share,
        "packed_planes_ms": old * 1e3,
        "candidate_ms": new * 1e3,
        "ratio_current_over_candidate": old / new,
        "crops_of_planes_ms": crops * 1e3,
    }
    print(
        f"{args.batch} regions, canvas {height} x {width}, {args.device} (the regions fill {share:.0%} of it): packed_planes {old * 1e3:.1f} ms, "
        f"candidate {new * 1e3:.1f} ms (ratio {old / new:.2f}), crops_of_planes {crops * 1e3:.1f} ms"
    )
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
