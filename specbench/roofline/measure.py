"""Measuring a roofline: the timed sweeps first, then one power window per ceiling, then the file.

`measure(config, meters)` returns the `Roofline` (workload points are added afterwards by
`specbench.roofline.workloads.place`). torch is imported inside `measure` only, so reading and
plotting roofline.json needs no torch.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from specbench import __version__
from specbench.errors import UsageError
from specbench.power.base import PowerError
from specbench.roofline.config import MeasureConfig
from specbench.roofline.format import (
    FORMAT,
    FORMAT_VERSION,
    Ceilings,
    ComputeCeiling,
    ConvCeiling,
    CopyPoint,
    GemmPoint,
    MemoryCeiling,
    PowerMeasure,
    Precision,
    Roofline,
    Settings,
)
from specbench.roofline.kernels import precision_mode
from specbench.roofline.power import PowerWindows, scope_for
from specbench.roofline.sweeps import ConvMix, Progress, Sweeps, mix_kernel


def best_gemm(points: list[GemmPoint]) -> dict[Precision, GemmPoint]:
    """The fastest size of each precision's sweep, in the order measured."""
    best: dict[Precision, GemmPoint] = {}
    for point in points:
        if point.precision not in best or point.flops_per_s > best[point.precision].flops_per_s:
            best[point.precision] = point
    return best


def _shape_label(point: Any) -> str:
    shape = point.shape
    more = f"+{shape.count - 1}" if shape.count > 1 else ""
    return f"{shape.names[0]}{more}: N{shape.n} C{shape.c} {shape.h}x{shape.w} K{shape.k} {shape.r}x{shape.s}/{shape.stride}"


class _PowerPhase:
    """Replays each ceiling's kernel for `hold_s` inside a power window, after all timing is done."""

    def __init__(self, sweeps: Sweeps, windows: PowerWindows) -> None:
        self.sweeps = sweeps
        self.windows = windows
        self.torch = sweeps.torch

    def _guarded(self, label: str, run: Any) -> PowerMeasure:
        if self.windows.sampler is None:
            return self.windows.not_measured()
        try:
            power: PowerMeasure = run()
        except (RuntimeError, PowerError) as err:
            power = self.windows.not_measured(f"not measured: the power window failed: {type(err).__name__}: {err}")
        self.sweeps.release()
        if power.measured and power.mean_power_w is not None:
            self.sweeps.progress(f"power {label}: {power.mean_power_w:.0f} W over {power.duration_s:.2f} s")
        return power

    def gemm(self, point: GemmPoint) -> PowerMeasure:
        def run() -> PowerMeasure:
            with precision_mode(self.torch, point.precision):
                case = self.sweeps.gemm_kernel(point.precision, point.m)
                return self.windows.measure(self.sweeps.timer, case.kernel, point.timing.time_s_median, case.work)

        return self._guarded(f"gemm {point.precision}", run)

    def conv(self, mix: ConvMix) -> PowerMeasure:
        def run() -> PowerMeasure:
            with precision_mode(self.torch, mix.precision, cudnn_benchmark=True):
                weighted = self.sweeps.conv_kernels(mix.precision, mix.direction)
                return self.windows.measure(self.sweeps.timer, mix_kernel(weighted), mix.seconds, mix.flops)

        return self._guarded(f"conv {mix.precision} {mix.direction}", run)

    def copy(self, point: CopyPoint) -> PowerMeasure:
        def run() -> PowerMeasure:
            case = self.sweeps.copy_kernel(point.buffer_bytes)
            return self.windows.measure(self.sweeps.timer, case.kernel, point.timing.time_s_median, case.work)

        return self._guarded("copy", run)


