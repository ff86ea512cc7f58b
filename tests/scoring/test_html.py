"""The HTML leaderboard in headless Chromium (Debian's package): loads cleanly, sorts, lists everything, and
reads as published at 1280 and 1920 px: no overlapping text in any plot, no label nearer another point than its
own, an unranked entry a hollow ring off the Pareto front, tables within the window, every page stamped."""

from __future__ import annotations

import math
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from specbench import __version__
from specbench.cli import main

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


def _browser():  # type: ignore[no-untyped-def]
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    if sync_playwright is None or CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("CI must install playwright and Debian's chromium (see .ci/run)")
        pytest.skip("playwright or chromium is not installed")
    return sync_playwright


def test_leaderboard_page_in_chromium(submissions: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sync_playwright = _browser()
    site = tmp_path / "site"
    assert main(["score", str(submissions), "--format", "html", "--out", str(site)]) == 0
    assert capsys.readouterr().out.rstrip().endswith(f"leaderboard: {site / 'index.html'}")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        page = browser.new_page()
        problems: list[str] = []
        page.on("console", lambda msg: problems.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda err: problems.append(str(err)))
        page.goto((site / "index.html").as_uri())
        entries = page.eval_on_selector_all("tr[data-entry]", "rows => rows.map(r => r.dataset.entry)")
        assert sorted(entries) == sorted(
            ["acme--fast--caraml-resnet50", "acme--slow--caraml-resnet50", "acme--dark--caraml-resnet50",
             "beta--official--resnet50", "beta--box--resnet50"]
        )  # fmt: skip
        table = 'table[data-group^="caraml-resnet50"]'
        header = page.locator(f"{table} th", has_text="throughput (kimage/s)")
        systems = f"{table} tbody tr td:nth-child(3)"
        header.click()
        ascending = page.eval_on_selector_all(systems, "cells => cells.map(c => c.textContent)")
        assert ascending == ["acme/slow", "acme/dark", "acme/fast"] or ascending == [
            "acme/dark",
            "acme/slow",
            "acme/fast",
        ]
        header.click()
        descending = page.eval_on_selector_all(systems, "cells => cells.map(c => c.textContent)")
        assert descending[0] == "acme/fast"
        page.click('a[href="pages/acme--fast--caraml-resnet50.html"]')
        assert page.title() == "acme/fast · caraml-resnet50"
        assert page.locator("svg.chart").count() >= 1
        assert page.locator("text=No findings: compliant.").count() == 1
        page.goto((site / "pages" / "acme--dark--caraml-resnet50.html").as_uri())
        assert page.locator("li.error").count() >= 1
        browser.close()
    assert problems == []


VIEWPORTS = ({"width": 1280, "height": 900}, {"width": 1920, "height": 1080})
STAMP = re.compile(rf"generated \d{{4}}-\d\d-\d\d \d\d:\d\d UTC by specbench {re.escape(__version__)}")
TEXT_BOXES = """svgs => svgs.map(svg => Array.from(svg.querySelectorAll("text")).map(t => {
  const r = t.getBoundingClientRect();
  return {text: t.textContent, x0: r.left, y0: r.top, x1: r.right, y1: r.bottom};
}))"""
STATUS_LINES = """spans => spans.map(s => {
  const range = document.createRange();
  range.selectNodeContents(s);
  return {text: s.textContent, lines: new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top))).size};
})"""
MARKERS = """svgs => svgs.map(svg => ({
  points: Array.from(svg.querySelectorAll("circle.point")).map(c => {
    const r = c.getBoundingClientRect();
    return {entry: c.dataset.entry, kind: c.classList[1], fill: getComputedStyle(c).fill,
            x: (r.left + r.right) / 2, y: (r.top + r.bottom) / 2};
  }),
  labels: Array.from(svg.querySelectorAll("text.point-label")).map(t => {
    const r = t.getBoundingClientRect();
    return {entry: t.dataset.entry, text: t.textContent, x0: r.left, y0: r.top, x1: r.right, y1: r.bottom};
  }),
  swatches: Array.from(svg.querySelectorAll("circle.swatch")).map(c => c.classList[1] + ":" + getComputedStyle(c).fill),
}))"""
CLEAR_PX = 8.0
"""How much nearer its own point a label must be drawn than any other point (the code reserves 10 px)."""
WIDTHS = """() => ({
  window: document.documentElement.clientWidth,
  page: document.documentElement.scrollWidth,
  tables: Array.from(document.querySelectorAll("table")).map(t => t.getBoundingClientRect().right),
})"""


def _overlapping(boxes: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Pairs of texts whose drawn boxes intersect (by more than half a pixel)."""
    pairs = []
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            if (
                min(a["x1"], b["x1"]) - max(a["x0"], b["x0"]) > 0.5
                and min(a["y1"], b["y1"]) - max(a["y0"], b["y0"]) > 0.5
            ):
                pairs.append((a["text"], b["text"]))
    return pairs


def _check_page(page: Any, shot: Path) -> dict[str, Any]:
    """What a page must be, as the browser drew it; the screenshot goes to `shot`."""
    page.screenshot(path=str(shot), full_page=True)
    body = page.inner_text("body")
    assert len(STAMP.findall(body)) == 2, f"{shot.name}: time and version at the top and the bottom"
    for chart in page.eval_on_selector_all("svg.chart", TEXT_BOXES):
        assert _overlapping(chart) == [], shot.name
    widths = page.evaluate(WIDTHS)
    assert widths["page"] <= widths["window"] and max(widths["tables"], default=0) <= widths["window"], shot.name
    status = page.eval_on_selector_all("td.status .frag:not(.long)", STATUS_LINES)  # a long one may wrap
    assert all(s["lines"] == 1 for s in status), [s for s in status if s["lines"] != 1]
    return {"charts": page.locator("svg.chart").count(), "body": body}


def _distance(box: dict[str, Any], x: float, y: float) -> float:
    return float(math.hypot(max(box["x0"] - x, 0, x - box["x1"]), max(box["y0"] - y, 0, y - box["y1"])))


def _check_markers(page: Any, shot: Path) -> list[str]:
    """The index plots' markers as drawn: an unranked row's point is a hollow ring, never on the front, and the
    legend shows the ring; each label sits clearly nearer its own point than any other. Returns the entries drawn."""
    ranked = dict(page.eval_on_selector_all("tr[data-entry]", "rows => rows.map(r => [r.dataset.entry, r.className])"))
    drawn = []
    for plot in page.eval_on_selector_all("svg.chart", MARKERS):
        for point in plot["points"]:
            drawn.append(point["entry"])
            if ranked[point["entry"]] == "unranked":
                assert (point["kind"], point["fill"]) == ("unranked", "none"), (shot.name, point)
            else:
                assert point["kind"] in ("front", "ranked") and point["fill"] != "none", (shot.name, point)
        kinds = {p["kind"] for p in plot["points"]}
        assert {s.split(":")[0] for s in plot["swatches"]} == kinds, shot.name
        assert all(s != "unranked" or fill == "none" for s, fill in (w.split(":") for w in plot["swatches"]))
        for label in plot["labels"]:
            own = [p for p in plot["points"] if p["entry"] == label["entry"]]
            others = [p for p in plot["points"] if p["entry"] != label["entry"]]
            mine = _distance(label, own[0]["x"], own[0]["y"])
            crowded = [p["entry"] for p in others if _distance(label, p["x"], p["y"]) < mine + CLEAR_PX]
            assert crowded == [], f"{shot.name}: label {label['text']!r} crowds {crowded}"
    return drawn


def test_every_committed_submission_as_published(
    everything: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every page of a board of every committed submission (and the real smoke runs), at 1280 and 1920 px in
    Chromium.

    Screenshots: TMP/screens/*-WIDTH.png.
    """
    sync_playwright = _browser()
    site, screens = tmp_path / "site", tmp_path / "screens"
    screens.mkdir()
    assert main(["score", str(everything), "--format", "html", "--out", str(site), "--jobs", "1"]) == 0
    capsys.readouterr()
    committed = sorted(p.name for p in (everything / "specbench").iterdir())
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        problems: list[str] = []
        for viewport in VIEWPORTS:
            page = browser.new_page(viewport=viewport)
            page.on("console", lambda msg: problems.append(msg.text) if msg.type == "error" else None)
            page.on("pageerror", lambda err: problems.append(str(err)))
            width = viewport["width"]
            page.goto((site / "index.html").as_uri())
            index = _check_page(page, screens / f"index-{width}.png")
            drawn = _check_markers(page, screens / f"index-{width}.png")
            assert "specbench--h200-extreme-weather--extreme-weather" in drawn  # a smoke run with its energy
            entries = page.eval_on_selector_all("tr[data-entry]", "rows => rows.map(r => r.dataset.entry)")
            assert {e.split("--")[1] for e in entries if e.startswith("specbench--")} == set(committed)
            assert index["charts"] >= 4  # a plot per table where an entry measured its energy
            assert "Not plotted (no energy measured): acme/dark" in index["body"]
            for name in sorted(entries):
                page.goto((site / "pages" / f"{name}.html").as_uri())
                _check_page(page, screens / f"{name}-{width}.png")
            page.close()
        browser.close()
    assert problems == []
    assert len(list(screens.glob("*.png"))) == (len(entries) + 1) * len(VIEWPORTS)


ROUND = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "mlperf-v4.0-resnet-round"


def test_an_imported_mlperf_round_as_published(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A whole imported round (MLPerf Training v4.0 ResNet-50, 33 systems, names such as
    HPE-Cray-XD670-Gen11-H100-SXM5-80GB_n2_mxnet_24.04): every page fits 1280 and 1920 px, no text overlaps,
    status fragments hold together, and the plot's markers say ranked or not as the table does.

    Screenshots: TMP/screens/*-WIDTH.png.
    """
    if not ROUND.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"the MLPerf corpus is missing at {ROUND} (CI must provide ../shared/corpus)")
        pytest.skip(f"no MLPerf corpus at {ROUND} (put ../shared/corpus beside the checkout)")
    sync_playwright = _browser()
    imported, site, screens = tmp_path / "imported", tmp_path / "site", tmp_path / "screens"
    screens.mkdir()
    assert main(["import", "mlperf", str(ROUND), "--out", str(imported)]) in (0, 1)
    assert main(["score", str(imported), "--format", "html", "--out", str(site), "--jobs", "1"]) == 0
    capsys.readouterr()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        problems: list[str] = []
        for viewport in VIEWPORTS:
            page = browser.new_page(viewport=viewport)
            page.on("pageerror", lambda err: problems.append(str(err)))
            width = viewport["width"]
            page.goto((site / "index.html").as_uri())
            _check_page(page, screens / f"index-{width}.png")
            assert _check_markers(page, screens / f"index-{width}.png")  # the round's energy plot has points
            entries = page.eval_on_selector_all("tr[data-entry]", "rows => rows.map(r => r.dataset.entry)")
            assert len(entries) == 33
            for name in sorted(entries):
                page.goto((site / "pages" / f"{name}.html").as_uri())
                _check_page(page, screens / f"{name}-{width}.png")
            page.close()
        browser.close()
    assert problems == []
