"""GPT 800M's causal attention, forward and backward, per SDPA kernel and with and without dropout, on one GPU.

The profile of the llm-gpt training step (docs/performance.md) puts about 76 ms of a 400 ms step in
attention: 16 layers of causal attention over 16 sequences of 2048 tokens, 8 heads of size 256, bf16,
dropout 0.1 on the attention weights (GPT-2's and Megatron-LM's default, which CARAML's runs keep). This
times one layer's `scaled_dot_product_attention` forward and backward in that shape with each of
PyTorch's kernels that take it (cuDNN, flash, memory-efficient), at the model's dropout and at none, and
reports the attention FLOP rate (causal: half of 4 x batch x heads x sequence^2 x head size forward,
2.5 times that for the backward) and what 16 layers cost per step.

Timed as plain calls: one layer's forward and backward takes milliseconds, against microseconds of launches.

Usage (on a CUDA machine, from the repository root):
    python benchmarks/attention_kernels.py [--batch 16] [--iters 20] [--json FILE]
"""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_env import median_ms, write_report

KERNELS = {
    "cudnn": SDPBackend.CUDNN_ATTENTION,
    "flash": SDPBackend.FLASH_ATTENTION,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
}


def step(kernel: Any, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, grad: torch.Tensor, dropout: float) -> None:
    with sdpa_kernel([kernel]):
        out = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout, is_causal=True)
        torch.autograd.grad(out, [q, k, v], grad)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--head-size", type=int, default=256)
    parser.add_argument("--sequence", type=int, default=2048)
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("attention_kernels.py needs a CUDA device")
    shape = (args.batch, args.heads, args.sequence, args.head_size)
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16).requires_grad_() for _ in range(3))
    grad = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    forward_flops = 4 * args.batch * args.heads * args.sequence**2 * args.head_size / 2
    flops = forward_flops * 3.5
    rows = []
    for name, kernel in KERNELS.items():
        for dropout in (0.1, 0.0):
            row: dict[str, Any] = {"kernel": name, "dropout": dropout}
            try:
                ms = median_ms(partial(step, kernel, q, k, v, grad, dropout), args.iters)
            except RuntimeError as exc:  # the kernel does not take this shape or dropout
                row["error"] = str(exc).splitlines()[0][:200]
                print(f"{name:9s} dropout {dropout}: not run ({row['error']})", flush=True)
            else:
                row.update(ms=ms, tflops=flops / (ms / 1e3) / 1e12, ms_per_step=ms * args.layers)
                print(f"{name:9s} dropout {dropout}: {ms:7.3f} ms per layer, {row['tflops']:5.0f} TFLOP/s, "
                      f"{row['ms_per_step']:6.1f} ms for {args.layers} layers", flush=True)  # fmt: skip
            rows.append(row)
            torch.cuda.empty_cache()
    if args.json:
        write_report(
            args.json,
            "attention_kernels",
            shape={"batch": args.batch, "heads": args.heads, "sequence": args.sequence, "head_size": args.head_size},
            flops_per_layer=flops,
            rows=rows,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
