"""Accuracy and overhead of specbench.power on one NVIDIA GPU, measured in one call.

1. idle baseline (100 ms sampling);
2. at least 60 s of GPU load (matrix products, idle gaps, memory copies) sampled at 100 ms:
   energy from the hardware counter against the trapezoid integral of instant power;
3. the same load, shorter, sampled at 10 ms: achieved period, and how often NVML's values change;
4. a training-step loop without the sampler, with it at 100 ms and at 10 ms, interleaved over
   several rounds, for the sampler's throughput overhead (baseline in the same call).

Usage, from the repository root: PYTHONPATH=. python benchmarks/power_accuracy.py --out results.json
Needs torch with CUDA and nvidia-ml-py. Reads the GPU as found: never changes clocks or limits.
For a CPU smoke run of the control flow: --device cpu --meters null with short durations.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import platform
import shlex
import socket
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch

from specbench.power import Meter, NullMeter, NvmlMeter, PowerError, PowerSampler
from specbench.power.trace import Sample

TARGET_COUNTER_VS_INTEGRAL_PERCENT = 2.0
TARGET_OVERHEAD_PERCENT_AT_100_MS = 0.5


class Loads:
    """GPU work of a given kind for a given time, synchronizing often so each phase ends on time."""

    def __init__(self, device: torch.device, size: int, copy_bytes: int) -> None:
        self.device = device
        generator = torch.Generator(device=device).manual_seed(0)
        self.a = torch.randn(size, size, device=device, dtype=torch.bfloat16, generator=generator)
        self.b = torch.randn(size, size, device=device, dtype=torch.bfloat16, generator=generator)
        self.c = torch.empty_like(self.a)
        self.src = torch.randn(copy_bytes // 4, device=device, generator=generator)
        self.dst = torch.empty_like(self.src)

    def sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def run(self, kind: str, seconds: float) -> None:
        end = time.monotonic() + seconds
        if kind == "idle":
            time.sleep(seconds)
            return
        while time.monotonic() < end:
            for _ in range(8):
                if kind == "matmul":
                    torch.matmul(self.a, self.b, out=self.c)
                else:
                    self.dst.copy_(self.src)
            self.sync()


def load_plan(total_s: float) -> list[tuple[str, float]]:
    shares = [("matmul", 0.3), ("idle", 0.08), ("copy", 0.24), ("idle", 0.08), ("matmul", 0.3)]
    return [(kind, share * total_s) for kind, share in shares]


def window_samples(samples: Sequence[Sample], device: str) -> list[Sample]:
    own = [s for s in samples if s.device == device]
    start = next(i for i, s in enumerate(own) if s.mark == "start")
    stop = next(i for i, s in enumerate(own) if s.mark == "stop")
    return own[start : stop + 1]


def trapezoid_j(samples: Sequence[Sample], column: str) -> float | None:
    points = [(s.t_mono_s, getattr(s, column)) for s in samples if getattr(s, column) is not None]
    if len(points) < 2:
        return None
    return math.fsum(0.5 * (p0 + p1) * (t1 - t0) for (t0, p0), (t1, p1) in itertools.pairwise(points))


def change_interval_s(samples: Sequence[Sample], column: str) -> float | None:
    """Median time between changes of a column: how often the API's value updates."""
    changes = [
        b.t_mono_s
        for a, b in itertools.pairwise(samples)
        if getattr(a, column) is not None and getattr(b, column) != getattr(a, column)
    ]
    gaps = [t1 - t0 for t0, t1 in itertools.pairwise(changes)]
    return statistics.median(gaps) if gaps else None


def percent(value: float | None, reference: float | None) -> float | None:
    if value is None or not reference:
        return None
    return 100.0 * (value - reference) / reference


