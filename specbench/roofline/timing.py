"""Timing one kernel: warm-up, a repeat count aimed at a target time, one timed launch per repeat, the median.

On a GPU every launch is bracketed by CUDA events recorded in the stream, so the host runs ahead
and the times are the device's; on a CPU each call is timed with perf_counter.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from specbench.roofline.format import TimerName, Timing

Kernel = Callable[[int], Any]
"""A launch of the kernel on input set `i % input_sets`."""


@dataclass(frozen=True)
class RepeatPolicy:
    warmup: int
    target_s: float
    min_repeats: int
    max_repeats: int

    def repeats_for(self, estimate_s: float) -> int:
        wanted = math.ceil(self.target_s / estimate_s) if estimate_s > 0 else self.max_repeats
        return max(self.min_repeats, min(self.max_repeats, wanted))


class Timer:
    """Times kernels on one torch device."""

    def __init__(self, torch: Any, device: Any) -> None:
        self.torch = torch
        self.device = device
        self.cuda = device.type == "cuda"

    @property
    def name(self) -> TimerName:
        return "cuda_events" if self.cuda else "perf_counter"

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize(self.device)

    def time(self, kernel: Kernel, policy: RepeatPolicy, input_sets: int) -> Timing:
        for i in range(policy.warmup):
            kernel(i)
        self.sync()
        start = time.perf_counter()
        kernel(policy.warmup)
        self.sync()
        repeats = policy.repeats_for(time.perf_counter() - start)
        times = self._events(kernel, repeats) if self.cuda else self._host(kernel, repeats)
        return Timing(
            timer=self.name,
            warmup=policy.warmup + 1,
            repeats=repeats,
            time_s_median=statistics.median(times),
            time_s_min=min(times),
            time_s_max=max(times),
            input_sets=input_sets,
        )

    def _events(self, kernel: Kernel, repeats: int) -> list[float]:
        cuda = self.torch.cuda
        starts = [cuda.Event(enable_timing=True) for _ in range(repeats)]
        ends = [cuda.Event(enable_timing=True) for _ in range(repeats)]
        for i in range(repeats):
            starts[i].record()
            kernel(i)
            ends[i].record()
        self.sync()
        return [max(s.elapsed_time(e) / 1000.0, 1e-9) for s, e in zip(starts, ends, strict=True)]

    def _host(self, kernel: Kernel, repeats: int) -> list[float]:
        times = []
        for i in range(repeats):
            start = time.perf_counter()
            kernel(i)
            times.append(max(time.perf_counter() - start, 1e-9))
        return times
