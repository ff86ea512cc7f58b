"""Numbers as the leaderboard prints them: significant digits, SI prefixes per column, time and byte units."""

from __future__ import annotations

import pytest

from specbench.scoring.units import binary_bytes, compact, scale_for, si_scale, significant, time_scale


@pytest.mark.parametrize(
    ("value", "text"),
    [(151486.2, "151486"), (151.486, "151.5"), (81.973, "81.97"), (0.13481, "0.1348"), (0.0, "0"), (-2.5, "-2.500")],
)
def test_significant_digits_in_plain_notation(value: float, text: str) -> None:
    assert significant(value) == text


def test_si_prefix_puts_the_largest_value_between_1_and_1000() -> None:
    tokens = si_scale([151486.2, 81973.3, None], "token/s")
    assert (tokens.unit, tokens.text(151486.2), tokens.text(81973.3), tokens.text(None)) == (
        "ktoken/s", "151.5", "81.97", "n/a"
    )  # fmt: skip
    cpu = si_scale([4.984e9], "FLOP/s")  # a CPU's 0.004984 TFLOP/s
    assert (cpu.unit, cpu.text(4.984e9)) == ("GFLOP/s", "4.984")
    assert si_scale([0.009156, 0.00842], "J/token").with_unit(0.009156) == "9.156 mJ/token"
    assert si_scale([], "W").unit == "W" and si_scale([999.96], "W").unit == "W"
    assert si_scale([1000.0], "W").unit == "kW"


def test_counts_take_no_prefix_below_one() -> None:
    """0.8506 image/s, never 850.6 mimage/s: a count has no milli; an energy per image does."""
    images = scale_for("count", [0.8506, 0.61], "image/s")
    assert (images.unit, images.text(0.8506)) == ("image/s", "0.8506")
    assert scale_for("count", [8506.0], "image/s").with_unit(8506.0) == "8.506 kimage/s"
    assert scale_for("count", [], "token/s").unit == "token/s"
    assert scale_for("count", [4.2e-4], "FLOP/s/W").with_unit(4.2e-4) == "0.000420 FLOP/s/W"
    assert scale_for("si", [0.8506], "J/image").with_unit(0.8506) == "850.6 mJ/image"


def test_a_slow_board_prints_its_rates_without_milli() -> None:
    """A CPU's 0.8506 image/s and 0.0123 FLOP/s/W keep their units; the energy per image takes its prefix."""
    from types import SimpleNamespace

    from specbench.scoring.columns import group_scales

    values = {"samples_per_s": 0.8506, "valid_flops_per_w": 0.0123, "energy_per_sample_j": 0.004, "model_flops": 0.5}
    entry = SimpleNamespace(
        bench=None, runs=[], aggregate=SimpleNamespace(values=values, spread_metric="samples_per_s")
    )
    scales = group_scales(SimpleNamespace(key=SimpleNamespace(kind="throughput"), entries=[entry]))  # type: ignore[arg-type]
    shown = {key: scales[key].with_unit(value) for key, value in values.items()}
    assert shown == {
        "samples_per_s": "0.8506 sample/s", "valid_flops_per_w": "0.01230 FLOP/s/W",
        "energy_per_sample_j": "4.000 mJ/sample", "model_flops": "0.5000 FLOP",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("value", "text"),
    [(3.0517578125e-05, "3.052e-5"), (1e-08, "1e-8"), (0.875, "0.875"), (700.0, "700"), (0.0001, "0.0001"),
     (50257.0, "50257"), (123456.7, "123457"), (0.0, "0"), (-2.5e-7, "-2.5e-7"), (1e20, "1e20"),
     (float("nan"), "nan")],
)  # fmt: skip
def test_parameters_in_four_significant_digits(value: float, text: str) -> None:
    assert compact(value) == text


def test_time_in_seconds_minutes_or_hours() -> None:
    assert time_scale([116.5, 11.17]).unit == "s"
    assert time_scale([5911.8]).with_unit(5911.8) == "98.53 min"
    assert time_scale([90 * 3600.0]).with_unit(90 * 3600.0) == "90.00 h"


def test_percent_and_plain() -> None:
    assert scale_for("percent", [0.479], "").with_unit(0.479) == "47.9 %"
    assert scale_for("percent", [0.000247], "").text(0.000247) == "0.0247"
    assert scale_for("plain", [0.8269], "").text(0.8269) == "0.8269"


def test_bytes_in_binary_units() -> None:
    assert binary_bytes(25276510208) == "23.54 GiB"
    assert binary_bytes(512) == "512 B"
    assert binary_bytes(150019880320) == "139.7 GiB"
