"""The device table: it loads, every required part is found by its driver name, bad files are refused."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from pathlib import Path

import pytest
from support.committed import committed

from specbench.errors import InputError
from specbench.physics import (
    DEVICES_FILE,
    ENERGY_MARGIN,
    PRECISIONS,
    load_devices,
    lookup,
    markdown_sources,
    markdown_table,
    peak_flops,
    precision_column,
)

REQUIRED = {
    # name as NVML / amdsmi / hl-smi report it -> (row name, dense bf16 TFLOP/s per listed device)
    "NVIDIA H100 80GB HBM3": ("NVIDIA H100 SXM5 80GB", 989.5),
    "NVIDIA H100 PCIe": ("NVIDIA H100 PCIe 80GB", 756.5),
    "NVIDIA H100 NVL": ("NVIDIA H100 NVL 94GB", 835.5),
    "NVIDIA H200": ("NVIDIA H200 SXM 141GB", 989.5),
    "NVIDIA H200 NVL": ("NVIDIA H200 NVL 141GB", 835.5),
    "NVIDIA GH200 480GB": ("NVIDIA GH200 Grace Hopper Superchip, 96GB HBM3", 990.0),
    "NVIDIA GH200 144G HBM3e": ("NVIDIA GH200 Grace Hopper Superchip, 144GB HBM3e", 990.0),
    "NVIDIA A100-SXM4-40GB": ("NVIDIA A100 SXM4 40GB", 312.0),
    "NVIDIA A100-SXM4-80GB": ("NVIDIA A100 SXM4 80GB", 312.0),
    "NVIDIA A100-PCIE-40GB": ("NVIDIA A100 PCIe 40GB", 312.0),
    "NVIDIA A100 80GB PCIe": ("NVIDIA A100 PCIe 80GB", 312.0),
    "NVIDIA L40S": ("NVIDIA L40S", 362.05),
    "AMD Instinct MI250X/MI250": ("AMD Instinct MI250X", 383.0 / 2),
    "AMD Instinct MI300X": ("AMD Instinct MI300X", 1307.4),
    "HL-225": ("Intel Gaudi 2 (HL-225)", 432.0),
    "NVIDIA GeForce RTX 4090": ("NVIDIA GeForce RTX 4090", 330.3),
    "Radeon RX 7900 XTX": ("AMD Radeon RX 7900 XTX", None),
}


def test_shipped_table_loads_with_sources_and_positive_numbers() -> None:
    table = load_devices()
    assert len(table.devices) >= 15
    for row in table.devices:
        assert row.sources and all(s.url.startswith("https://") for s in row.sources), row.name
        assert 0 < row.idle_floor_w < row.power_limit_w, row.name
        assert row.memory_bandwidth_bytes_per_s > 0
        assert row.peak_flops_per_s() and all(v > 0 for v in row.peak_flops_per_s().values())


@pytest.mark.parametrize("reported", sorted(REQUIRED))
def test_each_required_part_is_found_by_its_driver_name(reported: str) -> None:
    name, bf16_tflops = REQUIRED[reported]
    facts = lookup(reported)
    assert facts is not None and facts.name == name
    rate = peak_flops(facts, "bf16")
    assert (rate is None) if bf16_tflops is None else rate == pytest.approx(bf16_tflops * 1e12)


def test_names_are_compared_without_case_or_extra_whitespace() -> None:
    assert lookup("  nvidia   h200 ") is lookup("NVIDIA H200")
    assert lookup("AMD Instinct MI250X / MI250") is lookup("amd instinct mi250x/mi250")


@pytest.mark.parametrize("name", ["NVIDIA H20", "NVIDIA H100", "H200", "cpu", "", None])
def test_an_unknown_or_partial_name_is_none(name: str | None) -> None:
    assert lookup(name) is None


def test_precision_names_map_to_datasheet_columns() -> None:
    assert precision_column("amp_bf16") == "bf16"
    assert precision_column("BF16") == "bf16"
    assert precision_column("16-mixed") == "fp16"
    assert precision_column("float32") == "fp32"
    assert precision_column("int4") is None
    assert precision_column(None) is None
    h200 = lookup("NVIDIA H200")
    assert h200 is not None
    assert peak_flops(h200, "fp32") == pytest.approx(67e12)
    assert peak_flops(h200, "tf32") == pytest.approx(494.5e12)
    assert peak_flops(h200, "int4") is None


def test_tf32_falls_back_to_fp32_on_parts_without_tf32() -> None:
    mi250x = lookup("AMD Instinct MI250X")
    assert mi250x is not None and mi250x.peak_tflops.tf32 is None
    assert peak_flops(mi250x, "tf32") == pytest.approx(95.7e12 / 2)
    gaudi2 = lookup("HL-225")
    assert gaudi2 is not None and peak_flops(gaudi2, "fp32") is None


def test_a_doubled_h200_llm_rate_is_above_the_bf16_peak() -> None:
    """h200-llm with samples doubled claims 1,026 TFLOP/s per device in bf16, over the datasheet peak."""
    h200 = lookup("NVIDIA H200")
    assert h200 is not None
    assert (peak_flops(h200, "bf16") or 0) < 1026e12


ROW = """
  - name: Part
    vendor: NVIDIA
    aliases: [Part X]
    peak_tflops: {bf16: 10}
    memory_bandwidth_gb_s: 100
    power_limit_w: 100
    idle_floor_w: 3
    sources: [{title: t, url: "https://example.org/d", gives: g}]
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "devices.yaml"
    path.write_text(text)
    return path


