"""Timing one kernel: warm-up, samples of back-to-back launches long enough that launch overhead does not count,
repeated until a minimum timed duration, the median time per launch.

A sample is `launches_per_sample` launches timed together, that number doubled from one until a sample lasts
`min_sample_s`, so a small kernel is not timed one launch (and one thread wake-up or launch) at a time. On a GPU
each sample is bracketed by CUDA events recorded in the stream, so the host runs ahead and the times are the
device's; on a CPU each sample is timed with the host clock, and samples repeat until `target_s` of timed
work (between `min_repeats` and `max_repeats` samples).
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
Clock = Callable[[], float]

MAX_LAUNCHES_PER_SAMPLE = 1 << 16


@dataclass(frozen=True)
class RepeatPolicy:
    """Warm-up launches; at least `target_s` of timed work per point in `min_repeats` to `max_repeats` samples,
    each sample at least `min_sample_s` long (0: one launch per sample)."""

    warmup: int
    target_s: float
    min_repeats: int
    max_repeats: int
    min_sample_s: float = 0.0

    def repeats_for(self, estimate_s: float) -> int:
        """Samples of `estimate_s` each that make up `target_s` (the GPU's count, fixed before it launches them)."""
        wanted = math.ceil(self.target_s / estimate_s) if estimate_s > 0 else self.max_repeats
        return max(self.min_repeats, min(self.max_repeats, wanted))

    def more(self, samples: int, timed_s: float) -> bool:
        """Whether another sample is due: fewer than `min_repeats`, or under `target_s` and `max_repeats`."""
        return samples < self.min_repeats or (timed_s < self.target_s and samples < self.max_repeats)


class Timer:
    """Times kernels on one torch device; `clock` is the host clock (tests give a fake one)."""

    def __init__(self, torch: Any, device: Any, clock: Clock = time.perf_counter) -> None:
        self.torch = torch
        self.device = device
        self.cuda = device.type == "cuda"
        self.clock = clock

    @property
    def name(self) -> TimerName:
        return "cuda_events" if self.cuda else "perf_counter"

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize(self.device)

    def time(self, kernel: Kernel, policy: RepeatPolicy, input_sets: int) -> Timing:
        for i in range(policy.warmup):
            kernel(i)
        launches, estimate, untimed = self._calibrate(kernel, policy.min_sample_s)
        if self.cuda:
            times = self._events(kernel, policy.repeats_for(estimate * launches), launches)
        else:
            times, launches, discarded = self._host(kernel, policy, launches)
            untimed += discarded
        return Timing(
            timer=self.name,
            warmup=policy.warmup + untimed,
            repeats=len(times),
            time_s_median=statistics.median(times),
            time_s_min=min(times),
            time_s_max=max(times),
            input_sets=input_sets,
            launches_per_sample=launches,
            timed_s=math.fsum(times) * launches,
        )

    def _sample(self, kernel: Kernel, launches: int, first: int) -> float:
        """Host seconds of `launches` back-to-back launches, the device synchronized at both ends."""
        self.sync()
        start = self.clock()
        for j in range(launches):
            kernel(first + j)
        self.sync()
        return self.clock() - start

    def _calibrate(self, kernel: Kernel, min_sample_s: float) -> tuple[int, float, int]:
        """Launches per sample, doubled from one until a sample lasts `min_sample_s`; the time per launch; and
        how many launches calibrating took (untimed, like the warm-up)."""
        launches = 1
        elapsed = self._sample(kernel, launches, 0)
        while elapsed < min_sample_s and launches < MAX_LAUNCHES_PER_SAMPLE:
            launches *= 2
            elapsed = self._sample(kernel, launches, launches)
        return launches, elapsed / launches, 2 * launches - 1

    def _events(self, kernel: Kernel, repeats: int, launches: int) -> list[float]:
        cuda = self.torch.cuda
        starts = [cuda.Event(enable_timing=True) for _ in range(repeats)]
        ends = [cuda.Event(enable_timing=True) for _ in range(repeats)]
        for i in range(repeats):
            starts[i].record()
            for j in range(launches):
                kernel(i * launches + j)
            ends[i].record()
        self.sync()
        return [max(s.elapsed_time(e) / 1000.0 / launches, 1e-9) for s, e in zip(starts, ends, strict=True)]

    def _host(self, kernel: Kernel, policy: RepeatPolicy, launches: int) -> tuple[list[float], int, int]:
        """Samples until the policy's minimum duration; a sample shorter than `min_sample_s` (the calibration
        was fooled by one slow launch) doubles the launches and starts over. The times, the launches per
        sample, and the launches of discarded samples."""
        times: list[float] = []
        timed = 0.0
        discarded = 0
        while policy.more(len(times), timed):
            elapsed = self._sample(kernel, launches, len(times) * launches)
            if elapsed < policy.min_sample_s and launches < MAX_LAUNCHES_PER_SAMPLE:
                discarded += (len(times) + 1) * launches
                launches *= 2
                times, timed = [], 0.0
                continue
            timed += elapsed
            times.append(max(elapsed / launches, 1e-9))
        return times, launches, discarded
