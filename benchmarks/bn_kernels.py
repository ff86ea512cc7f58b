"""ResNet-50's 53 batch normalisations (with their adds and ReLUs), forward and backward, kernel against kernel.

For each distinct normalisation site of torchvision's ResNet-50 (channels, spatial size, what follows it:
a ReLU, a residual add and a ReLU, or nothing) at one batch size, bf16 in channels-last memory, it
times one forward and backward (the input, weight, bias and residual gradients) of:

- eager: torch's own batch_norm (cuDNN) with the add and ReLU as separate operations;
- inductor: the same function under torch.compile (what the executors run), optionally with inductor's
  coordinate-descent tuning (`--tuned`);
- triton: specbench.workloads.fused_bn's hand-written kernels.

Each variant is captured in a CUDA graph and replayed, so launch overhead is out of the comparison,
as it is in the executors' graph-captured steps. The totals weigh each site by how often it occurs in the
model; a copy of the same bytes, timed in the same run, gives the memory bandwidth to compare with.
Outputs and gradients of the triton kernels are checked against eager fp32 first.

Usage (on a CUDA machine, from the repository root):
    python benchmarks/bn_kernels.py [--batch 400] [--iters 50] [--tuned] [--json FILE]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from gpu_env import median_ms, write_report

from specbench.workloads.fused_bn import bn_act

SITES = (
    # channels, height = width, kind, count in torchvision's ResNet-50 (v1.5: stride in the 3x3 conv)
    (64, 112, "relu", 1),
    (64, 56, "relu", 6),
    (256, 56, "add_relu", 3),
    (256, 56, "plain", 1),
    (128, 56, "relu", 1),
    (128, 28, "relu", 7),
    (512, 28, "add_relu", 4),
    (512, 28, "plain", 1),
    (256, 28, "relu", 1),
    (256, 14, "relu", 11),
    (1024, 14, "add_relu", 6),
    (1024, 14, "plain", 1),
    (512, 14, "relu", 1),
    (512, 7, "relu", 5),
    (2048, 7, "add_relu", 3),
    (2048, 7, "plain", 1),
)
TRITON_PASSES = {"relu": 8, "add_relu": 11, "plain": 8}
"""Tensor-sized reads and writes of fused_bn's kernels per site, forward and backward (for GB/s)."""


def reference(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, rm: torch.Tensor, rv: torch.Tensor,
              res: torch.Tensor | None, kind: str) -> torch.Tensor:  # fmt: skip
    y = F.batch_norm(x, rm, rv, w, b, training=True, momentum=0.1, eps=1e-5)
    if res is not None:
        y = y + res
    return F.relu(y) if kind != "plain" else y


def fused(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, rm: torch.Tensor, rv: torch.Tensor,
          res: torch.Tensor | None, kind: str) -> torch.Tensor:  # fmt: skip
    return bn_act(x, w, b, rm, rv, res, relu=kind != "plain")


def inputs(batch: int, c: int, hw: int, kind: str, seed: int = 0) -> dict[str, Any]:
    g = torch.Generator(device="cuda").manual_seed(seed)

    def act() -> torch.Tensor:
        t = torch.randn(batch, c, hw, hw, device="cuda", generator=g) * 1.5 + 0.3
        return t.to(torch.bfloat16).contiguous(memory_format=torch.channels_last).requires_grad_()

    return {
        "x": act(),
        "w": (torch.rand(c, device="cuda", generator=g) + 0.5).requires_grad_(),
        "b": (torch.randn(c, device="cuda", generator=g) * 0.1).requires_grad_(),
        "rm": torch.zeros(c, device="cuda"),
        "rv": torch.ones(c, device="cuda"),
        "res": act() if kind == "add_relu" else None,
        "kind": kind,
    }


def graphed(fn: Any, a: dict[str, Any]) -> torch.cuda.CUDAGraph:
    """fn's forward and backward on `a`, captured in a CUDA graph after warm-up on a side stream."""
    leaves = [a["x"], a["w"], a["b"]] + ([a["res"]] if a["res"] is not None else [])
    grad = torch.randn(a["x"].shape, device="cuda").to(torch.bfloat16).contiguous(memory_format=torch.channels_last)

    def step() -> None:
        y = fn(a["x"], a["w"], a["b"], a["rm"], a["rv"], a["res"], a["kind"])
        torch.autograd.grad(y, leaves, grad)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    return graph


