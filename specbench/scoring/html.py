"""The static HTML leaderboard: one sortable table per group, and one page per submission benchmark.

Everything from a submission is escaped (Jinja2 autoescape); charts are inline SVG made here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from specbench.errors import SpecbenchError
from specbench.scoring.leaderboard import Entry, Leaderboard
from specbench.scoring.render import _status, columns
from specbench.scoring.svg import line_chart


def _environment() -> Any:
    try:
        from jinja2 import Environment, PackageLoader, select_autoescape
    except ImportError as err:
        raise SpecbenchError("the HTML leaderboard needs jinja2: pip install jinja2") from err
    return Environment(
        loader=PackageLoader("specbench.scoring", "templates"), autoescape=select_autoescape(["html", "j2"])
    )


def _sort_value(value: object) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return repr(float(value))
    return str(value) if value is not None else ""


def _power_chart(entry: Entry, run: Any) -> str:
    from markupsafe import Markup

    from specbench.power import read_trace
    from specbench.power.base import PowerError

    folder = Path(entry.path) / entry.benchmark / run.name
    if not (folder / "power.json").is_file():
        return Markup('<p class="empty">power: not measured (no trace)</p>')
    try:
        trace = read_trace(folder)
    except (PowerError, OSError, ValueError) as err:
        return Markup(f'<p class="empty">power trace unreadable: {Markup.escape(str(err))}</p>')
    if not trace.samples:
        return Markup('<p class="empty">power trace is empty</p>')
    t0 = min(s.t_wall_s for s in trace.samples)
    series: dict[str, list[tuple[float, float]]] = {}
    for sample in trace.samples:
        value = sample.power_instant_w if sample.power_instant_w is not None else sample.power_average_w
        if value is not None:
            series.setdefault(sample.device, []).append((sample.t_wall_s - t0, value))
    markers = {}
    if run.run_start_ms is not None:
        markers["run_start"] = run.run_start_ms / 1000.0 - t0
    if run.run_stop_ms is not None:
        markers["run_stop"] = run.run_stop_ms / 1000.0 - t0
    return Markup(
        line_chart(series, x_label="time (s)", y_label="power (W)", title=f"{run.name}: power", markers=markers)
    )


def _quality_chart(entry: Entry, run: Any) -> str:
    from markupsafe import Markup

    spec = entry.bench.spec.spec if entry.bench and entry.bench.spec else None
    if not run.evaluations or spec is None or spec.quality is None:
        return Markup("")
    points = [(e.epoch, e.value) for e in run.evaluations]
    target = (f"target {spec.quality.target:g}", spec.quality.target)
    return Markup(
        line_chart(
            {spec.quality.metric: points},
            x_label="epoch",
            y_label=spec.quality.metric,
            title=f"{run.name}: quality",
            hline=target,
        )
    )


def _layers(entry: Entry) -> list[tuple[str, str, str]]:
    rows: list[tuple[str, str, str]] = []
    report, bench = entry.report, entry.bench
    if report and report.system:
        for layer, params in report.system.layers.items():
            rows.extend((layer, name, str(value)) for name, value in params.items())
    if bench and bench.meta:
        for layer, params in bench.meta.layers.items():
            rows.extend((layer, name, str(value)) for name, value in params.items())
        rows.extend(("workload", name, str(value)) for name, value in bench.meta.hyperparameters.items())
        rows.extend(("problem", name, str(value)) for name, value in bench.meta.dataset.items())
    return rows


def write_site(board: Leaderboard, out_dir: str | Path) -> Path:
    """Write index.html and one page per entry under `out_dir`; return the index path."""
    env = _environment()
    out = Path(out_dir)
    (out / "pages").mkdir(parents=True, exist_ok=True)
    tables = []
    for group in board.groups:
        cols = columns(group)
        rows = [
            {
                "slug": e.slug,
                "cells": [(c.text(e), _sort_value(c.get(e)) if c.key != "status" else _status(e)) for c in cols],
                "ranked": e.rank is not None,
            }
            for e in group.entries
        ]
        tables.append(
            {"title": group.key.title(), "id": group.key.slug(), "headers": [c.header for c in cols], "rows": rows}
        )
    index = out / "index.html"
    index.write_text(env.get_template("index.html.j2").render(tables=tables, unusable=board.unusable), encoding="utf-8")
    page = env.get_template("submission.html.j2")
    for group in board.groups:
        for entry in group.entries:
            runs = []
            for score, run in zip(entry.runs, entry.bench.runs if entry.bench else [], strict=False):
                runs.append({"score": score, "power": _power_chart(entry, run), "quality": _quality_chart(entry, run)})
            html = page.render(
                entry=entry,
                title=group.key.title(),
                status=_status(entry),
                layers=_layers(entry),
                runs=runs,
                aggregate=entry.aggregate,
                target=entry.target,
                path=os.path.relpath(entry.path, out / "pages") if os.path.isabs(entry.path) else entry.path,
            )
            (out / "pages" / f"{entry.slug}.html").write_text(html, encoding="utf-8")
    return index
