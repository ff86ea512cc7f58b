"""What the GPU benchmark scripts share: GPU 0's NVML energy counter, the environment a result records, a CUDA timer,
the JSON report."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch


def nvml_energy_j() -> float | None:
    """GPU 0's total energy counter in joules, or None where NVML cannot read it."""
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml.nvmlDeviceGetTotalEnergyConsumption(pynvml.nvmlDeviceGetHandleByIndex(0)) / 1000.0
    except Exception:
        return None


def environment(**extra: Any) -> dict[str, Any]:
    """Date, device, driver, torch/CUDA/Python versions and CPU count, plus the script's own `extra` entries."""
    driver = None
    with contextlib.suppress(Exception):
        import pynvml

        pynvml.nvmlInit()
        driver = pynvml.nvmlSystemGetDriverVersion()
    return {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "device": torch.cuda.get_device_name(0),
        "driver": driver,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "host_cpus": os.cpu_count(),
        **extra,
    }


def group_ms(fn: Callable[[], object], calls: int) -> float:
    """Milliseconds of `calls` back-to-back calls of fn, timed by CUDA events (waits for them to finish)."""
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        fn()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop)


def median_ms(fn: Callable[[], object], iters: int, warmup: int = 3) -> float:
    """Median milliseconds of one call of fn, over 5 groups of `iters` calls timed by CUDA events, after `warmup` calls."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    return sorted(group_ms(fn, iters) / iters for _ in range(5))[2]


def write_report(path: Path, benchmark: str, environment_extra: dict[str, Any] | None = None, **fields: Any) -> None:
    """The script's result as JSON at `path`: its name, the command line, `environment()`, then `fields`."""
    report = {
        "benchmark": benchmark,
        "command": " ".join(["python", *sys.argv]),
        "environment": environment(**(environment_extra or {})),
        **fields,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2))
