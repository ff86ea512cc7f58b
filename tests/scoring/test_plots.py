"""Charts: the Pareto front of an index plot, and labels that never overlap (by the boxes the code reserves)."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from support.committed import SUBMISSIONS, committed_submissions

from specbench.scoring.columns import group_scales
from specbench.scoring.leaderboard import build
from specbench.scoring.plots import Point, index_plot, pareto_front
from specbench.scoring.svg import Box, line_chart, text_box
from specbench.scoring.units import Scale
from specbench.validator import validate_many

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
    board = build(validate_many(committed_submissions(), jobs=1), roots=[SUBMISSIONS])
    plotted: dict[str, Any] = {}
    for group in board.groups:
        svg, left_off = index_plot(group, group_scales(group))
        assert _overlaps(svg) == [], group.key.title()
        plotted[group.key.spec_id] = (svg, [e.system for e in left_off])
    llm, left_off = plotted["llm-gpt"]
    assert left_off == [] and "Pareto front" in llm and llm.count("<circle") >= 5
    assert _crowded(llm) == [] and len(_markers(llm)) == 5
    weather, _ = plotted["extreme-weather"]  # a smoke run: hollow, and no front
    assert [m[2:] for m in _markers(weather).values()] == [("none", "unranked")] and "Pareto front" not in weather
    assert "throughput (ktoken/s)" in llm and "energy (mJ/token)" in llm
    assert plotted["resnet50"] == ("", ["cpu-2core"])  # no energy measured: no plot, and the page says so


def test_names_from_a_submission_are_escaped_in_the_plot() -> None:
    from specbench.scoring.plots import _points
    from specbench.scoring.svg import Frame, Placer

    entry = SimpleNamespace(submitter="<script>x</script>", system='a"b', rank=1, slug="<s>")
    frame = Frame(50, 30, 600, 260, 0, 1, 0, 1)
    (svg,) = _points(frame, [Point(entry, 0.5, 0.5)], [], Placer(frame.box))  # type: ignore[arg-type]
    assert "<script>" not in svg and "&lt;script&gt;" in svg and 'data-entry="&lt;s&gt;"' in svg


CIRCLE = re.compile(
    r'<circle cx="([-\d.]+)" cy="([-\d.]+)" r="4.5" fill="([^"]+)" [^>]*class="point (\w+)" data-entry="([^"]*)"'
)
LABEL = re.compile(
    r'<text x="([-\d.]+)" y="([-\d.]+)" font-size="\d+" text-anchor="(\w+)" class="point-label" '
    r'data-entry="([^"]*)">([^<]*)</text>'
)


def _markers(svg: str) -> dict[str, tuple[float, float, str, str]]:
    """Each point's centre, fill and kind (front, ranked, unranked), by entry."""
    return {slug: (float(x), float(y), fill, kind) for x, y, fill, kind, slug in CIRCLE.findall(svg)}


def _crowded(svg: str) -> list[str]:
    """The labels that do not read as their own point's: nearer another point, or within 10 px of one."""
    from specbench.scoring.plots import CLEARANCE, NEAREST_OTHER, _distance

    markers = _markers(svg)
    crowded = []
    for x, y, anchor, slug, label in LABEL.findall(svg):
        box = text_box(float(x), float(y), unescape(label), anchor)
        mine = _distance(box, *markers[slug][:2])
        others = [_distance(box, cx, cy) for other, (cx, cy, _, _) in markers.items() if other != slug]
        if any(d < max(mine + CLEARANCE, NEAREST_OTHER) for d in others):
            crowded.append(unescape(label))
    return crowded


def _entry(system: str, energy: float, rate: float, rank: int | None) -> Any:
    values = {"energy_per_sample_j": energy, "samples_per_s": rate}
    return SimpleNamespace(
        system=system, submitter="org", slug=system, rank=rank, bench=None, value=values.get,
        aggregate=SimpleNamespace(spread_metric="samples_per_s"),
    )  # fmt: skip


def _plot(*entries: Any) -> str:
    group = SimpleNamespace(key=SimpleNamespace(kind="throughput"), entries=list(entries))
    scales = {"energy_per_sample_j": Scale("J/sample"), "samples_per_s": Scale("sample/s")}
    svg, left_off = index_plot(group, scales)  # type: ignore[arg-type]
    assert left_off == []
    return svg


def test_an_unranked_entry_is_a_hollow_ring_never_on_the_front() -> None:
    """A smoke run both faster and more frugal than every ranked entry is still drawn as 'not ranked'."""
    svg = _plot(_entry("fast", 2.0, 10.0, 1), _entry("frugal", 1.5, 5.0, 2), _entry("smoke", 1.0, 20.0, None))
    markers = _markers(svg)
    assert {slug: m[2:] for slug, m in markers.items()} == {
        "fast": ("#d62728", "front"), "frugal": ("#d62728", "front"), "smoke": ("none", "unranked")
    }  # fmt: skip
    assert 'class="swatch unranked"' in svg and "not ranked" in svg and "Pareto front" in svg
    assert "smoke: not ranked</title>" in svg


def test_a_board_of_unranked_entries_has_no_front() -> None:
    svg = _plot(_entry("smoke", 1.0, 20.0, None), _entry("other", 2.0, 10.0, None))
    assert {m[3] for m in _markers(svg).values()} == {"unranked"}
    assert "Pareto front" not in svg and "<polyline" not in svg and 'class="swatch unranked"' in svg


def test_crowded_labels_are_numbered_and_listed_below() -> None:
    """Five points as close as the committed llm-gpt runs: no label sits nearer another point than its own."""
    names = ["h200x2-llm-gbs64", "h200x2-llm", "h200-llm", "h200x2-llm-one-gpu-gbs32", "h200x2-llm-one-gpu"]
    spots = [(9.156, 151.5), (9.390, 147.7), (8.423, 81.97), (8.577, 80.60), (8.660, 79.97)]
    svg = _plot(*(_entry(n, x, y, rank) for rank, (n, (x, y)) in enumerate(zip(names, spots, strict=True), 1)))
    assert _overlaps(svg) == [] and _crowded(svg) == []
    labelled = {slug: unescape(label) for *_, slug, label in LABEL.findall(svg)}
    assert set(labelled) == set(names)  # every point has its name or a number beside it
    for slug, label in labelled.items():
        if label != slug:
            assert f">{label}: {slug}</text>" in svg  # a number, and the entry listed by it below the plot
