"""The bf16 GEMM rate in a short burst against the rate the GPU holds under its power limit.

Issue 32's GPT goal (560 model TFLOP/s) is 0.71 of a GEMM rate measured in about 30 ms (`llm_throughput.py`'s
8192^3 check: 3 warm-up and 20 timed calls). A training run lasts minutes, long enough for the board to reach
its power limit and lower its clocks, and every executor run on the H200 sits at 682 to 698 W of its 700 W
limit. This measures, in one process, for each shape:

- burst: the median of 5 groups of `--iters` calls (CUDA events; the default 4 makes the whole burst about
  30 ms at 8192^3), right after `--idle` seconds of rest, as a short ceiling check sees it;
- sustained: the same GEMM back to back for `--seconds`, timed per window of about one second, with
  NVML's power, SM clock and clock-event reasons (software power cap, thermal, hardware slowdown) read
  at the end of each window; the report gives the rate over the last half of the windows.

Shapes: the square 8192^3 check and GPT 800M's largest matrix product (16 x 2048 tokens x 2048 -> 8192,
the MLP's first layer, forward). Reading clocks and power changes no GPU setting. Usage (on a CUDA
machine, from the repository root):
    python benchmarks/sustained_gemm.py [--seconds 40] [--idle 5] [--iters 4] [--json FILE]
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_env import group_ms, median_ms, write_report

SHAPES = {  # name: (m, n, k)
    "square 8192^3": (8192, 8192, 8192),
    "GPT 800M MLP up (32768 x 2048 -> 8192)": (32768, 8192, 2048),
}
REASONS = {  # name: NVML's clock-event reason constant (nvmlClocksEventReason*, ThrottleReason in older pynvml)
    "sw_power_cap": "SwPowerCap",
    "hw_slowdown": "HwSlowdown",
    "sw_thermal": "SwThermalSlowdown",
    "hw_thermal": "HwThermalSlowdown",
    "hw_power_brake": "HwPowerBrakeSlowdown",
}


class Nvml:
    """The power, SM clock and clock-event reasons of the GPU torch runs on (matched by UUID, so that
    CUDA_VISIBLE_DEVICES is respected), through pynvml; a value is None where NVML cannot answer."""

    def __init__(self) -> None:
        self.handle: Any = None
        try:
            import pynvml

            pynvml.nvmlInit()
            self.nvml: Any = pynvml
            uuid = getattr(torch.cuda.get_device_properties(0), "uuid", None)
            try:
                self.handle = pynvml.nvmlDeviceGetHandleByUUID(f"GPU-{uuid}")
            except pynvml.NVMLError:  # a torch without the UUID, or a MIG slice: NVML's first GPU
                self.handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        except Exception as error:  # no NVML: the rates are still measured, the power columns say so
            print(f"NVML unavailable ({error}): power and clocks not measured", file=sys.stderr)

    def _try(self, name: str, *args: Any) -> Any:
        try:
            return getattr(self.nvml, name)(self.handle, *args)
        except Exception:  # pynvml.NVMLError (not supported, GPU lost) or a call this pynvml lacks
            return None

    def read(self) -> dict[str, Any]:
        if self.handle is None:
            return {"power_w": None, "sm_clock_mhz": None, "reasons": None}
        power = self._try("nvmlDeviceGetPowerUsage")
        bits = self._try("nvmlDeviceGetCurrentClocksEventReasons")
        if bits is None:
            bits = self._try("nvmlDeviceGetCurrentClocksThrottleReasons")
        return {
            "power_w": power / 1000 if power is not None else None,
            "sm_clock_mhz": self._try("nvmlDeviceGetClockInfo", self.nvml.NVML_CLOCK_SM),
            "reasons": None if bits is None else [name for name in REASONS if bits & self._bit(REASONS[name])],
        }

    def _bit(self, constant: str) -> int:
        bit = getattr(self.nvml, f"nvmlClocksEventReason{constant}", None)
        return int(bit if bit is not None else getattr(self.nvml, f"nvmlClocksThrottleReason{constant}", 0))

    def power_limit_w(self) -> float | None:
        if self.handle is None:
            return None
        limit = self._try("nvmlDeviceGetEnforcedPowerLimit")
        return limit / 1000 if limit is not None else None


def sustained(gemm: Any, flops: float, seconds: float, nvml: Nvml) -> list[dict[str, Any]]:
    """Back-to-back GEMMs for `seconds`, one row per window of about a second: TFLOP/s, power, SM clock, reasons."""
    per_ms = median_ms(gemm, 5, warmup=1)
    calls = max(1, int(1000 / per_ms))
    windows = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        elapsed_s = group_ms(gemm, calls) / 1000
        windows.append({"tflops": flops * calls / elapsed_s / 1e12, **nvml.read()})
    return windows


def summary(windows: list[dict[str, Any]]) -> dict[str, Any]:
    """The last half of the windows: median rate, mean power and clock, share of windows under each reason."""
    tail = windows[len(windows) // 2 :]
    powers = [w["power_w"] for w in tail if w["power_w"] is not None]
    clocks = [w["sm_clock_mhz"] for w in tail if w["sm_clock_mhz"] is not None]
    reasons = {
        name: sum(1 for w in tail if w["reasons"] and name in w["reasons"]) / len(tail)
        for name in REASONS
        if any(w["reasons"] and name in w["reasons"] for w in tail)
    }
    return {
        "windows": len(windows),
        "tflops_median_last_half": statistics.median(w["tflops"] for w in tail),
        "tflops_first_window": windows[0]["tflops"],
        "mean_power_w_last_half": statistics.fmean(powers) if powers else None,
        "mean_sm_clock_mhz_last_half": statistics.fmean(clocks) if clocks else None,
        "share_of_windows_by_reason": reasons,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=40.0, help="sustained loop per shape (default 40)")
    parser.add_argument("--idle", type=float, default=5.0, help="rest before each burst (default 5)")
    parser.add_argument("--iters", type=int, default=4, help="calls per timed group of the burst (default 4)")
    parser.add_argument("--json", type=Path, default=None, help="write the report here")
    args = parser.parse_args()
    if args.seconds <= 0 or args.idle < 0 or args.iters < 1:
        parser.error("--seconds must be positive, --idle not negative, --iters at least 1")
    if not torch.cuda.is_available():
        print("needs a CUDA GPU", file=sys.stderr)
        return 2
    nvml = Nvml()
    results = []
    for name, (m, n, k) in SHAPES.items():
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        flops = 2.0 * m * n * k
        time.sleep(args.idle)
        rested = nvml.read()
        gemm = functools.partial(torch.matmul, a, b)
        burst_ms = median_ms(gemm, args.iters)
        burst = flops / (burst_ms / 1000) / 1e12
        windows = sustained(gemm, flops, args.seconds, nvml)
        row = {"shape": name, "m": m, "n": n, "k": k, "burst_tflops": burst, "rested": rested, **summary(windows)}
        row["sustained_over_burst"] = row["tflops_median_last_half"] / burst
        row["trace"] = windows
        results.append(row)
        print(
            f"{name}: burst {burst:.1f} TFLOP/s; sustained {row['tflops_median_last_half']:.1f} TFLOP/s "
            f"({row['sustained_over_burst']:.3f} of the burst) at {row['mean_power_w_last_half']} W, "
            f"SM {row['mean_sm_clock_mhz_last_half']} MHz, reasons {row['share_of_windows_by_reason']}",
            flush=True,
        )
        del a, b, gemm
        torch.cuda.empty_cache()
    if args.json:
        write_report(
            args.json,
            "sustained_gemm",
            {"power_limit_w": nvml.power_limit_w()},
            settings={"seconds": args.seconds, "idle_s": args.idle, "iters": args.iters, "dtype": "bf16"},
            results=results,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