def check(batch: int) -> dict[str, float]:
    """Largest relative error of the triton kernels' output and gradients against eager fp32, on two sites."""
    worst: dict[str, float] = {}
    for c, hw, kind, _ in (SITES[0], SITES[2], SITES[-1]):
        a = inputs(min(batch, 32), c, hw, kind, seed=1)
        leaves = [a["x"], a["w"], a["b"]] + ([a["res"]] if a["res"] is not None else [])
        y = fused(**a)
        grad = torch.randn_like(y)
        got = [y, *torch.autograd.grad(y, leaves, grad)]
        f32: dict[str, Any] = {k: (v.detach().float().requires_grad_() if isinstance(v, torch.Tensor) and v.requires_grad else v)
               for k, v in a.items()}  # fmt: skip
        f32["rm"], f32["rv"] = torch.zeros_like(a["rm"]), torch.ones_like(a["rv"])
        leaves32 = [f32["x"], f32["w"], f32["b"]] + ([f32["res"]] if f32["res"] is not None else [])
        y32 = reference(**f32)
        want = [y32, *torch.autograd.grad(y32, leaves32, grad.float())]
        for name, g_, w_ in zip(("y", "dx", "dw", "db", "dres"), got, want, strict=False):
            err = ((g_.float() - w_).abs().max() / w_.abs().max().clamp_min(1e-12)).item()
            worst[name] = max(worst.get(name, 0.0), err)
    return worst


def copy_gbps(iters: int) -> float:
    """Read-plus-write bandwidth of a 1 GiB device copy, GB/s."""
    src = torch.empty(2**29, dtype=torch.bfloat16, device="cuda")
    dst = torch.empty_like(src)
    graph = torch.cuda.CUDAGraph()
    dst.copy_(src)
    with torch.cuda.graph(graph):
        dst.copy_(src)
    ms = median_ms(graph.replay, iters, warmup=1)
    return 2 * src.numel() * 2 / (ms / 1e3) / 1e9


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--batch", type=int, default=400)
    parser.add_argument("--iters", type=int, default=20, help="Replays per timing group (5 groups, median).")
    parser.add_argument("--tuned", action="store_true", help="Also time inductor with coordinate-descent tuning.")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bn_kernels.py needs a CUDA device")
    torch.backends.cudnn.benchmark = True
    torch._dynamo.config.cache_size_limit = 64
    errors = check(args.batch)
    print("triton vs eager fp32, largest relative error:", {k: f"{v:.2e}" for k, v in errors.items()}, flush=True)
    variants: dict[str, Any] = {"eager": reference, "inductor": torch.compile(reference, dynamic=False)}
    if args.tuned:
        variants["inductor_tuned"] = torch.compile(
            reference, dynamic=False, options={"coordinate_descent_tuning": True}
        )
    variants["triton"] = fused
    gbps = copy_gbps(args.iters)
    print(f"copy bandwidth: {gbps:.0f} GB/s", flush=True)
    rows = []
    totals = dict.fromkeys(variants, 0.0)
    for c, hw, kind, count in SITES:
        row: dict[str, Any] = {"channels": c, "size": hw, "kind": kind, "count": count, "ms": {}}
        for name, fn in variants.items():
            a = inputs(args.batch, c, hw, kind)
            ms = median_ms(graphed(fn, a).replay, args.iters, warmup=1)
            row["ms"][name] = ms
            totals[name] += ms * count
            del a
        elems = args.batch * c * hw * hw
        row["triton_gbps"] = TRITON_PASSES[kind] * elems * 2 / (row["ms"]["triton"] / 1e3) / 1e9
        rows.append(row)
        line = "  ".join(f"{n} {v:7.3f}" for n, v in row["ms"].items())
        print(
            f"{c:5d} x {hw:3d}^2 {kind:9s} x{count:<3d} ms: {line}  (triton {row['triton_gbps']:.0f} GB/s)", flush=True
        )
        torch.cuda.empty_cache()
    print(f"all 53 sites at batch {args.batch}, ms per step: " + ", ".join(f"{n} {v:.2f}" for n, v in totals.items()))
    base = totals["inductor"]
    print("inductor / variant: " + ", ".join(f"{n} {base / v:.3f}" for n, v in totals.items()))
    if args.json:
        write_report(
            args.json,
            "bn_kernels",
            batch=args.batch,
            copy_gbps=gbps,
            triton_max_rel_error=errors,
            sites=rows,
            ms_per_step=totals,
            inductor_over_variant={n: base / v for n, v in totals.items()},
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
