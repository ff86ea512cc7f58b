"""The timed sweeps: GEMM per precision and size, ResNet-50's convolutions per direction, device copy.

Timing only; the power windows run afterwards (specbench.roofline.measure), so that the heat of
a sustained window never lowers a ceiling timed after it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from specbench.roofline.config import MeasureConfig, MiB, backward_data_count
from specbench.roofline.format import (
    CONV_DIRECTIONS,
    Check,
    ConvDirection,
    ConvPoint,
    ConvShape,
    CopyPoint,
    GemmPoint,
    Precision,
    Skipped,
    eng,
)
from specbench.roofline.kernels import (
    FP8_NOTE,
    Case,
    SetBudget,
    check_conv,
    check_gemm,
    conv_case,
    conv_flops,
    copy_case,
    failed_check,
    gemm_bytes,
    gemm_case,
    precision_mode,
    unsupported,
)
from specbench.roofline.timing import Kernel, Timer

Progress = Callable[[str], None]


def conv_weight(shape: ConvShape, direction: str) -> int:
    """How often one training step runs this geometry in this direction."""
    return backward_data_count(shape) if direction == "bwd_data" else shape.count


@dataclass(frozen=True)
class ConvMix:
    """One direction of the model's conv layers at one precision: each geometry weighted by its count."""

    precision: Precision
    direction: ConvDirection
    points: list[ConvPoint]

    @property
    def flops(self) -> float:
        return sum(conv_weight(p.shape, p.direction) * p.flops for p in self.points)

    @property
    def seconds(self) -> float:
        return sum(conv_weight(p.shape, p.direction) * p.timing.time_s_median for p in self.points)


class Sweeps:
    """Runs the timed sweeps on one device and builds the kernels the power windows replay."""

    def __init__(self, config: MeasureConfig, torch: Any, progress: Progress) -> None:
        self.config = config
        self.torch = torch
        self.device = torch.device(config.device)
        self.timer = Timer(torch, self.device)
        self.progress = progress
        self.checks: list[Check] = []
        self.skipped: list[Skipped] = []

    def budget(self) -> SetBudget:
        from specbench.roofline.device import cache_and_free_bytes

        cache, free = cache_and_free_bytes(self.torch, self.device)
        return SetBudget(cache, free, self.config.max_input_sets)

    def release(self) -> None:
        if self.device.type == "cuda":
            self.torch.cuda.empty_cache()

    def _attempt(self, what: str, precision: Precision) -> bool:
        """Whether `what` ('gemm' or 'conv') at `precision` runs here and computes the right result; else why not."""
        why = unsupported(self.torch, self.device, precision, what)
        if why is None:
            if what == "gemm":
                result = check_gemm(self.torch, self.device, precision)
            else:
                result = check_conv(self.torch, self.device, precision, self.config.channels_last)
            self.checks.append(result)
            why = None if result.passed else failed_check(result)
        if why:
            self.skipped.append(Skipped(what=what, precision=precision, reason=why))
        return why is None

    def _failed(self, what: str, precision: Precision, err: RuntimeError) -> None:
        """A torch error for one precision (no kernel for it in this build, out of memory) skips that precision."""
        text = str(err).strip()
        reason = f"failed: {type(err).__name__}: {text.splitlines()[0][:300] if text else ''}"
        self.skipped.append(Skipped(what=what, precision=precision, reason=reason))
        self.progress(f"{what} {precision} {reason}")
        self.release()

    def gemm(self) -> list[GemmPoint]:
        points: list[GemmPoint] = []
        for precision in self.config.precisions:
            try:
                if self._attempt("gemm", precision):
                    with precision_mode(self.torch, precision):
                        points += [self._gemm_point(precision, size) for size in self.config.gemm_sizes]
            except RuntimeError as err:
                points = [p for p in points if p.precision != precision]
                self._failed("gemm", precision, err)
        return points

    def gemm_kernel(self, precision: Precision, size: int) -> Case:
        """A fresh GEMM at this size (the caller holds `precision_mode`)."""
        return gemm_case(self.torch, self.device, precision, size, self.budget())

    def _gemm_point(self, precision: Precision, size: int) -> GemmPoint:
        case = self.gemm_kernel(precision, size)
        timing = self.timer.time(case.kernel, self.config.policy, case.input_sets)
        del case
        self.release()
        point = GemmPoint(
            precision=precision,
            m=size,
            n=size,
            k=size,
            flops=2.0 * size**3,
            bytes=gemm_bytes(precision, size, size, size),
            timing=timing,
            flops_per_s=2.0 * size**3 / timing.time_s_median,
            note=FP8_NOTE if precision == "fp8" else None,
        )
        self.progress(f"gemm {precision} {size}^3: {eng(point.flops_per_s, 'FLOP/s')}")
        return point

    def conv_shapes(self) -> list[ConvShape]:
        from specbench.roofline.config import conv_shapes

        return conv_shapes(self.config.conv_batch, self.config.conv_image)

    def conv(self) -> list[ConvMix]:
        mixes: list[ConvMix] = []
        for precision in self.config.conv_precisions:
            try:
                if self._attempt("conv", precision):
                    with precision_mode(self.torch, precision, cudnn_benchmark=True):
                        mixes += [self._conv_mix(precision, d) for d in CONV_DIRECTIONS]
            except RuntimeError as err:
                mixes = [m for m in mixes if m.precision != precision]
                self._failed("conv", precision, err)
        return mixes

    def conv_kernels(self, precision: Precision, direction: ConvDirection) -> list[tuple[Case, int]]:
        """Every geometry of the model in one direction with its weight (the caller holds `precision_mode`)."""
        channels_last = self.config.channels_last
        return [
            (
                conv_case(self.torch, self.device, s, direction, precision, channels_last, self.budget()),
                conv_weight(s, direction),
            )
            for s in self.conv_shapes()
        ]

    def _conv_mix(self, precision: Precision, direction: ConvDirection) -> ConvMix:
        points = []
        for shape in self.conv_shapes():
            case = conv_case(
                self.torch, self.device, shape, direction, precision, self.config.channels_last, self.budget()
            )
            timing = self.timer.time(case.kernel, self.config.policy, case.input_sets)
            del case
            flops = conv_flops(shape)
            rate = flops / timing.time_s_median
            points.append(
                ConvPoint(
                    shape=shape, direction=direction, precision=precision, flops=flops, timing=timing, flops_per_s=rate
                )
            )
        self.release()
        mix = ConvMix(precision, direction, points)
        self.progress(f"conv {precision} {direction}: layer mix {eng(mix.flops / mix.seconds, 'FLOP/s')}")
        return mix

    def copy(self) -> list[CopyPoint]:
        points = []
        for size in self.config.copy_buffer_bytes:
            case = self.copy_kernel(size)
            timing = self.timer.time(case.kernel, self.config.policy, case.input_sets)
            del case
            self.release()
            rate = 2.0 * size / timing.time_s_median
            points.append(CopyPoint(buffer_bytes=size, bytes_moved=2.0 * size, timing=timing, bytes_per_s=rate))
            self.progress(f"copy {size / MiB:.0f} MiB: {eng(rate, 'B/s')}")
        return points

    def copy_kernel(self, buffer_bytes: int) -> Case:
        return copy_case(self.torch, self.device, buffer_bytes, self.budget())


def mix_kernel(weighted: list[tuple[Case, int]]) -> Kernel:
    """One launch of the whole layer mix: each geometry as many times as the model has it."""

    def mix(i: int) -> None:
        for case, weight in weighted:
            for j in range(weight):
                case.kernel(i + j)

    return mix
