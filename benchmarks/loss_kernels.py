"""GPT 800M's output loss (LM head and cross-entropy over the real vocabulary), forward and backward, in two forms.

The profile of the llm-gpt step (docs/performance.md) puts 9.5 ms of about 400 in the loss kernels,
which move the bf16 logits (16 x 2048 tokens x 50,304 padded vocabulary, 3.3 GB) at about 1 TB/s, a
quarter of the copy rate: the logits are sliced to the real 50,257 words before the fp32 cross-entropy,
so each kernel indexes rows of one length inside rows of another. This times, bf16 autocast over fp32
weights as the executor runs it, `torch.compile` default mode:

- slice: the logits sliced to the real vocabulary before the cross-entropy (the executor's loss until
  2026-12-03);
- masked: specbench.workloads.llm_gpt.model.output_loss, what the executor runs: the cross-entropy over the
  whole padded row with the padding's logits set to minus infinity (the same softmax, the same loss; the
  padding's gradient is zero either way);
- head only: the LM head's matrix products alone (forward and both gradients), the floor under both.

Each form's loss and gradients are compared with the slice form's. Usage (on a CUDA machine, from the
repository root):
    python benchmarks/loss_kernels.py [--tokens 32768] [--sequence 2048] [--hidden 2048] [--vocab 50257]
                                      [--padded 50304] [--iters 10] [--json FILE]
(--tokens: per step, a multiple of --sequence; --padded: the output rows, the vocabulary padded for the GEMM.)
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from gpu_env import median_ms, write_report

from specbench.workloads.llm_gpt.model import output_loss


def sliced_loss(lm_head: torch.nn.Module, hidden: torch.Tensor, targets: torch.Tensor, vocab: int) -> torch.Tensor:
    """output_loss's value: the padded columns sliced away instead of masked."""
    logits = lm_head(hidden)[..., :vocab]
    return F.cross_entropy(logits.reshape(-1, vocab).float(), targets.reshape(-1))


def head_only(lm_head: torch.nn.Module, hidden: torch.Tensor, targets: torch.Tensor, vocab: int) -> torch.Tensor:
    return lm_head(hidden).sum()


def run(fn: Any, head: torch.nn.Module, hidden: torch.Tensor, targets: torch.Tensor, vocab: int) -> list[torch.Tensor]:
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = fn(head, hidden, targets, vocab)
    weight: torch.Tensor = head.weight  # type: ignore[assignment]
    grads = torch.autograd.grad(loss, [hidden, weight])
    return [loss.detach(), *grads]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tokens", type=int, default=16 * 2048)
    parser.add_argument("--sequence", type=int, default=2048)
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--vocab", type=int, default=50257)
    parser.add_argument("--padded", type=int, default=50304)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if args.tokens % args.sequence or args.padded < args.vocab:
        raise SystemExit("--tokens must be a multiple of --sequence, and --padded at least --vocab")
    if not torch.cuda.is_available():
        raise SystemExit("loss_kernels.py needs a CUDA device")
    torch.manual_seed(0)
    head = torch.nn.Linear(args.hidden, args.padded, bias=False, device="cuda")
    torch.nn.init.normal_(head.weight, std=0.02)
    rows = (args.tokens // args.sequence, args.sequence)
    hidden = torch.randn(*rows, args.hidden, device="cuda", requires_grad=True)
    targets = torch.randint(0, args.vocab, rows, device="cuda")
    forms = {
        "slice": torch.compile(sliced_loss),
        "masked": torch.compile(output_loss),
        "head only": torch.compile(head_only),
    }
    reference = run(forms["slice"], head, hidden, targets, args.vocab)
    results: dict[str, dict[str, Any]] = {}
    for name, fn in forms.items():
        got = run(fn, head, hidden, targets, args.vocab)
        ms = median_ms(functools.partial(run, fn, head, hidden, targets, args.vocab), args.iters)
        row: dict[str, Any] = {"ms": ms}
        if name != "head only":
            row["max_rel_diff"] = {
                part: float((a.float() - b.float()).abs().max() / b.float().abs().max().clamp_min(1e-30))
                for part, a, b in zip(("loss", "d_hidden", "d_weight"), got, reference, strict=True)
            }
        results[name] = row
        print(f"{name:10s} {ms:8.3f} ms  {row.get('max_rel_diff', '')}", flush=True)
    floor = results["head only"]["ms"]
    for name in ("slice", "masked"):
        results[name]["beyond_head_ms"] = results[name]["ms"] - floor
    print(
        f"beyond the head's matrix products: slice {results['slice']['beyond_head_ms']:.3f} ms, masked "
        f"{results['masked']['beyond_head_ms']:.3f} ms; slice / masked {results['slice']['ms'] / results['masked']['ms']:.3f}"
    )
    if args.json:
        write_report(args.json, "loss_kernels", shape=vars(args) | {"json": None}, rows=results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
