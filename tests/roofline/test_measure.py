from __future__ import annotations

import time

import pytest
import torch
from roofline_fixtures import NO_METER

from specbench.errors import UsageError
from specbench.power import Device, Meter, PowerValues
from specbench.roofline import Roofline, default_config, measure
from specbench.roofline.config import conv_shapes
from specbench.roofline.kernels import check_conv, check_gemm, precision_mode

pytestmark = pytest.mark.needs("torch")


def test_cpu_ceilings_are_positive_and_come_from_the_sweep(cpu_roofline: Roofline) -> None:
    compute = {c.precision: c for c in cpu_roofline.ceilings.compute}
    assert sorted(compute) == ["bf16", "fp32"]
    for precision, ceiling in compute.items():
        sweep = [g for g in cpu_roofline.gemm if g.precision == precision]
        assert [g.m for g in sweep] == [64, 128]
        assert ceiling.flops_per_s == max(g.flops_per_s for g in sweep) > 0
        best = max(sweep, key=lambda g: g.flops_per_s)
        assert best.flops_per_s == pytest.approx(2 * best.m**3 / best.timing.time_s_median)
        assert best.timing.repeats >= 3 and best.timing.timer == "perf_counter"
    assert cpu_roofline.ceilings.memory.bytes_per_s > 0
    copy = cpu_roofline.copy_points[0]
    assert copy.bytes_moved == 2 * copy.buffer_bytes


def test_unsupported_precisions_are_skipped_with_the_reason(cpu_roofline: Roofline) -> None:
    skipped = {(s.what, s.precision): s.reason for s in cpu_roofline.skipped}
    assert set(skipped) == {("gemm", "tf32"), ("gemm", "fp16"), ("gemm", "fp8")}
    assert "tensor cores" in skipped[("gemm", "tf32")]
    assert "compute capability 8.9" in skipped[("gemm", "fp8")]


def test_every_measured_kernel_was_checked_against_float64(cpu_roofline: Roofline) -> None:
    checked = {(c.kernel, c.precision) for c in cpu_roofline.checks}
    assert checked == {("gemm", "fp32"), ("gemm", "bf16"), ("conv", "fp32")}
    assert all(c.passed and c.rel_error <= c.tolerance for c in cpu_roofline.checks)


def test_conv_covers_every_resnet50_geometry_in_three_directions(cpu_roofline: Roofline) -> None:
    shapes = conv_shapes(2, (3, 32, 32))
    assert sum(s.count for s in shapes) == 53
    assert len(cpu_roofline.conv) == 3 * len(shapes)
    directions = {c.direction: c for c in cpu_roofline.ceilings.conv}
    assert sorted(directions) == ["bwd_data", "bwd_filter", "fwd", "training"]
    for direction in ("fwd", "bwd_data", "bwd_filter"):
        points = [p for p in cpu_roofline.conv if p.direction == direction]
        assert directions[direction].best_flops_per_s == max(p.flops_per_s for p in points)
        assert 0 < directions[direction].flops_per_s <= directions[direction].best_flops_per_s
    rates = [directions[d].flops_per_s for d in ("fwd", "bwd_data", "bwd_filter")]
    assert min(rates) <= directions["training"].flops_per_s <= max(rates)


def test_settings_and_device_are_recorded(cpu_roofline: Roofline) -> None:
    assert cpu_roofline.device.kind == "cpu" and cpu_roofline.device.cpu_threads == 1
    assert cpu_roofline.settings.profile == "quick"
    assert cpu_roofline.settings.conv_image == [3, 32, 32]
    assert cpu_roofline.settings.hold_s == 0.2
    assert cpu_roofline.ceilings.compute[0].power.reason == f"not measured: {NO_METER}"


class ConstantMeter(Meter):
    """A CPU package drawing 50 W, with an energy counter that follows the monotonic clock."""

    kind = "constant"

    def __init__(self) -> None:
        super().__init__([Device(key="constant:0", meter=self.kind, scope="cpu_package", energy_counter="fake")])

    def read(self) -> list[PowerValues]:
        now = time.monotonic()
        return [PowerValues(power_instant_w=50.0, energy_j=50.0 * now)]


def test_power_windows_give_work_per_joule() -> None:
    config = default_config(
        "cpu", "quick", threads=1, precisions=("fp32",), conv_precisions=(), hold_s=0.3, interval_s=0.01
    )
    roofline = measure(config, [ConstantMeter()])
    for power in (roofline.ceilings.compute[0].power, roofline.ceilings.memory.power):
        assert power.measured and power.method == "counter" and power.devices == ["constant:0"]
        assert power.energy_j is not None and power.work is not None and power.duration_s is not None
        assert power.mean_power_w == pytest.approx(50.0, rel=0.2)  # window edges and readings differ by a thread switch
        assert power.work_per_j == pytest.approx(power.work / power.energy_j)
        assert power.duration_s >= 0.3
    assert roofline.ceilings.conv == []


def test_a_meter_of_another_scope_measures_nothing_here() -> None:
    class GpuOnly(ConstantMeter):
        def __init__(self) -> None:
            Meter.__init__(self, [Device(key="gpu:0", meter="constant", scope="accelerator")])

    config = default_config("cpu", "quick", threads=1, precisions=("fp32",), conv_precisions=(), hold_s=0.05)
    power = measure(config, [GpuOnly()]).ceilings.compute[0].power
    assert not power.measured
    assert power.reason == "not measured: no meter here measures scope 'cpu_package' (seen: accelerator)"


def test_bad_configurations_are_refused() -> None:
    with pytest.raises(UsageError, match="unknown precision 'bf61'; known: fp32, tf32, bf16, fp16, fp8"):
        default_config("cpu", "quick", precisions=("bf61",))
    with pytest.raises(UsageError, match="no roofline profile 'huge'"):
        default_config("cpu", "huge")
    with pytest.raises(UsageError, match="no GEMM precision"):
        measure(default_config("cpu", "quick", precisions=("fp8",)), [])


def test_precision_mode_restores_torch_switches() -> None:
    before = (torch.get_float32_matmul_precision(), torch.backends.cudnn.allow_tf32, torch.backends.cudnn.benchmark)
    with precision_mode(torch, "tf32", cudnn_benchmark=True):
        assert torch.get_float32_matmul_precision() == "high" and torch.backends.cudnn.benchmark
    with precision_mode(torch, "fp32"):
        assert torch.get_float32_matmul_precision() == "highest" and not torch.backends.cudnn.allow_tf32
    after = (torch.get_float32_matmul_precision(), torch.backends.cudnn.allow_tf32, torch.backends.cudnn.benchmark)
    assert after == before


def test_checks_catch_a_wrong_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """A matmul that drops part of the product fails its check, and no ceiling comes from it."""
    real = torch.matmul
    monkeypatch.setattr(torch, "matmul", lambda a, b, **kw: real(a, b, **kw) * 1.05)
    check = check_gemm(torch, torch.device("cpu"), "fp32")
    assert not check.passed and check.rel_error == pytest.approx(0.05, rel=1e-3)
    roofline_config = default_config("cpu", "quick", threads=1, precisions=("fp32", "bf16"), conv_precisions=())
    with pytest.raises(UsageError, match="no GEMM precision"):
        measure(roofline_config, [])
    assert check_conv(torch, torch.device("cpu"), "fp32", channels_last=True).passed
