from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from roofline_fixtures import CPU_SUBMISSION

from specbench.roofline import Roofline, place, save_plots


def _svg_text(path: Path) -> list[str]:
    return [el.text or "" for el in ET.parse(path).iter() if el.tag.endswith("text")]


def test_png_and_svg_show_ceilings_slope_and_points(cpu_roofline: Roofline, tmp_path: Path) -> None:
    placed = place(cpu_roofline, [CPU_SUBMISSION])
    png, svg = save_plots(placed, tmp_path)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    texts = _svg_text(svg)
    legend = [t for t in texts if " GEMM " in t or t.startswith(("slope", "[1]"))]
    assert any(t.startswith("fp32 GEMM ") and t.endswith("FLOP/J not measured") for t in legend)
    assert any(t.startswith("bf16 GEMM ") for t in legend)
    assert any(t.startswith("slope: copy ") for t in legend)
    assert any(t.startswith("[1] resnet50 run 1 (fp32, batch 32): ") and "of roof" in t for t in legend)
    assert any("fp32 conv, ResNet-50 training mix" in t for t in texts)
    assert any("analytical byte count" in t for t in texts)


def test_plot_without_workloads(cpu_roofline: Roofline, tmp_path: Path) -> None:
    png, svg = save_plots(cpu_roofline, tmp_path, stem="bare")
    assert (png.name, svg.name) == ("bare.png", "bare.svg")
    assert not any(t.startswith("[1]") for t in _svg_text(svg))
