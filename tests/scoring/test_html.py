"""The HTML leaderboard in headless Chromium (Debian's package): loads cleanly, sorts, lists everything."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

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
        header = page.locator(f"{table} th", has_text="throughput (images/s)")
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
        page.click("text=acme/fast")
        assert page.title() == "acme/fast · caraml-resnet50"
        assert page.locator("svg.chart").count() >= 1
        assert page.locator("text=None: compliant.").count() == 1
        page.goto((site / "pages" / "acme--dark--caraml-resnet50.html").as_uri())
        assert page.locator("li.error").count() >= 1
        browser.close()
    assert problems == []
