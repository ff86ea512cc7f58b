"""Measuring a roofline: GEMM per precision over a size sweep, ResNet-50's convolutions, device copy, power.

`measure(config, meters)` runs every micro-benchmark on one device and returns the `Roofline`
(workload points are added afterwards by `specbench.roofline.workloads.place`). torch is imported
here only, so reading and plotting roofline.json needs no torch.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, cast

from specbench import __version__
from specbench.errors import UsageError
from specbench.roofline.format import (
    CONV_DIRECTIONS,
    FORMAT,
    FORMAT_VERSION,
    PRECISIONS,
    Ceilings,
    Check,
    ComputeCeiling,
    ConvCeiling,
    ConvDirection,
    ConvPoint,
    ConvShape,
    CopyPoint,
    GemmPoint,
    MemoryCeiling,
    PowerMeasure,
    Precision,
    Roofline,
    Settings,
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
    copy_case,
    failed_check,
    gemm_bytes,
    gemm_case,
    precision_mode,
    unsupported,
)
from specbench.roofline.power import PowerWindows, scope_for
from specbench.roofline.resnet import conv_layers, resnet50_layers
from specbench.roofline.timing import Kernel, RepeatPolicy, Timer

MiB = 2**20


@dataclass(frozen=True)
class MeasureConfig:
    """What to measure and how long; `profile` names the preset it came from."""

    profile: str
    device: str
    precisions: tuple[Precision, ...]
    gemm_sizes: tuple[int, ...]
    conv_precisions: tuple[Precision, ...]
    conv_batch: int
    conv_image: tuple[int, int, int]
    copy_buffer_bytes: tuple[int, ...]
    policy: RepeatPolicy
    hold_s: float
    interval_s: float = 0.1
    channels_last: bool = True
    threads: int | None = None
    max_input_sets: int = 8
    command: str = field(default_factory=lambda: " ".join(sys.argv))


PROFILES: dict[tuple[str, str], dict[str, Any]] = {
    ("cuda", "full"): {
        "precisions": PRECISIONS,
        "gemm_sizes": (2048, 4096, 8192, 12288, 16384),
        "conv_precisions": ("bf16",),
        "conv_batch": 256,
        "conv_image": (3, 224, 224),
        "copy_buffer_bytes": (256 * MiB, 1024 * MiB, 4096 * MiB),
        "policy": RepeatPolicy(warmup=3, target_s=0.1, min_repeats=5, max_repeats=50),
        "hold_s": 2.0,
    },
    ("cpu", "full"): {
        "precisions": ("fp32", "bf16"),
        "gemm_sizes": (256, 512, 1024, 2048),
        "conv_precisions": ("fp32",),
        "conv_batch": 8,
        "conv_image": (3, 224, 224),
        "copy_buffer_bytes": (64 * MiB, 256 * MiB),
        "policy": RepeatPolicy(warmup=2, target_s=0.2, min_repeats=3, max_repeats=50),
        "hold_s": 2.0,
    },
    ("cpu", "quick"): {
        "precisions": ("fp32", "bf16"),
        "gemm_sizes": (64, 128),
        "conv_precisions": ("fp32",),
        "conv_batch": 2,
        "conv_image": (3, 32, 32),
        "copy_buffer_bytes": (4 * MiB,),
        "policy": RepeatPolicy(warmup=1, target_s=0.002, min_repeats=3, max_repeats=10),
        "hold_s": 0.2,
        "max_input_sets": 1,
    },
    ("cuda", "quick"): {
        "precisions": PRECISIONS,
        "gemm_sizes": (1024, 4096),
        "conv_precisions": ("bf16",),
        "conv_batch": 32,
        "conv_image": (3, 224, 224),
        "copy_buffer_bytes": (256 * MiB,),
        "policy": RepeatPolicy(warmup=2, target_s=0.02, min_repeats=3, max_repeats=20),
        "hold_s": 0.5,
    },
}


def default_config(device: str, profile: str = "full", **overrides: Any) -> MeasureConfig:
    """The preset for a device ('cuda' or 'cpu') and profile ('full' or 'quick'), with overrides."""
    if (device, profile) not in PROFILES:
        raise UsageError(f"no roofline profile {profile!r} for device {device!r}; profiles: full, quick")
    values = dict(PROFILES[(device, profile)])
    values.update({k: v for k, v in overrides.items() if v is not None})
    for key in ("precisions", "conv_precisions"):
        values[key] = tuple(_precision(p) for p in values[key])
    return MeasureConfig(profile=profile, device=device, **values)


def resolve_device(device: str) -> str:
    """'auto' is 'cuda' where torch sees a GPU, else 'cpu'."""
    if device != "auto":
        return device
    try:
        import torch
    except ImportError as err:
        raise UsageError("measuring a roofline needs torch: pip install 'specbench[run]'") from err
    return "cuda" if torch.cuda.is_available() else "cpu"


def _precision(name: str) -> Precision:
    if name not in PRECISIONS:
        raise UsageError(f"unknown precision {name!r}; known: {', '.join(PRECISIONS)}")
    return cast(Precision, name)


def conv_shapes(batch: int, image: tuple[int, int, int]) -> list[ConvShape]:
    """The distinct conv geometries of ResNet-50 v1.5 at this batch and image size, with how often each occurs."""
    groups: dict[tuple[int, int, int, int, int, int, int, int], list[str]] = {}
    geometries = {}
    for layer in conv_layers(resnet50_layers(image)):
        g = layer.geometry
        assert g is not None
        key = (g.c, g.h, g.w, g.k, g.r, g.s, g.stride, g.pad)
        groups.setdefault(key, []).append(layer.name)
        geometries[key] = g
    shapes = []
    for key, names in groups.items():
        g = geometries[key]
        fields = {"c": g.c, "h": g.h, "w": g.w, "k": g.k, "r": g.r, "s": g.s, "stride": g.stride, "pad": g.pad}
        shapes.append(ConvShape(names=names, count=len(names), n=batch, p=g.p, q=g.q, **fields))
    return shapes


def backward_data_count(shape: ConvShape) -> int:
    """Layers of this geometry whose input needs a gradient in training (all but the stem's conv1)."""
    return shape.count - (1 if "conv1" in shape.names else 0)


Progress = Callable[[str], None]


class _Run:
    """One measurement: the device, the timer, the power windows, and what has been collected so far."""

    def __init__(self, config: MeasureConfig, torch: Any, windows: PowerWindows, progress: Progress) -> None:
        self.config = config
        self.torch = torch
        self.device = torch.device(config.device)
        self.timer = Timer(torch, self.device)
        self.windows = windows
        self.progress = progress
        self.checks: list[Check] = []
        self.skipped: list[Skipped] = []

    def budget(self) -> SetBudget:
        from specbench.roofline.device import cache_and_free_bytes

        cache, free = cache_and_free_bytes(self.torch, self.device)
        return SetBudget(cache, free, self.config.max_input_sets)

    def _release(self) -> None:
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
        message = str(err).strip().splitlines()[0][:300] if str(err).strip() else ""
        reason = f"failed: {type(err).__name__}: {message}"
        self.skipped.append(Skipped(what=what, precision=precision, reason=reason))
        self.progress(f"{what} {precision} {reason}")
        self._release()

    def gemm(self) -> tuple[list[GemmPoint], list[ComputeCeiling]]:
        points: list[GemmPoint] = []
        ceilings: list[ComputeCeiling] = []
        for precision in self.config.precisions:
            try:
                if not self._attempt("gemm", precision):
                    continue
                precision_points, ceiling = self._gemm_precision(precision)
            except RuntimeError as err:
                self._failed("gemm", precision, err)
                continue
            points += precision_points
            ceilings.append(ceiling)
        return points, ceilings

    def _gemm_precision(self, precision: Precision) -> tuple[list[GemmPoint], ComputeCeiling]:
        """The size sweep at one precision; the fastest size is the ceiling and runs the power window."""
        points: list[GemmPoint] = []
        best: tuple[GemmPoint, Case] | None = None
        with precision_mode(self.torch, precision):
            for size in self.config.gemm_sizes:
                point, case = self._gemm_point(precision, size)
                points.append(point)
                self.progress(f"gemm {precision} {size}^3: {eng(point.flops_per_s, 'FLOP/s')}")
                if best is None or point.flops_per_s > best[0].flops_per_s:
                    best = (point, case)
                del case
                self._release()
            assert best is not None
            top, case = best
            power = self.windows.measure(self.timer, case.kernel, top.timing.time_s_median, case.work)
        del case, best
        self._release()
        ceiling = ComputeCeiling(
            precision=precision, flops_per_s=top.flops_per_s, m=top.m, n=top.n, k=top.k, power=power
        )
        return points, ceiling

    def _gemm_point(self, precision: Precision, size: int) -> tuple[GemmPoint, Case]:
        case = gemm_case(self.torch, self.device, precision, size, self.budget())
        timing = self.timer.time(case.kernel, self.config.policy, case.input_sets)
        point = GemmPoint(
            precision=precision,
            m=size,
            n=size,
            k=size,
            flops=case.work,
            bytes=gemm_bytes(precision, size, size, size),
            timing=timing,
            flops_per_s=case.work / timing.time_s_median,
            note=FP8_NOTE if precision == "fp8" else None,
        )
        return point, case

    def conv(self) -> tuple[list[ConvPoint], list[ConvCeiling]]:
        shapes = conv_shapes(self.config.conv_batch, self.config.conv_image)
        points: list[ConvPoint] = []
        ceilings: list[ConvCeiling] = []
        for precision in self.config.conv_precisions:
            try:
                if not self._attempt("conv", precision):
                    continue
                with precision_mode(self.torch, precision, cudnn_benchmark=True):
                    ours = [self._conv_direction(shapes, d, precision) for d in CONV_DIRECTIONS]
            except RuntimeError as err:
                self._failed("conv", precision, err)
                continue
            precision_points = [p for direction_points, _ in ours for p in direction_points]
            directions = [c for _, c in ours]
            points += precision_points
            ceilings += [*directions, _training_mix(precision, directions, precision_points)]
        return points, ceilings

    def _conv_direction(
        self, shapes: list[ConvShape], direction: ConvDirection, precision: Precision
    ) -> tuple[list[ConvPoint], ConvCeiling]:
        points: list[ConvPoint] = []
        weighted: list[tuple[Case, int]] = []
        for shape in shapes:
            channels_last = self.config.channels_last
            case = conv_case(self.torch, self.device, shape, direction, precision, channels_last, self.budget())
            timing = self.timer.time(case.kernel, self.config.policy, case.input_sets)
            rate = case.work / timing.time_s_median
            points.append(
                ConvPoint(
                    shape=shape,
                    direction=direction,
                    precision=precision,
                    flops=case.work,
                    timing=timing,
                    flops_per_s=rate,
                )
            )
            weighted.append((case, _weight(shape, direction)))
        flops = sum(weight * point.flops for point, (_, weight) in zip(points, weighted, strict=True))
        seconds = sum(weight * point.timing.time_s_median for point, (_, weight) in zip(points, weighted, strict=True))
        best = max(points, key=lambda p: p.flops_per_s)
        self.progress(f"conv {precision} {direction}: layer mix {eng(flops / seconds, 'FLOP/s')}")
        power = self.windows.measure(self.timer, _mix_kernel(weighted), seconds, flops)
        weighted.clear()
        self._release()
        ceiling = ConvCeiling(
            precision=precision,
            direction=direction,
            flops_per_s=flops / seconds,
            best_flops_per_s=best.flops_per_s,
            best_shape=_shape_label(best.shape),
            power=power,
        )
        return points, ceiling

    def copy(self) -> tuple[list[CopyPoint], MemoryCeiling]:
        points: list[tuple[CopyPoint, Case]] = []
        best: tuple[CopyPoint, Case] | None = None
        for size in self.config.copy_buffer_bytes:
            case = copy_case(self.torch, self.device, size, self.budget())
            timing = self.timer.time(case.kernel, self.config.policy, case.input_sets)
            point = CopyPoint(
                buffer_bytes=size, bytes_moved=case.work, timing=timing, bytes_per_s=case.work / timing.time_s_median
            )
            self.progress(f"copy {size / MiB:.0f} MiB: {eng(point.bytes_per_s, 'B/s')}")
            points.append((point, case))
            if best is None or point.bytes_per_s > best[0].bytes_per_s:
                best = (point, case)
        assert best is not None
        top, case = best
        power = self.windows.measure(self.timer, case.kernel, top.timing.time_s_median, case.work)
        result = [p for p, _ in points]
        del points, best, case
        self._release()
        return result, MemoryCeiling(bytes_per_s=top.bytes_per_s, buffer_bytes=top.buffer_bytes, power=power)


def _mix_kernel(weighted: list[tuple[Case, int]]) -> Kernel:
    """One launch of the whole layer mix: each geometry as many times as the model has it."""

    def mix(i: int) -> None:
        for case, weight in weighted:
            for j in range(weight):
                case.kernel(i + j)

    return mix


def _weight(shape: ConvShape, direction: str) -> int:
    return backward_data_count(shape) if direction == "bwd_data" else shape.count


def _shape_label(shape: ConvShape) -> str:
    return (
        f"{shape.names[0]}{'+' + str(shape.count - 1) if shape.count > 1 else ''}: "
        f"N{shape.n} C{shape.c} {shape.h}x{shape.w} K{shape.k} {shape.r}x{shape.s}/{shape.stride}"
    )


def _training_mix(precision: Precision, directions: list[ConvCeiling], points: list[ConvPoint]) -> ConvCeiling:
    """All three directions as one training step runs them: total FLOPs over total time; energy likewise."""
    flops: dict[str, float] = {d.direction: 0.0 for d in directions}
    seconds = 0.0
    for point in points:
        flops[point.direction] += _weight(point.shape, point.direction) * point.flops
        seconds += _weight(point.shape, point.direction) * point.timing.time_s_median
    best = max(points, key=lambda p: p.flops_per_s)
    return ConvCeiling(
        precision=precision,
        direction="training",
        flops_per_s=sum(flops.values()) / seconds,
        best_flops_per_s=best.flops_per_s,
        best_shape=f"{best.direction} {_shape_label(best.shape)}",
        power=_combined_power(directions, flops),
    )


def _combined_power(directions: list[ConvCeiling], flops: dict[str, float]) -> PowerMeasure:
    """FLOP/J of a training step's convs: its FLOPs over the energy each direction spends on its share."""
    scope = directions[0].power.scope
    energy = 0.0
    for direction in directions:
        per_j = direction.power.work_per_j
        if not direction.power.measured or not per_j:
            return PowerMeasure(measured=False, reason=direction.power.reason or "not measured", scope=scope)
        energy += flops[direction.direction] / per_j
    total = sum(flops.values())
    methods = sorted({d.power.method or "" for d in directions})
    return PowerMeasure(
        measured=True,
        scope=scope,
        devices=directions[0].power.devices,
        method=methods[0] if len(methods) == 1 else "mixed",
        work=total,
        work_per_j=total / energy,
    )


def measure(config: MeasureConfig, meters: list[Any], progress: Progress | None = None) -> Roofline:
    """Run every micro-benchmark of `config` on its device with power windows from `meters`."""
    try:
        import torch
    except ImportError as err:
        raise UsageError("measuring a roofline needs torch: pip install 'specbench[run]'") from err
    from specbench.roofline.device import identify

    if config.device == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda: torch sees no GPU here; use --device cpu or auto")
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    say = progress or (lambda _: None)
    windows = PowerWindows(meters, scope_for(config.device), config.hold_s, config.interval_s)
    torch.manual_seed(0)
    saved_threads = torch.get_num_threads()
    if config.threads:
        torch.set_num_threads(config.threads)
    try:
        with windows:
            run = _Run(config, torch, windows, say)
            gemm_points, compute = run.gemm()
            if not compute:
                raise UsageError(f"no GEMM precision of {list(config.precisions)} runs on {config.device}")
            conv_points, conv_ceilings = run.conv()
            copy_points, memory = run.copy()
        device = identify(torch, run.device)
    finally:
        torch.set_num_threads(saved_threads)
    return Roofline(
        format=FORMAT,
        format_version=FORMAT_VERSION,
        created_at=started,
        command=config.command,
        specbench_version=__version__,
        device=device,
        settings=_settings(config),
        checks=run.checks,
        skipped=run.skipped,
        gemm=gemm_points,
        conv=conv_points,
        copy=copy_points,
        ceilings=Ceilings(compute=compute, conv=conv_ceilings, memory=memory),
    )


def _settings(config: MeasureConfig) -> Settings:
    return Settings(
        profile=config.profile,
        precisions=list(config.precisions),
        gemm_sizes=list(config.gemm_sizes),
        conv_precisions=list(config.conv_precisions),
        conv_batch=config.conv_batch,
        conv_image=list(config.conv_image),
        memory_format="channels_last" if config.channels_last else "contiguous",
        copy_buffer_bytes=list(config.copy_buffer_bytes),
        max_input_sets=config.max_input_sets,
        threads=config.threads,
        warmup=config.policy.warmup,
        target_time_s=config.policy.target_s,
        min_repeats=config.policy.min_repeats,
        max_repeats=config.policy.max_repeats,
        hold_s=config.hold_s,
        power_interval_s=config.interval_s,
    )
