"""Charts: the Pareto front of an index plot, and labels that never overlap (by the boxes the code reserves)."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from specbench.scoring.columns import group_scales
from specbench.scoring.leaderboard import build
from specbench.scoring.plots import Point, index_plot, pareto_front
from specbench.scoring.svg import Box, line_chart, text_box
from specbench.validator import discover, validate_many

COMMITTED = Path(__file__).resolve().parents[2] / "submissions"
TEXT = re.compile(r'<text x="([-\d.]+)" y="([-\d.]+)" font-size="(\d+)" text-anchor="(\w+)"([^>]*)>([^<]*)</text>')


def _boxes(svg: str) -> list[tuple[str, Box]]:
    """Every unrotated text of an SVG made here, with the box the code reserved for it."""
    boxes = []
    for x, y, size, anchor, extra, content in TEXT.findall(svg):
        if "rotate" not in extra:
            label = unescape(content)
            boxes.append((label, text_box(float(x), float(y), label, anchor, float(size), "font-weight" in extra)))
    return boxes


def _overlaps(svg: str) -> list[tuple[str, str]]:
    boxes = _boxes(svg)
    return [(a, b) for i, (a, box) in enumerate(boxes) for b, other in boxes[i + 1 :] if box.overlaps(other, 0.0)]


def _point(name: str, x: float, y: float) -> Point:
    return Point(SimpleNamespace(system=name), x, y)  # type: ignore[arg-type]


def test_pareto_front_throughput_and_time() -> None:
    a, b, c, d = _point("a", 8.4, 82.0), _point("b", 9.2, 151.5), _point("c", 9.4, 147.7), _point("d", 8.6, 80.6)
    assert pareto_front([a, b, c, d], higher_y=True) == [a, b]  # c: more energy and slower than b; d than a
    fast, frugal, neither = _point("fast", 5.0, 10.0), _point("frugal", 2.0, 30.0), _point("neither", 6.0, 40.0)
    assert pareto_front([fast, frugal, neither], higher_y=False) == [frugal, fast]  # lower time is better


def test_power_chart_marker_labels_and_legend_do_not_overlap() -> None:
    series = {f"nvml:{i}": [(t / 10, 100.0 + i) for t in range(200)] for i in range(4)}
    svg = line_chart(
        series,
        x_label="time (s)",
        y_label="power (W)",
        title="run_1: power",
        markers={"run_start": 0.4, "run_stop": 0.6},  # 2 px apart: the labels cannot share a row
    )
    assert _overlaps(svg) == []
    labels = [label for label, _ in _boxes(svg)]
    assert {"run_start", "run_stop", "nvml:0", "nvml:3"} <= set(labels)


def test_quality_chart_target_label_clear_of_the_legend() -> None:
    svg = line_chart(
        {"mean_iou": [(1, 0.3), (2, 0.6), (3, 0.83)]},
        x_label="epoch",
        y_label="mean_iou",
        title="run_1: quality",
        hline=("target 0.75", 0.75),
    )
    assert _overlaps(svg) == [] and "target 0.75" in svg


def test_index_plot_of_the_committed_submissions(tmp_path: Path) -> None:
    board = build(validate_many(discover(COMMITTED), jobs=1), roots=[COMMITTED])
    plotted: dict[str, Any] = {}
    for group in board.groups:
        svg, left_off = index_plot(group, group_scales(group))
        assert _overlaps(svg) == [], group.key.title()
        plotted[group.key.spec_id] = (svg, [e.system for e in left_off])
    llm, left_off = plotted["llm-gpt"]
    assert left_off == [] and "Pareto front" in llm and llm.count("<circle") >= 5
    assert "throughput (ktoken/s)" in llm and "energy (mJ/token)" in llm
    assert plotted["resnet50"] == ("", ["cpu-2core"])  # no energy measured: no plot, and the page says so


def test_names_from_a_submission_are_escaped_in_the_plot() -> None:
    from specbench.scoring.plots import _points
    from specbench.scoring.svg import Frame, Placer

    entry = SimpleNamespace(submitter="<script>x</script>", system='a"b', rank=1, slug="<s>")
    frame = Frame(50, 30, 600, 260, 0, 1, 0, 1)
    (svg,) = _points(frame, [Point(entry, 0.5, 0.5)], [], Placer(frame.box))  # type: ignore[arg-type]
    assert "<script>" not in svg and "&lt;script&gt;" in svg and 'data-entry="&lt;s&gt;"' in svg
