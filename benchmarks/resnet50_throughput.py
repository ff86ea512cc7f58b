"""ResNet-50 training throughput: a plain PyTorch loop against `specbench execute caraml-resnet50`, in one call.

(a) a hand-written loop (torchvision resnet50, bf16 autocast, channels_last, SGD, synthetic data),
eager and torch.compile, with the energy counter of NVML read at the timed window's edges;
(b) `specbench execute caraml-resnet50` with the same settings and NVML measurement on.
Prints images/s, J/image and the ratio (b) / (best of a); writes a JSON with date, device,
driver, torch version and command.

    python benchmarks/resnet50_throughput.py --out results.json --submission-out submissions/ORG/SYSTEM
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch
import torchvision
from gpu_env import environment, nvml_energy_j


def plain_loop(batch: int, warmup: int, steps: int, compile_model: bool) -> dict[str, Any]:
    """The baseline: the simplest fast loop a PyTorch user writes."""
    torch.manual_seed(0)
    device = torch.device("cuda")
    model = torchvision.models.resnet50().to(device, memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.256, momentum=0.875, weight_decay=3.0517578125e-05)
    criterion = torch.nn.CrossEntropyLoss(label_smoothing=0.1)
    images = torch.randn(batch, 3, 224, 224, device=device).contiguous(memory_format=torch.channels_last)
    labels = torch.randint(0, 1000, (batch,), device=device)
    step_model = torch.compile(model) if compile_model else model

    def step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = criterion(step_model(images), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    e0, t0 = nvml_energy_j(), time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    t1, e1 = time.perf_counter(), nvml_energy_j()
    seconds = t1 - t0
    energy = e1 - e0 if e0 is not None and e1 is not None else None
    return {
        "variant": "plain torch.compile" if compile_model else "plain eager",
        "images_per_s": batch * steps / seconds,
        "seconds": seconds,
        "energy_j": energy,
        "j_per_image": energy / (batch * steps) if energy is not None else None,
        "mean_power_w": energy / seconds if energy is not None else None,
    }


def specbench_run(out: Path, batch: int, compile_mode: str, runs: int, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """`specbench execute caraml-resnet50` in a child process (as a user runs it); reads its result.json files."""
    command = [
        sys.executable,
        "-m",
        "specbench.cli",
        "execute",
        "caraml-resnet50",
        "--device",
        "cuda",
        "--power",
        "nvml",
        "--set",
        f"global_batch_size={batch}",
        "--set",
        f"compile_mode={compile_mode}",
        "--set",
        "precision=bf16",
        "--set",
        "memory_format=channels_last",
        *(a for setting in extra for a in ("--set", setting)),
        "--runs",
        str(runs),
        "--out",
        str(out),
    ]
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"specbench execute failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    results = [json.loads(p.read_text()) for p in sorted(out.glob("caraml-resnet50/run_*/result.json"))]
    best = max(results, key=lambda r: r["throughput"]["samples_per_s"])
    return {
        "variant": " ".join([f"specbench compile={compile_mode}", *extra]),
        "command": " ".join(command),
        "runs": [
            {
                "images_per_s": r["throughput"]["samples_per_s"],
                "energy_j": r["power"]["energy_j"],
                "j_per_image": r["power"]["energy_j"] / r["samples_processed"] if r["power"]["measured"] else None,
                "mean_power_w": r["power"]["mean_power_w"],
                "seconds": r["duration_s"],
            }
            for r in results
        ],
        "images_per_s": best["throughput"]["samples_per_s"],
        "j_per_image": best["power"]["energy_j"] / best["samples_processed"] if best["power"]["measured"] else None,
        "mean_power_w": best["power"]["mean_power_w"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="JSON file for the results")
    parser.add_argument("--submission-out", type=Path, required=True, help="ORG/SYSTEM folder for specbench's runs")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3, help="specbench runs per variant (the spec asks for 3)")
    parser.add_argument(
        "--compile-mode",
        default="default",
        choices=("default", "reduce-overhead", "max-autotune"),
        help="compile_mode of specbench's compiled run (the plain loops keep plain torch.compile)",
    )
    parser.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="one more --set for specbench's compiled run (e.g. kernel_tuning=coordinate-descent); repeatable",
    )
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("this benchmark needs a CUDA GPU")
    rows = [
        plain_loop(args.batch, args.warmup, args.steps, False),
        plain_loop(args.batch, args.warmup, args.steps, True),
    ]
    for row in rows:
        print(
            f"{row['variant']:<28} {row['images_per_s']:9.1f} img/s  {row['j_per_image'] or float('nan'):.4f} J/img",
            flush=True,
        )
    compiled = specbench_run(args.submission_out, args.batch, args.compile_mode, args.runs, tuple(args.sets))
    eager = specbench_run(args.submission_out.parent / (args.submission_out.name + "-eager"), args.batch, "none", 1)
    best_plain = max(rows, key=lambda r: r["images_per_s"])
    summary = {
        "ratio_specbench_compile_over_best_plain": compiled["images_per_s"] / best_plain["images_per_s"],
        "ratio_specbench_eager_over_plain_eager": eager["images_per_s"] / rows[0]["images_per_s"],
    }
    for row in (eager, compiled):
        print(
            f"{row['variant']:<28} {row['images_per_s']:9.1f} img/s  {row['j_per_image'] or float('nan'):.4f} J/img",
            flush=True,
        )
    print(f"ratio specbench(compile) / best plain = {summary['ratio_specbench_compile_over_best_plain']:.3f}")
    print(f"ratio specbench(eager) / plain eager  = {summary['ratio_specbench_eager_over_plain_eager']:.3f}")
    report = {
        "benchmark": "resnet50_throughput",
        "command": " ".join([sys.executable, *sys.argv]),
        "environment": environment(torchvision=torchvision.__version__),
        "settings": {
            "batch": args.batch,
            "warmup_steps": args.warmup,
            "timed_steps": args.steps,
            "precision": "bf16",
            "memory_format": "channels_last",
            "data": "synthetic",
            "specbench_compile_mode": args.compile_mode,
            "specbench_sets": args.sets,
        },
        "plain": rows,
        "specbench": [eager, compiled],
        "summary": summary,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