def measured_phase(
    meters: list[Meter], interval_s: float, plan: list[tuple[str, float]], loads: Loads
) -> dict[str, Any]:
    with PowerSampler(meters, interval_s) as sampler:
        time.sleep(max(0.5, 3 * interval_s))
        loads.sync()
        sampler.window_start()
        for kind, seconds in plan:
            loads.run(kind, seconds)
        loads.sync()
        window = sampler.window_stop()
    stats = sampler.sampling_stats()
    devices = []
    for energy in window.devices:
        inside = window_samples(sampler.samples, energy.device)
        average_j = trapezoid_j(inside, "power_average_w")
        devices.append(
            {
                "device": energy.device,
                "energy_method": energy.method,
                "counter_energy_j": energy.counter_energy_j,
                "integrated_instant_j": energy.integrated_energy_j,
                "counter_over_integral": energy.cross_check_ratio,
                "integral_minus_counter_percent": percent(energy.integrated_energy_j, energy.counter_energy_j),
                "integrated_average_field_j": average_j,
                "average_field_integral_minus_counter_percent": percent(average_j, energy.counter_energy_j),
                "mean_power_w": energy.mean_power_w,
                "samples_in_window": energy.samples,
                "instant_power_update_interval_s": change_interval_s(inside, "power_instant_w"),
                "energy_counter_update_interval_s": change_interval_s(inside, "energy_counter_j"),
                "note": energy.note,
            }
        )
    return {
        "requested_period_s": interval_s,
        "plan": [{"load": kind, "seconds": seconds} for kind, seconds in plan],
        "window_s": window.duration_s,
        "achieved_period_s": stats["achieved_period_s"],
        "start_lateness_s": stats["start_lateness_s"],
        "read_latency_s": stats["read_latency_s"],
        "missed_deadlines": stats["missed_deadlines"],
        "read_errors": stats["read_errors"],
        "devices": devices,
    }


