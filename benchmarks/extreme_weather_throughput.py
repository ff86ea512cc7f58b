"""Extreme-weather (DeepLabv3+, CAM5 layout) training throughput and energy at full resolution, in one call.

(a) a hand-written loop over specbench's DeepLabV3Plus (16 x 768 x 1152 generated fields, 3 classes,
class-weighted cross entropy, fused AdamW, bf16 autocast, channels_last), eager and torch.compile;
(b) the extreme-weather executor's own training step (`specbench.workloads.extreme_weather.executor._step`)
on the same model and data, eager. Energy is NVML's counter read at each timed window's edges
(after a device synchronize). Prints samples/s, J/sample, TFLOP/s and the ratio (b) / (a, eager);
writes a JSON with date, device, driver, torch version and command.

    python benchmarks/extreme_weather_throughput.py --out results.json [--model resnet50] [--batch 8]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from gpu_env import environment, nvml_energy_j

from specbench.data.climate import generate_arrays, normalise
from specbench.spec.loader import load_spec
from specbench.workloads.extreme_weather.deeplab import DeepLabV3Plus
from specbench.workloads.extreme_weather.executor import State, _step, class_weights

REPO = Path(__file__).resolve().parent.parent


def data_pool(batch: int, size: tuple[int, int]) -> tuple[torch.Tensor, torch.Tensor]:
    """One batch of generated fields on the device, normalised as the loader does."""
    x, y = generate_arrays(batch, size, seed=7)
    fields = torch.from_numpy(normalise(x, x.min(axis=(0, 1, 2)), x.max(axis=(0, 1, 2))))
    return fields.cuda().contiguous(memory_format=torch.channels_last), torch.from_numpy(y).cuda()


def build(params: dict[str, Any]) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    model = DeepLabV3Plus(
        str(params["backbone"]),
        16,
        3,
        aspp_channels=int(params["aspp_channels"]),
        low_level_channels=int(params["low_level_channels"]),
    ).cuda()
    model = model.to(memory_format=torch.channels_last)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, eps=1e-6, weight_decay=1e-2, fused=True)
    return model, optimizer


def timed(step: Any, batch: int, warmup: int, steps: int, flops_per_sample: float) -> dict[str, Any]:
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
    samples = batch * steps
    return {
        "samples_per_s": samples / seconds,
        "seconds": seconds,
        "samples": samples,
        "energy_j": energy,
        "j_per_sample": energy / samples if energy is not None else None,
        "mean_power_w": energy / seconds if energy is not None else None,
        "model_tflops": flops_per_sample * samples / seconds / 1e12,
        "peak_memory_gib": torch.cuda.max_memory_allocated() / 2**30,
    }


def plain(params: dict[str, Any], fields: torch.Tensor, labels: torch.Tensor, compile_model: bool) -> Any:
    """The baseline: the simplest fast loop a PyTorch user writes for this model."""
    model, optimizer = build(params)
    weights = class_weights(-0.125).cuda()
    forward = torch.compile(model) if compile_model else model

    def step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = forward(fields)
        loss = F.cross_entropy(logits.float(), labels, weight=weights)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return step


def executor_step(params: dict[str, Any], fields: torch.Tensor, labels: torch.Tensor) -> Any:
    """specbench's own training step on the same model, optimizer and data."""
    model, optimizer = build(params)
    state = State(
        model=model,
        optimizer=optimizer,
        weights=class_weights(-0.125).cuda(),
        scaler=None,
        autocast=lambda: torch.autocast("cuda", dtype=torch.bfloat16),
        memory_format=torch.channels_last,
        train=None,
        val=None,
        batch_size=fields.shape[0],
        local_batch=fields.shape[0],
        steps_per_epoch=1,
    )
    device = torch.device("cuda")
    return lambda: _step(state, fields, labels, device)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="JSON file for the results")
    parser.add_argument("--model", default="resnet50", help="a workload variant of specs/extreme-weather.yaml")
    parser.add_argument("--batch", type=int, default=8, help="samples per step (one GPU)")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("this benchmark needs a CUDA GPU")
    spec = load_spec(REPO / "specs" / "extreme-weather.yaml").spec
    variant = spec.workload.variants[args.model]
    assert variant.flops_per_sample is not None
    size = (768, 1152)
    torch.backends.cudnn.benchmark = True
    t0 = time.perf_counter()
    fields, labels = data_pool(args.batch, size)
    print(
        f"generated {args.batch} fields of 16 x {size[0]} x {size[1]} in {time.perf_counter() - t0:.1f} s", flush=True
    )
    rows = []
    for name, make in (
        ("plain eager", lambda: plain(variant.params, fields, labels, False)),
        ("specbench executor step (eager)", lambda: executor_step(variant.params, fields, labels)),
        ("plain torch.compile", lambda: plain(variant.params, fields, labels, True)),
    ):
        torch.cuda.reset_peak_memory_stats()
        row = {"variant": name, **timed(make(), args.batch, args.warmup, args.steps, variant.flops_per_sample)}
        rows.append(row)
        print(
            f"{name:<34} {row['samples_per_s']:8.2f} samples/s  {row['j_per_sample'] or float('nan'):8.2f} J/sample  "
            f"{row['mean_power_w'] or float('nan'):6.1f} W  {row['model_tflops']:6.1f} TFLOP/s",
            flush=True,
        )
    summary = {
        "ratio_executor_over_plain_eager": rows[1]["samples_per_s"] / rows[0]["samples_per_s"],
        "ratio_compile_over_eager": rows[2]["samples_per_s"] / rows[0]["samples_per_s"],
    }
    print(f"ratio executor step / plain eager = {summary['ratio_executor_over_plain_eager']:.3f}")
    print(f"ratio torch.compile / eager       = {summary['ratio_compile_over_eager']:.3f}")
    report = {
        "benchmark": "extreme_weather_throughput",
        "command": " ".join([sys.executable, *sys.argv]),
        "environment": environment(numpy=np.__version__),
        "settings": {
            "model": args.model,
            "model_params": variant.params,
            "flops_per_sample": variant.flops_per_sample,
            "sample_shape": [16, *size],
            "batch": args.batch,
            "warmup_steps": args.warmup,
            "timed_steps": args.steps,
            "precision": "bf16 autocast",
            "memory_format": "channels_last",
            "optimizer": "AdamW (fused), class-weighted cross entropy",
            "data": "one batch of generated CAM5-layout fields (specbench.data.climate), resident on the GPU",
            "energy": "NVML total energy counter of GPU 0 at the timed window's edges",
        },
        "rows": rows,
        "summary": summary,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