def _conv_ceilings(mixes: list[ConvMix], powers: list[PowerMeasure]) -> list[ConvCeiling]:
    ceilings = []
    for mix, power in zip(mixes, powers, strict=True):
        best = max(mix.points, key=lambda p: p.flops_per_s)
        ceilings.append(
            ConvCeiling(
                precision=mix.precision,
                direction=mix.direction,
                flops_per_s=mix.flops / mix.seconds,
                best_flops_per_s=best.flops_per_s,
                best_shape=_shape_label(best),
                power=power,
            )
        )
    for precision in dict.fromkeys(m.precision for m in mixes):
        mine = [(m, c) for m, c in zip(mixes, ceilings, strict=True) if m.precision == precision]
        points = [p for m, _ in mine for p in m.points]
        best = max(points, key=lambda p: p.flops_per_s)
        ceilings.append(
            ConvCeiling(
                precision=precision,
                direction="training",
                flops_per_s=sum(m.flops for m, _ in mine) / sum(m.seconds for m, _ in mine),
                best_flops_per_s=best.flops_per_s,
                best_shape=f"{best.direction} {_shape_label(best)}",
                power=_combined_power([(m.flops, c.power) for m, c in mine]),
            )
        )
    return ceilings


def _combined_power(parts: list[tuple[float, PowerMeasure]]) -> PowerMeasure:
    """FLOP/J of a training step's convs: its FLOPs over the energy each direction spends on its share."""
    scope = parts[0][1].scope
    energy = 0.0
    for flops, power in parts:
        if not power.measured or not power.work_per_j:
            return PowerMeasure(measured=False, reason=power.reason or "not measured", scope=scope)
        energy += flops / power.work_per_j
    total = sum(flops for flops, _ in parts)
    methods = sorted({power.method or "" for _, power in parts})
    return PowerMeasure(
        measured=True,
        scope=scope,
        devices=parts[0][1].devices,
        method=methods[0] if len(methods) == 1 else "mixed",
        work=total,
        work_per_j=total / energy,
    )


def measure(config: MeasureConfig, meters: list[Any], progress: Progress | None = None) -> Roofline:
    """Run every micro-benchmark of `config` on its device, then a power window per ceiling with `meters`."""
    try:
        import torch
    except ImportError as err:
        raise UsageError("measuring a roofline needs torch: pip install 'specbench[run]'") from err
    from specbench.roofline.device import identify

    if config.device == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda: torch sees no GPU here; use --device cpu or auto")
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    windows = PowerWindows(meters, scope_for(config.device), config.hold_s, config.interval_s)
    torch.manual_seed(0)
    saved_threads = torch.get_num_threads()
    if config.threads:
        torch.set_num_threads(config.threads)
    try:
        sweeps = Sweeps(config, torch, progress or (lambda _: None))
        gemm_points = sweeps.gemm()
        best = best_gemm(gemm_points)
        if not best:
            raise UsageError(f"no GEMM precision of {list(config.precisions)} runs on {config.device}")
        mixes = sweeps.conv()
        copy_points = sweeps.copy()
        top_copy = max(copy_points, key=lambda p: p.bytes_per_s)
        with windows:
            phase = _PowerPhase(sweeps, windows)
            compute = [
                ComputeCeiling(precision=p, flops_per_s=g.flops_per_s, m=g.m, n=g.n, k=g.k, power=phase.gemm(g))
                for p, g in best.items()
            ]
            conv_powers = [phase.conv(mix) for mix in mixes]
            memory = MemoryCeiling(
                bytes_per_s=top_copy.bytes_per_s, buffer_bytes=top_copy.buffer_bytes, power=phase.copy(top_copy)
            )
        device = identify(torch, sweeps.device)
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
        checks=sweeps.checks,
        skipped=sweeps.skipped,
        gemm=gemm_points,
        conv=[p for mix in mixes for p in mix.points],
        copy=copy_points,
        ceilings=Ceilings(compute=compute, conv=_conv_ceilings(mixes, conv_powers), memory=memory),
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
        min_sample_s=config.policy.min_sample_s,
        hold_s=config.hold_s,
        power_interval_s=config.interval_s,
    )
