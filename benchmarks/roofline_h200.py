"""Roofline ceilings against plain PyTorch, in one call: does specbench's harness find the device's real rates?

(a) the baseline, what a PyTorch user writes: a size sweep of plain `torch.matmul` per precision
    (fp32; tf32 through `torch.set_float32_matmul_precision("high")`; bf16; fp16) and plain
    `dst.copy_(src)`, each timed as 3 warm-up calls, then `--baseline-calls` calls between two
    synchronizes on the wall clock; run before and after (b), the best of both counts;
(b) `specbench.roofline.measure` with the device's full profile and power windows from the
    meters found here, then the submissions under `--submissions` placed on it.
Prints ceiling / best plain rate for GEMM (per precision) and copy, with the 0.95 target, and
writes roofline.json, roofline.png, roofline.svg and roofline_bench.json (baselines, ratios,
date, device, torch, command) into --out.

    python benchmarks/roofline_h200.py --out OUT [--device cuda|cpu] [--profile full|quick]
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch

from specbench.power import close_meters, open_meters
from specbench.roofline import default_config, measure, place, render_text, save_plots, write_roofline
from specbench.roofline.device import gpu_uuid

BASELINE_SIZES = (1024, 2048, 4096, 6144, 8192, 12288, 16384)
BASELINE_COPY_MIB = (256, 1024, 4096)
DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
TARGET = 0.95


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def plain_matmul(device: torch.device, precision: str, size: int, calls: int) -> float:
    """FLOP/s of `calls` back-to-back products after 3 warm-ups, by the wall clock."""
    torch.set_float32_matmul_precision("high" if precision == "tf32" else "highest")
    a = torch.randn(size, size, device=device, dtype=DTYPES[precision])
    b = torch.randn(size, size, device=device, dtype=DTYPES[precision])
    for _ in range(3):
        torch.matmul(a, b)
    sync(device)
    start = time.perf_counter()
    for _ in range(calls):
        torch.matmul(a, b)
    sync(device)
    elapsed = time.perf_counter() - start
    torch.set_float32_matmul_precision("highest")
    return 2.0 * size**3 * calls / elapsed


def plain_copy(device: torch.device, mib: int, calls: int) -> float:
    """Bytes read plus written per second of `calls` copies after 3 warm-ups."""
    src = torch.rand(mib * 2**20 // 4, device=device)
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    sync(device)
    start = time.perf_counter()
    for _ in range(calls):
        dst.copy_(src)
    sync(device)
    return 2.0 * src.numel() * 4 * calls / (time.perf_counter() - start)


def baseline(
    device: torch.device, precisions: list[str], sizes: tuple[int, ...], copies: tuple[int, ...], calls: int
) -> dict[str, Any]:
    result: dict[str, Any] = {"gemm": {}, "copy": {}}
    for precision in precisions:
        rates = {}
        for size in sizes:
            rates[str(size)] = plain_matmul(device, precision, size, calls)
            if device.type == "cuda":
                torch.cuda.empty_cache()
        result["gemm"][precision] = rates
        best = max(rates.items(), key=lambda kv: kv[1])
        print(f"plain matmul {precision}: best {best[1] / 1e12:.2f} TFLOP/s at {best[0]}^3", flush=True)
    for mib in copies:
        result["copy"][str(mib)] = plain_copy(device, mib, calls * 2)
        if device.type == "cuda":
            torch.cuda.empty_cache()
    print(f"plain copy: best {max(result['copy'].values()) / 1e12:.3f} TB/s", flush=True)
    return result


def nvidia_smi() -> str | None:
    """Read-only query of the card's state (clocks, power limit, temperature)."""
    query = "name,driver_version,power.limit,clocks.sm,clocks.mem,temperature.gpu,power.draw"
    try:
        return subprocess.run(
            ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"], capture_output=True, text=True, timeout=20
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def best_of(passes: list[dict[str, Any]], kind: str, key: str | None = None) -> float:
    values = [v for p in passes for v in (p[kind][key] if key else p[kind]).values()]
    return max(values)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--profile", choices=["full", "quick"], default="full")
    parser.add_argument("--baseline-calls", type=int, default=10)
    parser.add_argument(
        "--submissions", nargs="*", default=["submissions/specbench/h200", "submissions/specbench/cpu-2core"]
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    device = torch.device(args.device)
    quick = args.profile == "quick"
    config = default_config(args.device, args.profile, command="python " + " ".join(sys.argv))
    precisions = [p for p in config.precisions if p in DTYPES and not (device.type == "cpu" and p != "fp32")]
    sizes = config.gemm_sizes if quick else BASELINE_SIZES
    copies = tuple(b // 2**20 for b in config.copy_buffer_bytes) if quick else BASELINE_COPY_MIB
    report: dict[str, Any] = {
        "benchmark": "roofline ceilings against plain torch.matmul and copy_ in the same call",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": "python " + " ".join(sys.argv),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor(),
        "nvidia_smi_before": nvidia_smi() if device.type == "cuda" else None,
        "baseline_method": f"3 warm-up calls, then {args.baseline_calls} calls between two synchronizes, wall clock",
    }
    bench_file = args.out / "roofline_bench.json"
    started = time.perf_counter()
    passes = [baseline(device, precisions, sizes, copies, args.baseline_calls)]
    report["baseline_before"] = passes[0]
    bench_file.write_text(json.dumps(report, indent=2))
    print(f"baseline (before): {time.perf_counter() - started:.1f} s", flush=True)
    gpus = [gpu_uuid(torch, device)] if device.type == "cuda" and not torch.version.hip else None
    meters = open_meters("auto", gpus=[g for g in gpus if g] if gpus else None)
    try:
        t0 = time.perf_counter()
        roofline = measure(config, meters, progress=lambda line: print(line, flush=True))
        report["measure_s"] = time.perf_counter() - t0
    finally:
        close_meters(meters)
    roofline = place(roofline, [p for p in args.submissions if Path(p).exists()])
    write_roofline(roofline, args.out / "roofline.json")
    try:
        save_plots(roofline, args.out)
    except Exception:
        traceback.print_exc()
    t0 = time.perf_counter()
    try:
        passes.append(baseline(device, precisions, sizes, copies, args.baseline_calls))
        report["baseline_after"] = passes[1]
    except Exception:
        traceback.print_exc()
    report["baseline_after_s"] = time.perf_counter() - t0
    report["nvidia_smi_after"] = nvidia_smi() if device.type == "cuda" else None
    rows = []
    ratios: dict[str, Any] = {}
    for ceiling in roofline.ceilings.compute:
        if ceiling.precision not in precisions:
            rows.append((f"gemm {ceiling.precision}", ceiling.flops_per_s / 1e12, None, None))
            continue
        plain = best_of(passes, "gemm", ceiling.precision)
        ratios[f"gemm_{ceiling.precision}"] = ceiling.flops_per_s / plain
        rows.append(
            (f"gemm {ceiling.precision}", ceiling.flops_per_s / 1e12, plain / 1e12, ceiling.flops_per_s / plain)
        )
    plain_copy_rate = best_of(passes, "copy")
    memory = roofline.ceilings.memory.bytes_per_s
    ratios["copy"] = memory / plain_copy_rate
    rows.append(("copy (TB/s)", memory / 1e12, plain_copy_rate / 1e12, memory / plain_copy_rate))
    report["ratios"] = ratios
    report["target"] = TARGET
    report["meets_target"] = all(r >= TARGET for r in ratios.values())
    report["total_s"] = time.perf_counter() - started
    bench_file.write_text(json.dumps(report, indent=2))
    print(render_text(roofline))
    print(f"\n{'':<14}{'specbench':>12}{'plain torch':>14}{'ratio':>8}   (target >= {TARGET})")
    for name, ours, plain, ratio in rows:
        plain_text = f"{plain:14.2f}" if plain is not None else f"{'-':>14}"
        ratio_text = f"{ratio:8.3f}" if ratio is not None else f"{'-':>8}"
        print(f"{name:<14}{ours:12.2f}{plain_text}{ratio_text}")
    print(f"meets target: {report['meets_target']}; total {report['total_s']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
