"""Where a training step's time goes: torch.profiler over the reference executors' own steps, by kernel kind.

Runs `specbench execute caraml-resnet50` and `specbench execute llm-gpt` in this process with the settings
of the committed H200 submissions; the executors' `timed_steps` is wrapped so that, before the timed
window opens, `--steps` more of the executor's own training steps run under torch.profiler. Kernels are
sorted into kinds by name (convolution, GEMM, attention, normalisation, elementwise, loss and
reductions, optimizer, copies) and each kind's device time per step is set against its ceiling:

- convolutions: every ResNet-50 convolution of one step (forward, data and filter gradients, batch 256)
  timed alone by `specbench roofline` on the same device kind (benchmarks/results/roofline_h200.json);
- GEMMs: the model's matrix FLOPs at the bf16 GEMM rate measured here in the same call (8192^3);
- memory-bound kinds: the analytical bytes per step of the roofline's workload entry at the copy
  bandwidth measured here (a lower bound: every kernel of the kind together moves at least them);
- launch gaps: the time in a step's span when no kernel runs.

Prints a table per workload and writes JSON (date, device, driver, torch, command, top kernels per kind).

    python benchmarks/step_profile.py --out results.json [--steps 10] [--only resnet50|llm]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import torch
from gpu_env import environment

ROOFLINE = Path(__file__).resolve().parent / "results" / "roofline_h200.json"

KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("attention", re.compile(r"sdpa|flash|fmha|attention|cudnn::fusion", re.I)),
    ("optimizer", re.compile(r"multi_tensor_apply|FusedOptimizer|fused_sgd|fused_adam|_foreach_", re.I)),
    ("loss", re.compile(r"log_softmax|nll_loss|cross_entropy|softmax_warp", re.I)),
    ("normalisation (fused)", re.compile(r"batch_norm|layer_norm|GammaBeta|welford", re.I)),
    ("convolution", re.compile(r"fprop|dgrad|wgrad|Convolution|conv2d|implicit_gemm", re.I)),
    ("gemm", re.compile(r"nvjet|gemm|cutlass|cublas|splitK", re.I)),
    ("pooling", re.compile(r"max_pool|avg_pool|adaptive_avg", re.I)),
    ("copies and fills", re.compile(r"Memset|Memcpy|copy_kernel|FillFunctor|CatArray", re.I)),
    (
        "embedding and indexing",
        re.compile(r"embedding|gather|scatter|radix_sort|unique_by_key|scan_|grad_weight", re.I),
    ),
    ("elementwise and reductions", re.compile(r"triton_|elementwise|dropout|masked_scale|reduce_kernel", re.I)),
)
"""Kernel kinds by name, the first match wins: attention before GEMM (cuDNN's SDPA kernels), optimizer and
loss before the fused Triton kernels they may share words with, normalisation for any kernel that fuses
one (inductor fuses batch norm with the adds and ReLUs around it)."""


def kind_of(name: str) -> str:
    for kind, pattern in KINDS:
        if pattern.search(name):
            return kind
    return "other"


def measure_ceilings() -> dict[str, float]:
    """The bf16 GEMM rate (8192^3, median of 20) and the device-to-device copy bandwidth (1 GiB), here and now."""
    n = 8192
    a, b = (torch.randn(n, n, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    gemm = _median_s(lambda: a @ b)
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    src.random_(0, 255)
    dst = torch.empty_like(src)
    copy = _median_s(lambda: dst.copy_(src))
    return {"gemm_bf16_flops_per_s": 2 * n**3 / gemm, "copy_bytes_per_s": 2 * src.numel() / copy}


def _median_s(fn: Any, repeat: int = 20) -> float:
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeat):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop) / 1000.0)
    return sorted(times)[len(times) // 2]


def profile_steps(step: Any, steps: int, trace: Path) -> dict[str, Any]:
    """`steps` calls of `step` under the profiler (after 3 more warm-up calls); kernel time by kind per step."""
    from torch.profiler import ProfilerActivity, profile

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
        wall = (time.perf_counter() - t0) / steps
    prof.export_chrome_trace(str(trace))
    events = json.loads(trace.read_text())["traceEvents"]
    kernels = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and "dur" in e]
    by_kind: dict[str, float] = defaultdict(float)
    by_name: dict[str, float] = defaultdict(float)
    for e in kernels:
        by_kind[kind_of(e["name"])] += e["dur"]
        by_name[e["name"]] += e["dur"]
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in kernels)
    busy, end = 0.0, None
    for start, stop in spans:
        if end is None or start > end:
            busy += stop - start
            end = stop
        elif stop > end:
            busy += stop - end
            end = stop
    span = (spans[-1][1] - spans[0][0]) if spans else 0.0
    every = [
        (name[:200], kind_of(name), us / steps / 1000.0) for name, us in sorted(by_name.items(), key=lambda i: -i[1])
    ]
    return {
        "steps": steps,
        "wall_ms_per_step": wall * 1000.0,
        "span_ms_per_step": span / steps / 1000.0,
        "busy_ms_per_step": busy / steps / 1000.0,
        "gaps_ms_per_step": (span - busy) / steps / 1000.0,
        "kernels_per_step": len(kernels) / steps,
        "kinds_ms_per_step": {k: v / steps / 1000.0 for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1])},
        "kernels_ms_per_step": every,
    }


def wrap_executor(module: Any, steps: int, trace: Path, into: dict[str, Any]) -> None:
    """Replace the executor module's `timed_steps` with one that profiles first, then runs the timed window."""
    original = module.timed_steps

    def timed_steps(ctx: Any, work: Any) -> Any:
        into.update(profile_steps(work.step, steps, trace))
        into["samples_per_step"] = work.samples_per_step
        return original(ctx, work)

    module.timed_steps = timed_steps


def execute(argv: list[str]) -> None:
    from specbench.cli import main

    code = main(argv)
    if code != 0:
        raise SystemExit(f"specbench {' '.join(argv)} exited {code}")


def conv_ceiling_ms(roofline: dict[str, Any]) -> float:
    """Every ResNet-50 convolution of one step (batch 256, bf16), each timed alone by the roofline."""
    return sum(c["timing"]["time_s_median"] * c["shape"]["count"] for c in roofline["conv"]) * 1000.0


def workload_bytes(roofline: dict[str, Any], spec_id: str) -> dict[str, float] | None:
    for w in roofline["workloads"]:
        if w["spec_id"] == spec_id and w.get("same_device"):
            return {"unfused": w["bytes_per_sample"], "fused": w["bytes_per_sample_fused"]}
    return None


def resnet50(args: argparse.Namespace, work: Path, ceilings: dict[str, float], roofline: dict[str, Any]) -> dict:
    from specbench.workloads.resnet50 import executor

    found: dict[str, Any] = {}
    wrap_executor(executor, args.steps, work / "resnet50_trace.json", found)
    command = ["execute", "caraml-resnet50", "--device", "cuda", "--power", "none", "--runs", "1"]
    command += ["--set", "global_batch_size=256", "--set", "precision=bf16", "--set", "memory_format=channels_last"]
    command += ["--set", "compile_mode=default", "--out", str(work / "sub/profile/resnet50")]
    execute(command)
    batch = found["samples_per_step"]
    flops = 24299077632.0 * batch  # flops_per_sample of the committed h200 run's result.json
    per_sample = workload_bytes(roofline, "caraml-resnet50")
    parts = {
        "convolution": {"ceiling_ms": conv_ceiling_ms(roofline), "ceiling": "roofline: each conv of the step alone"},
    }
    if per_sample is not None:
        memory_ms = per_sample["unfused"] * batch / ceilings["copy_bytes_per_s"] * 1000.0
        parts["memory-bound kinds"] = {
            "ceiling_ms": memory_ms,
            "ceiling": "roofline's analytical unfused bytes per step at the copy bandwidth measured here",
        }
    return {
        "workload": "caraml-resnet50",
        "command": "specbench " + " ".join(command),
        "flops_per_step": flops,
        "ceilings": parts,
        **found,
    }


def llm(args: argparse.Namespace, work: Path, ceilings: dict[str, float], roofline: dict[str, Any]) -> dict:
    from specbench.workloads.llm_gpt import executor

    found: dict[str, Any] = {}
    wrap_executor(executor, args.steps, work / "llm_trace.json", found)
    command = ["execute", "llm-gpt", "--device", "cuda", "--power", "none", "--runs", "1"]
    command += ["--set", "global_batch_size=16", "--set", "micro_batch_size=16", "--set", "compile_mode=default"]
    command += ["--set", "attention=cudnn", "--out", str(work / "sub/profile/llm")]
    execute(command)
    tokens = found["samples_per_step"]
    flops = 6257283072.0 * tokens  # llm-gpt 800M model FLOPs per token (specs/llm-gpt.yaml's accounting)
    gemm_ms = flops / ceilings["gemm_bf16_flops_per_s"] * 1000.0
    parts = {"gemm + attention": {"ceiling_ms": gemm_ms, "ceiling": "model FLOPs at the bf16 GEMM rate measured here"}}
    return {
        "workload": "llm-gpt 800M",
        "command": "specbench " + " ".join(command),
        "flops_per_step": flops,
        "ceilings": parts,
        **found,
    }


def show(row: dict[str, Any]) -> None:
    print(
        f"\n{row['workload']}: {row['samples_per_step']} samples/step, wall {row['wall_ms_per_step']:.2f} ms/step, "
        f"kernel span {row['span_ms_per_step']:.2f}, busy {row['busy_ms_per_step']:.2f}, "
        f"gaps {row['gaps_ms_per_step']:.2f} ms, {row['kernels_per_step']:.0f} kernels/step"
    )
    total = row["busy_ms_per_step"] or 1.0
    for kind, ms in row["kinds_ms_per_step"].items():
        print(f"  {kind:<22} {ms:8.2f} ms  {ms / total:6.1%}")
    for name, part in row["ceilings"].items():
        print(f"  ceiling {name}: {part['ceiling_ms']:.2f} ms ({part['ceiling']})")
    rate = row["samples_per_step"] / row["wall_ms_per_step"] * 1000.0
    print(
        f"  rate under the profiler {rate:,.0f} samples/s; model {row['flops_per_step'] / row['wall_ms_per_step'] / 1e9:,.0f} TFLOP/s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="JSON file for the results")
    parser.add_argument("--steps", type=int, default=10, help="profiled steps per workload")
    parser.add_argument("--only", choices=("resnet50", "llm"), default=None)
    parser.add_argument("--work", type=Path, default=None, help="folder for traces and runs [default: a temp dir]")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("this benchmark needs a CUDA GPU")
    work = args.work or Path(tempfile.mkdtemp(prefix="step_profile-"))
    work.mkdir(parents=True, exist_ok=True)
    roofline = json.loads(ROOFLINE.read_text())
    ceilings = measure_ceilings()
    print(
        f"bf16 GEMM {ceilings['gemm_bf16_flops_per_s'] / 1e12:.0f} TFLOP/s, copy {ceilings['copy_bytes_per_s'] / 1e12:.2f} TB/s"
    )
    report: dict[str, Any] = {
        "benchmark": "step_profile",
        "command": " ".join([sys.executable, *sys.argv]),
        "environment": environment(),
        "ceilings_measured_here": ceilings,
        "roofline_file": str(ROOFLINE.relative_to(ROOFLINE.parents[2])),
        "workloads": [],
    }
    for name, fn in (("resnet50", resnet50), ("llm", llm)):
        if args.only not in (None, name):
            continue
        row = fn(args, work, ceilings, roofline)
        show(row)
        report["workloads"].append(row)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
