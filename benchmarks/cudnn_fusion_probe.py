"""One ResNet-50 convolution with its batch norms, forward, as cuDNN's fused graph and as today's separate kernels.

NVIDIA's MLPerf ResNet-50 runs each convolution as one cuDNN kernel that applies the previous batch
norm and ReLU to its input as it reads it (scale, bias, ReLU) and sums its output per channel as it
writes it (genstats), so the forward pass never reads an activation only to normalise it or to count
its statistics. This times, at one batch size, bf16 (or, with `--dtype fp16`, fp16: NVIDIA's precision,
and the one the frontend's own test of this graph uses) in channels-last memory, for some of ResNet-50's
convolution shapes:

- separate: `relu(x * scale + bias)` and the per-channel sum and sum of squares of the convolution's
  output as inductor kernels (torch.compile), the convolution by cuDNN through torch, as the
  executors' compiled step runs them;
- fused: the same computation as one cuDNN frontend graph (scale, bias, relu, conv_fprop, genstats;
  the `nvidia-cudnn-frontend` package, which torch does not ship).

Forward only: the backward's fusions (the ReLU's and the norm's gradients in the data-gradient
convolution) are not timed. Results are checked against the separate path first.

Usage (on a CUDA machine with nvidia-cudnn-frontend, from the repository root):
    python benchmarks/cudnn_fusion_probe.py [--batch 400] [--iters 20] [--dtype bf16|fp16] [--json FILE]
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
from gpu_env import median_ms, write_report

SHAPES = (
    # name, input channels, output channels, kernel, input size, stride, count in ResNet-50
    ("layer1 3x3", 64, 64, 3, 56, 1, 3),
    ("layer1 1x1 expand", 64, 256, 1, 56, 1, 3),
    ("layer2 1x1 reduce", 512, 128, 1, 28, 1, 3),
    ("layer3 3x3", 256, 256, 3, 14, 1, 5),
    ("layer4 1x1 expand", 512, 2048, 1, 7, 1, 3),
)


def separate_pieces() -> tuple[Any, Any]:
    def prologue(x: torch.Tensor, scale: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return torch.relu(x * scale + bias)

    def stats(z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        zf = z.float()
        return zf.sum(dim=(0, 2, 3)), (zf * zf).sum(dim=(0, 2, 3))

    return torch.compile(prologue, dynamic=False), torch.compile(stats, dynamic=False)


def separate_step(prologue: Any, stats: Any, x: torch.Tensor, w: torch.Tensor, scale: torch.Tensor,
                  bias: torch.Tensor, pad: int, stride: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:  # fmt: skip
    z = F.conv2d(prologue(x, scale, bias), w, padding=pad, stride=stride)
    s, q = stats(z)
    return z, s, q


def fused_graph(x: torch.Tensor, w: torch.Tensor, scale: torch.Tensor, bias: torch.Tensor, pad: int, stride: int) -> Any:  # fmt: skip
    import cudnn

    io = cudnn.data_type.HALF if x.dtype == torch.float16 else cudnn.data_type.BFLOAT16
    graph = cudnn.pygraph(io_data_type=io, intermediate_data_type=io, compute_data_type=cudnn.data_type.FLOAT)
    tx = graph.tensor(name="X", dim=x.size(), stride=x.stride(), data_type=io)
    tw = graph.tensor(name="W", dim=w.size(), stride=w.stride(), data_type=io)
    ts = graph.tensor(name="S", dim=scale.size(), stride=scale.stride(), data_type=io)
    tb = graph.tensor(name="B", dim=bias.size(), stride=bias.stride(), data_type=io)
    relu = graph.relu(
        name="relu", input=graph.bias(name="bias", input=graph.scale(name="scale", input=tx, scale=ts), bias=tb)
    )
    ty = graph.conv_fprop(image=relu, weight=tw, padding=[pad, pad], stride=[stride, stride], dilation=[1, 1])
    ty.set_output(True)
    tsum, tsq = graph.genstats(name="genstats", input=ty)
    tsum.set_output(True).set_data_type(cudnn.data_type.FLOAT)
    tsq.set_output(True).set_data_type(cudnn.data_type.FLOAT)
    graph.validate()
    graph.build_operation_graph()
    graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    graph.check_support()
    graph.build_plans()
    return graph, (tx, tw, ts, tb, ty, tsum, tsq)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--batch", type=int, default=400)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--dtype", choices=("bf16", "fp16"), default="bf16")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("cudnn_fusion_probe.py needs a CUDA device")
    dtype = torch.float16 if args.dtype == "fp16" else torch.bfloat16
    import cudnn

    torch.backends.cudnn.benchmark = True
    prologue, stats = separate_pieces()
    rows = []
    totals = {"separate": 0.0, "fused": 0.0}
    for name, cin, cout, k, size, stride, count in SHAPES:
        cl = torch.channels_last
        x = torch.randn(args.batch, cin, size, size, device="cuda").to(dtype).contiguous(memory_format=cl)
        w = (torch.randn(cout, cin, k, k, device="cuda") * 0.05).to(dtype).contiguous(memory_format=cl)
        scale = (torch.rand(1, cin, 1, 1, device="cuda") + 0.5).to(dtype).contiguous(memory_format=cl)
        bias = (torch.randn(1, cin, 1, 1, device="cuda") * 0.1).to(dtype).contiguous(memory_format=cl)
        pad = k // 2

        separate = partial(separate_step, prologue, stats, x, w, scale, bias, pad, stride)

        row: dict[str, Any] = {"name": name, "count": count}
        z_ref, s_ref, q_ref = separate()
        row["separate_ms"] = median_ms(separate, args.iters)
        try:
            graph, (tx, tw, ts, tb, ty, tsum, tsq) = fused_graph(x, w, scale, bias, pad, stride)
            y = torch.empty_like(z_ref)
            s = torch.empty(1, cout, 1, 1, device="cuda", dtype=torch.float32)
            q = torch.empty_like(s)
            workspace = torch.empty(graph.get_workspace_size(), device="cuda", dtype=torch.uint8)
            pack = {tx: x, tw: w, ts: scale, tb: bias, ty: y, tsum: s, tsq: q}

            fused = partial(graph.execute, pack, workspace)
            fused()
            torch.cuda.synchronize()
            row["max_rel_error"] = {
                "output": float((y.float() - z_ref.float()).abs().max() / z_ref.float().abs().max()),
                "sum": float((s.flatten() - s_ref).abs().max() / s_ref.abs().max()),
                "sum_of_squares": float((q.flatten() - q_ref).abs().max() / q_ref.abs().max()),
            }
            row["fused_ms"] = median_ms(fused, args.iters)
        except Exception as exc:  # the frontend has no engine for this graph here
            row["fused_error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
        rows.append(row)
        if "fused_ms" in row:
            totals["separate"] += row["separate_ms"] * count
            totals["fused"] += row["fused_ms"] * count
            print(f"{name:20s} x{count}: separate {row['separate_ms']:.3f} ms, fused {row['fused_ms']:.3f} ms "
                  f"({row['separate_ms'] / row['fused_ms']:.2f}x), errors {row['max_rel_error']}", flush=True)  # fmt: skip
        else:
            print(f"{name:20s}: separate {row['separate_ms']:.3f} ms, fused not run: {row['fused_error']}", flush=True)
    if totals["fused"]:
        print(f"shapes timed, weighted by count: separate {totals['separate']:.2f} ms, fused {totals['fused']:.2f} ms")
    if args.json:
        write_report(
            args.json,
            "cudnn_fusion_probe",
            dtype=args.dtype,
            environment_extra={"cudnn_frontend": getattr(cudnn, "__version__", None), "cudnn": cudnn.backend_version()},
            batch=args.batch,
            rows=rows,
            totals_ms=totals,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
