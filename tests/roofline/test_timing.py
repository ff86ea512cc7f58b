"""The repeat policy on a fake clock: small kernels are timed in samples of many launches, until a minimum duration."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from specbench.roofline.config import PROFILES
from specbench.roofline.timing import RepeatPolicy, Timer


class FakeKernel:
    """A kernel whose every launch advances a fake clock by `launch_s` (the first launch by `first_s`)."""

    def __init__(self, launch_s: float, first_s: float | None = None) -> None:
        self.now = 0.0
        self.launch_s = launch_s
        self.first_s = first_s
        self.inputs: list[int] = []

    def clock(self) -> float:
        return self.now

    def __call__(self, i: int) -> None:
        first = not self.inputs
        self.inputs.append(i)
        self.now += self.first_s if first and self.first_s is not None else self.launch_s


def _timer(kernel: FakeKernel) -> Timer:
    return Timer(None, SimpleNamespace(type="cpu"), clock=kernel.clock)


def test_a_small_kernel_is_timed_in_samples_of_many_launches_until_the_minimum_duration() -> None:
    kernel = FakeKernel(launch_s=1e-4)
    policy = RepeatPolicy(warmup=2, target_s=0.2, min_repeats=3, max_repeats=50, min_sample_s=0.01)
    timing = _timer(kernel).time(kernel, policy, input_sets=4)
    assert timing.launches_per_sample == 128  # doubled from 1 until one sample lasts 0.01 s (128 x 0.1 ms)
    assert timing.repeats == 16  # 16 samples of 12.8 ms: the first count whose timed total reaches 0.2 s
    assert timing.timed_s == pytest.approx(0.2048)
    assert timing.time_s_median == pytest.approx(1e-4) and timing.time_s_max == pytest.approx(1e-4)
    assert timing.warmup == 2 + 255  # the warm-up and the calibration samples 1 + 2 + ... + 128
    assert len(kernel.inputs) == 2 + 255 + 16 * 128


def test_one_slow_first_launch_is_calibrated_away() -> None:
    """A cold first launch (a thread pool waking) does not set the sample size nor the time per launch."""
    kernel = FakeKernel(launch_s=1e-4, first_s=0.05)
    policy = RepeatPolicy(warmup=0, target_s=0.2, min_repeats=3, max_repeats=50, min_sample_s=0.01)
    timing = _timer(kernel).time(kernel, policy, input_sets=1)
    assert timing.time_s_median == pytest.approx(1e-4)
    assert timing.launches_per_sample == 128
    assert timing.repeats == 16 and timing.timed_s == pytest.approx(0.2048)


def test_without_a_minimum_sample_each_launch_is_a_sample() -> None:
    kernel = FakeKernel(launch_s=0.03)
    policy = RepeatPolicy(warmup=1, target_s=0.2, min_repeats=3, max_repeats=50)
    timing = _timer(kernel).time(kernel, policy, input_sets=1)
    assert timing.launches_per_sample == 1
    assert timing.repeats == 7  # 7 x 0.03 s is the first total of at least 0.2 s
    assert timing.warmup == 2


@pytest.mark.parametrize(
    ("launch_s", "repeats"),
    [(0.5, 3), (1e-6, 10)],
    ids=["a slow kernel still gets min_repeats", "max_repeats bounds a kernel that never reaches target_s"],
)
def test_the_sample_count_stays_between_its_bounds(launch_s: float, repeats: int) -> None:
    kernel = FakeKernel(launch_s=launch_s)
    policy = RepeatPolicy(warmup=0, target_s=1.0, min_repeats=3, max_repeats=10)
    assert _timer(kernel).time(kernel, policy, input_sets=1).repeats == repeats


def test_launches_rotate_through_the_input_sets() -> None:
    kernel = FakeKernel(launch_s=1e-3)
    policy = RepeatPolicy(warmup=0, target_s=0.012, min_repeats=1, max_repeats=10, min_sample_s=0.004)
    _timer(kernel).time(kernel, policy, input_sets=3)
    calibration = [0, 2, 3, 4, 5, 6, 7]  # samples of 1, 2 and 4 launches
    assert kernel.inputs == calibration + list(range(12))


def test_the_cpu_profiles_ask_for_a_minimum_sample() -> None:
    assert PROFILES[("cpu", "full")]["policy"].min_sample_s == 0.01
    assert PROFILES[("cpu", "quick")]["policy"].min_sample_s > 0