def _problems(path: Path) -> str:
    with pytest.raises(InputError) as caught:
        load_devices(path)
    return str(caught.value)


def test_a_valid_custom_table_is_used(tmp_path: Path) -> None:
    path = _write(tmp_path, "format_version: 1\ndevices:" + ROW)
    facts = lookup("part x", path)
    assert facts is not None and peak_flops(facts, "bf16") == pytest.approx(10e12)
    assert lookup("NVIDIA H200", path) is None


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda r: r.replace("    vendor: NVIDIA\n", "    vendor: NVIDIA\n    tdp: 5\n"), "tdp"),
        (lambda r: r.replace("{bf16: 10}", "{bf16: -10}"), "peak_tflops.bf16"),
        (lambda r: r.replace("memory_bandwidth_gb_s: 100", "memory_bandwidth_gb_s: 0"), "memory_bandwidth_gb_s"),
        (lambda r: r.replace("{bf16: 10}", "{bf16: .inf}"), "peak_tflops.bf16"),
        (lambda r: r.replace("{bf16: 10}", "{}"), "at least one of"),
        (lambda r: r.replace('    sources: [{title: t, url: "https://example.org/d", gives: g}]\n', ""), "sources"),
        (lambda r: r.replace("sources: [{title", "sources: []\n    x: [{title"), "sources"),
        (lambda r: r.replace("https://example.org/d", "ftp://example.org/d"), "url"),
        (lambda r: r.replace("idle_floor_w: 3", "idle_floor_w: 300"), "idle_floor_w below power_limit_w"),
        (lambda r: r + r.replace("name: Part", "name: Other"), "in 'Part' and 'Other'"),
    ],
)
def test_a_malformed_table_is_refused_with_a_located_message(
    tmp_path: Path, edit: Callable[[str], str], expected: str
) -> None:
    path = _write(tmp_path, "format_version: 1\ndevices:" + edit(ROW))
    message = _problems(path)
    assert expected in message and str(path) in message


def test_a_table_of_another_version_or_shape_is_refused(tmp_path: Path) -> None:
    assert "format_version" in _problems(_write(tmp_path, "format_version: 2\ndevices:" + ROW))
    assert "devices" in _problems(_write(tmp_path, "format_version: 1\n"))
    assert _problems(_write(tmp_path, "- just\n- a list\n"))
    assert "cannot read" in _problems(tmp_path / "missing.yaml")


def test_every_precision_has_a_name() -> None:
    assert set(PRECISIONS) <= {precision_column(p) for p in PRECISIONS}
    assert DEVICES_FILE.is_file()


def _block(text: str, name: str) -> str:
    start = text.index(f"<!-- {name}:")
    start = text.index("\n", start) + 1
    return text[start : text.index(f"<!-- /{name} -->")]


def test_docs_page_matches_the_table() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "devices.md").read_text()
    table = load_devices()
    assert _block(page, "devices-table") == markdown_table(table)
    assert _block(page, "devices-sources") == markdown_sources(table)


def test_every_shipped_row_says_where_its_idle_floor_comes_from() -> None:
    for row in load_devices().devices:
        assert row.idle_floor_from, row.name
        if row.idle_floor_basis == "published":
            assert any("nvidia-smi" in s.title or "rocm-smi" in s.title for s in row.sources), row.name
    basis = {row.name: row.idle_floor_basis for row in load_devices().devices}
    assert basis["NVIDIA H200 SXM 141GB"] == "measured"


def test_h200_floor_is_under_every_committed_reading_and_over_a_trace_scaled_by_ten() -> None:
    """The floor is 0.8 x the lowest of the committed H200 traces' readings; x0.1 of their idle falls under it."""
    readings = [
        float(row["power_instant_w"])
        for path in sorted(committed().glob("h200*/*/run_*/power.csv"))
        for row in csv.DictReader(io.StringIO(path.read_text()))
        if row["power_instant_w"]
    ]
    h200 = lookup("NVIDIA H200")
    assert h200 is not None and readings
    assert h200.idle_floor_w == int(0.8 * min(readings)) == 61
    assert 0.1 * 124.0 < h200.idle_floor_w < min(readings)


def test_least_energy_per_flop_is_half_the_limit_over_the_fastest_float_peak() -> None:
    h200 = lookup("NVIDIA H200")
    gaudi2 = lookup("HL-225")
    assert h200 is not None and gaudi2 is not None
    assert h200.least_energy_j_per_flop == pytest.approx(0.5 * 700 / 1979e12)  # fp8, not int8
    assert gaudi2.least_energy_j_per_flop == pytest.approx(0.5 * 600 / 432e12)
    assert ENERGY_MARGIN == 0.5


def test_a_row_with_only_an_integer_column_has_no_least_energy(tmp_path: Path) -> None:
    path = _write(tmp_path, "format_version: 1\ndevices:" + ROW.replace("{bf16: 10}", "{int8: 10}"))
    facts = lookup("part x", path)
    assert facts is not None and facts.least_energy_j_per_flop is None
    assert facts.idle_floor_basis == "rule" and facts.idle_floor_from is None