def training_step_factory(device: torch.device, small: bool) -> Callable[[], None]:
    width, layers, batch, tokens = (128, 2, 4, 32) if small else (1024, 8, 32, 256)
    layer = torch.nn.TransformerEncoderLayer(
        width, nhead=16 if not small else 4, dim_feedforward=4 * width, batch_first=True, device=device
    )
    model = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    generator = torch.Generator(device=device).manual_seed(1)
    inputs = torch.randn(batch, tokens, width, device=device, generator=generator)
    autocast = torch.autocast(device_type=device.type, dtype=torch.bfloat16)

    def step() -> None:
        with autocast:
            loss = model(inputs).float().pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def overhead(meters: list[Meter], loads: Loads, rounds: int, trial_s: float, small: bool) -> dict[str, Any]:
    """Paired trials: each round runs every configuration once, back to back, in a rotating order.

    A configuration's loss is its throughput against the round's own baseline, so slow drift
    (clocks, temperature, the host) cancels; 'none_again' is a second baseline (an A/A control)
    whose loss is the noise floor of the method.
    """
    step = training_step_factory(loads.device, small)
    for _ in range(10):
        step()
    loads.sync()
    started = time.perf_counter()
    for _ in range(10):
        step()
    loads.sync()
    step_s = (time.perf_counter() - started) / 10
    steps = max(5, round(trial_s / step_s))

    def steps_per_s() -> float:
        loads.sync()
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        loads.sync()
        return steps / (time.perf_counter() - t0)

    configs: list[tuple[str, float | None]] = [("none", None), ("none_again", None), ("100ms", 0.1), ("10ms", 0.01)]
    trials: dict[str, list[float]] = {label: [] for label, _ in configs}
    for r in range(rounds):
        shift = r % len(configs)
        for label, interval_s in configs[shift:] + configs[:shift]:
            if interval_s is None:
                trials[label].append(steps_per_s())
            else:
                with PowerSampler(meters, interval_s):
                    trials[label].append(steps_per_s())
    summary = {}
    for label, _ in configs:
        losses = [100.0 * (1.0 - v / b) for v, b in zip(trials[label], trials["none"], strict=True)]
        summary[label] = {
            "steps_per_s": trials[label],
            "median_steps_per_s": statistics.median(trials[label]),
            "paired_loss_percent_median": statistics.median(losses),
            "paired_loss_percent_mean": statistics.fmean(losses),
            "paired_loss_percent_stderr": statistics.stdev(losses) / math.sqrt(len(losses)) if rounds > 1 else None,
        }
    return {"steps_per_trial": steps, "step_s_at_calibration": step_s, "rounds": rounds, "configs": summary}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--meters", choices=["nvml", "null"], default="nvml")
    parser.add_argument("--idle-s", type=float, default=5.0)
    parser.add_argument("--load-s", type=float, default=62.0, help="GPU load sampled at 100 ms (at least 60)")
    parser.add_argument("--fast-s", type=float, default=20.0, help="GPU load sampled at 10 ms")
    parser.add_argument("--rounds", type=int, default=25, help="rounds of paired overhead trials")
    parser.add_argument("--trial-s", type=float, default=0.8, help="seconds of training steps per trial")
    parser.add_argument("--small", action="store_true", help="tiny sizes, for a CPU smoke run")
    args = parser.parse_args(argv)

    device = torch.device(args.device)
    result: dict[str, Any] = {
        "benchmark": "power_accuracy",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": shlex.join(["python", *sys.argv]),
        "host": socket.gethostname(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor(),
        "targets": {
            "counter_vs_integral_percent": TARGET_COUNTER_VS_INTEGRAL_PERCENT,
            "overhead_percent_at_100_ms": TARGET_OVERHEAD_PERCENT_AT_100_MS,
        },
    }
    meters: list[Meter]
    if args.meters == "nvml":
        uuid = str(torch.cuda.get_device_properties(device).uuid)
        result["torch_device_uuid"] = uuid
        try:
            meters = [NvmlMeter([uuid])]
            result["uuid_mapping"] = "torch device UUID matched an NVML device"
        except PowerError as err:
            result["uuid_mapping"] = f"failed, fell back to CUDA_VISIBLE_DEVICES: {err}"
            meters = [NvmlMeter()]
    else:
        meters = [NullMeter("--meters null (smoke run)")]
    result["meter_info"] = meters[0].info()
    result["devices"] = [d.to_dict() for d in meters[0].devices]
    result["state_start"] = [s.to_dict() for s in meters[0].states()]
    size, copy_bytes = (256, 1 << 20) if args.small else (8192, 2 << 30)
    loads = Loads(device, size, copy_bytes)
    phases: list[tuple[str, Callable[[], dict[str, Any]]]] = [
        ("idle", lambda: measured_phase(meters, 0.1, [("idle", args.idle_s)], loads)),
        ("accuracy_100ms", lambda: measured_phase(meters, 0.1, load_plan(args.load_s), loads)),
        ("accuracy_10ms", lambda: measured_phase(meters, 0.01, load_plan(args.fast_s), loads)),
        ("overhead", lambda: overhead(meters, loads, args.rounds, args.trial_s, args.small)),
    ]
    try:
        for phase, measure in phases:
            result[phase] = measure()
            write(args.out, result)
        result["state_end"] = [s.to_dict() for s in meters[0].states()]
    finally:
        for meter in meters:
            meter.close()
    result["verdict"] = verdict(result)
    write(args.out, result)
    print(summary_text(result))
    return 0


def write(path: Path, result: dict[str, Any]) -> None:
    """Write after every phase, so a run cut short still leaves what it measured."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, allow_nan=False) + "\n")


def verdict(result: dict[str, Any]) -> dict[str, Any]:
    diffs = [
        abs(d["integral_minus_counter_percent"])
        for phase in ("accuracy_100ms", "accuracy_10ms")
        for d in result[phase]["devices"]
        if d["integral_minus_counter_percent"] is not None
    ]
    at_100ms = result["overhead"]["configs"]["100ms"]
    stderr = at_100ms["paired_loss_percent_stderr"]
    upper = at_100ms["paired_loss_percent_mean"] + 1.96 * stderr if stderr is not None else None
    return {
        "counter_vs_integral_max_abs_percent": max(diffs) if diffs else None,
        "counter_vs_integral_within_target": bool(diffs) and max(diffs) <= TARGET_COUNTER_VS_INTEGRAL_PERCENT,
        "overhead_100ms_loss_upper95_percent": upper,
        "overhead_at_100ms_within_target": upper is not None and upper <= TARGET_OVERHEAD_PERCENT_AT_100_MS,
    }


def summary_text(result: dict[str, Any]) -> str:
    lines = [f"{result['date']}  {result['device_name']}  torch {result['torch']}  {result['meter_info']}"]
    for phase in ("idle", "accuracy_100ms", "accuracy_10ms"):
        data = result[phase]
        period = data["achieved_period_s"] or {}
        for d in data["devices"]:
            lines.append(
                f"{phase:15s} window {data['window_s']:.1f} s  mean {fmt(d['mean_power_w'], '.1f')} W  "
                f"counter {fmt(d['counter_energy_j'], '.1f')} J  integral {fmt(d['integrated_instant_j'], '.1f')} J  "
                f"diff {fmt(d['integral_minus_counter_percent'], '+.3f')} %  "
                f"period median {fmt(period.get('median'), '.5f')} s p95 {fmt(period.get('p95'), '.5f')} s "
                f"max {fmt(period.get('max'), '.5f')} s  missed {data['missed_deadlines']}  "
                f"instant updates every {fmt(d['instant_power_update_interval_s'], '.3f')} s"
            )
    for config, data in result["overhead"]["configs"].items():
        lines.append(
            f"overhead {config:10s} median {data['median_steps_per_s']:.3f} steps/s  paired loss median "
            f"{data['paired_loss_percent_median']:+.3f} % mean {data['paired_loss_percent_mean']:+.3f} "
            f"+- {fmt(data['paired_loss_percent_stderr'], '.3f')} %"
        )
    lines.append(f"verdict {result['verdict']}")
    return "\n".join(lines)


def fmt(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


if __name__ == "__main__":
    sys.exit(main())
