"""ResNet-50's stem max pooling (after its ReLU), forward and backward, in three forms, timed on one GPU.

The profile of the training step (docs/performance.md) puts about 1.8 ms of 37 at batch 256 in the
stem's 3x3, stride-2 max pooling, most of it in inductor's backward kernel. This times, at one batch size,
bf16 in channels-last memory, `max_pool2d(relu(x), 3, 2, 1)` and the gradient of x:

- eager: torch's own kernels;
- inductor: the same under torch.compile (what the executors run);
- triton: specbench.workloads.fused_pool's kernels (the ReLU by torch);
- inductor, nine views: the pooling written as the maximum of its nine strided views of the padded input,
  under torch.compile. Its gradient differs from max_pool2d's only where two values of a window tie
  for the maximum (max_pool2d gives the first the whole gradient, torch.maximum splits it); after the
  ReLU most ties are zeros, whose gradient the ReLU's backward discards either way. The script
  reports how many gradient values differ.

Timed as plain calls (a few kernels of a millisecond or more each, against microseconds of launches); the bytes the
forward and backward must move at least (input read, output written, output gradient read, input
gradient written) give the bandwidth each reaches.

Usage (on a CUDA machine, from the repository root):
    python benchmarks/pool_kernels.py [--batch 400] [--iters 20] [--json FILE]
"""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from gpu_env import median_ms, write_report

from specbench.workloads.fused_pool import max_pool_3x3s2


def pooled(x: torch.Tensor) -> torch.Tensor:
    return F.max_pool2d(F.relu(x), 3, 2, 1)


def triton_pooled(x: torch.Tensor) -> torch.Tensor:
    return max_pool_3x3s2(torch.relu(x))


def step(fn: Any, x: torch.Tensor, grad: torch.Tensor) -> None:
    torch.autograd.grad(fn(x), [x], grad)


def nine_views(x: torch.Tensor) -> torch.Tensor:
    """max_pool2d(relu(x), 3, 2, 1) as the maximum of nine strided views (after a ReLU, zero padding is -inf's equal)."""
    r = F.pad(F.relu(x), (1, 1, 1, 1))
    h, w = (x.shape[2] + 1) // 2, (x.shape[3] + 1) // 2
    out = None
    for i in range(3):
        for j in range(3):
            view = r[:, :, i : i + 2 * h : 2, j : j + 2 * w : 2]
            out = view if out is None else torch.maximum(out, view)
    assert out is not None
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--batch", type=int, default=400)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("pool_kernels.py needs a CUDA device")
    x = torch.randn(args.batch, 64, 112, 112, device="cuda").to(torch.bfloat16)
    x = x.contiguous(memory_format=torch.channels_last).requires_grad_()
    grad = torch.randn(args.batch, 64, 56, 56, device="cuda").to(torch.bfloat16)
    grad = grad.contiguous(memory_format=torch.channels_last)
    variants = {
        "eager": pooled,
        "inductor": torch.compile(pooled, dynamic=False),
        "inductor_nine_views": torch.compile(nine_views, dynamic=False),
        "triton": triton_pooled,
    }
    reference = torch.autograd.grad(pooled(x), [x], grad)[0]
    differ = {}
    for name, fn in variants.items():
        y = fn(x)
        assert torch.equal(y, pooled(x)), name
        got = torch.autograd.grad(y, [x], grad)[0]
        differ[name] = int((got != reference).sum())
    least_bytes = 2 * (2 * x.numel() + 2 * grad.numel())
    rows = {}
    for name, fn in variants.items():
        ms = median_ms(partial(step, fn, x, grad), args.iters)
        rows[name] = {"ms": ms, "gbps_least_bytes": least_bytes / (ms / 1e3) / 1e9, "grad_values_differ": differ[name]}
        print(f"{name:20s} {ms:7.3f} ms  {rows[name]['gbps_least_bytes']:6.0f} GB/s of the least bytes  "
              f"gradient values differing from eager: {differ[name]} of {x.numel()}", flush=True)  # fmt: skip
    base = rows["inductor"]["ms"]
    print("inductor / variant: " + ", ".join(f"{n} {base / r['ms']:.3f}" for n, r in rows.items()))
    if args.json:
        write_report(
            args.json,
            "pool_kernels",
            batch=args.batch,
            variants=rows,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
