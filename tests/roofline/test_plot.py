from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from roofline_fixtures import H200_ROOFLINE, H200_SUBMISSION

from specbench.roofline import Roofline, place, read_roofline, save_plots
from specbench.roofline.format import eng

pytestmark = pytest.mark.needs("matplotlib")


def _svg_text(path: Path) -> list[str]:
    return [el.text or "" for el in ET.parse(path).iter() if el.tag.endswith("text")]


def test_png_and_svg_show_ceilings_slope_and_points(
    cpu_roofline: Roofline, local_cpu_submission: Path, tmp_path: Path
) -> None:
    placed = place(cpu_roofline, [local_cpu_submission])
    png, svg = save_plots(placed, tmp_path / "plots")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    texts = _svg_text(svg)
    legend = [t for t in texts if " GEMM " in t or t.startswith(("copy ", "[1]"))]
    assert any(t.startswith("fp32 GEMM ") and t.endswith("FLOP/J not measured") for t in legend)
    assert any(t.startswith("bf16 GEMM ") for t in legend)
    assert any(t.startswith("copy ") and t.endswith("B/J not measured") for t in legend)
    assert any(t.startswith("[1] resnet50 run 1 (fp32, batch 32): ") and "of roof" in t for t in legend)
    assert any("fp32 conv, ResNet-50 training mix" in t for t in texts)
    assert any("analytical byte count" in t for t in texts)


def test_plot_without_workloads(cpu_roofline: Roofline, tmp_path: Path) -> None:
    png, svg = save_plots(cpu_roofline, tmp_path, stem="bare")
    assert (png.name, svg.name) == ("bare.png", "bare.svg")
    assert not any(t.startswith("[1]") for t in _svg_text(svg))


def test_measured_energy_efficiency_is_in_the_legend(tmp_path: Path) -> None:
    """Real data: the committed H200 roofline draws FLOP/J from its power windows and the H200 runs' points."""
    roofline = place(read_roofline(H200_ROOFLINE), [H200_SUBMISSION])
    bf16 = roofline.compute_ceiling("bf16")
    assert bf16 is not None and bf16.power.work_per_j is not None
    _, svg = save_plots(roofline, tmp_path)
    texts = _svg_text(svg)
    assert f"bf16 GEMM {eng(bf16.flops_per_s, 'FLOP/s')}, {eng(bf16.power.work_per_j, 'FLOP/J')}" in texts
    assert "[1,2,3]" in texts
    assert sum(t.startswith(("[1] caraml-resnet50", "[2] caraml-resnet50", "[3] caraml-resnet50")) for t in texts) == 3


def test_the_legend_hides_no_point(tmp_path: Path) -> None:
    """The legend sits below the axes: a run far right and low (where a legend inside would sit) stays in view,
    clear of the legend and of the notes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from specbench.roofline.plot import drawn_points, render

    roofline = place(read_roofline(H200_ROOFLINE), [H200_SUBMISSION])
    real = drawn_points(roofline)[0]
    corner = real.model_copy(update={"label": "a slow far-right run", "intensity_flop_per_byte": 900.0,
                                     "intensity_fused_flop_per_byte": 1200.0, "flops_per_s": 2e12})  # fmt: skip
    roofline = roofline.model_copy(update={"workloads": [*roofline.workloads, corner]})
    fig = render(roofline)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    (ax,) = fig.axes
    (legend,) = fig.legends
    frame, box = ax.get_window_extent(renderer), legend.get_window_extent(renderer)
    assert not frame.overlaps(box) and box.y1 <= frame.y0
    notes = next(t for t in ax.texts if t.get_text().startswith("Ceilings:")).get_bbox_patch()
    assert notes is not None
    for point in drawn_points(roofline):
        x, y = ax.transData.transform((point.intensity_flop_per_byte, point.flops_per_s))
        assert frame.contains(x, y) and not box.contains(x, y) and not notes.get_window_extent(renderer).contains(x, y)
    assert any(t.get_text().startswith("[4] a slow far-right run") for t in legend.get_texts())
