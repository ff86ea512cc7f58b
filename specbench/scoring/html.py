"""The static HTML leaderboard: one plot and one sortable table per group, and one page per submission benchmark.

Everything from a submission is escaped (Jinja2 autoescape; the charts escape their own text); every
page says when it was made and by which specbench version.
"""

from __future__ import annotations

import re
import traceback
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from specbench.errors import SpecbenchError
from specbench.scoring import pages
from specbench.scoring.columns import group_scales, heading
from specbench.scoring.leaderboard import Entry, Group, Leaderboard
from specbench.scoring.plots import index_plot
from specbench.scoring.render import index_table, stamp


def _environment() -> Any:
    try:
        from jinja2 import Environment, PackageLoader, select_autoescape
    except ImportError as err:
        raise SpecbenchError("the HTML leaderboard needs jinja2: pip install jinja2") from err
    env = Environment(
        loader=PackageLoader("specbench.scoring", "templates"), autoescape=select_autoescape(["html", "j2"])
    )
    env.filters["breakable"] = breakable
    return env


_BREAK_AFTER = re.compile(r"([/_-])")


def breakable(text: str) -> Any:
    """`text` escaped, with a line-break opportunity (<wbr>) after each '/', '_' and '-': a system name such as
    HPE-Cray-XD670-Gen11-H100-SXM5-80GB_n2_mxnet_24.04 wraps in its column instead of widening the table."""
    from markupsafe import Markup, escape

    return Markup("").join(
        Markup(f"{escape(piece)}<wbr>") if _BREAK_AFTER.fullmatch(piece) else escape(piece)
        for piece in _BREAK_AFTER.split(text)
    )


def _markup(text: str) -> Any:
    from markupsafe import Markup

    return Markup(text)


LONG_FRAGMENT = 32
"""A status fragment longer than this many characters may wrap at its spaces (an MLPerf import's reason for
missing power, say), so that the status column and the table fit a 1280 px window."""


def fragments(line: str) -> list[str]:
    """A status line in the pieces that must not break: it wraps only before a list of meters, or after one."""
    head, paren, meters = line.partition(" (")
    parts = (paren.strip() + meters).split("; ") if paren else []
    return [head] + [part + ";" for part in parts[:-1]] + parts[-1:]


def _index_table(group: Group) -> dict[str, Any]:
    table = index_table(group)
    plot, left_off = index_plot(group, group_scales(group))
    rows = []
    for entry, cells in zip(table.entries, table.rows, strict=True):
        detail = "; ".join([*entry.unranked, *entry.notes, *entry.power_reasons])
        status = [fragments(line) for line in entry.status_lines()]
        row = {"slug": entry.slug, "cells": cells, "status": status, "detail": detail}
        rows.append({**row, "ranked": entry.rank is not None})
    return {
        "title": heading(group.key),
        "id": group.key.slug(),
        "headers": table.headers,
        "rows": rows,
        "link": 2,
        "plot": _markup(plot),
        "left_off": [f"{e.submitter}/{e.system}" for e in left_off],
    }


def _findings_page(env: Any, entry: Entry, group: Group, made: str, status: list[str], reasons: list[str]) -> str:
    """An entry's page from its status and findings only: nothing of its files' data is read or drawn."""
    return str(
        env.get_template("submission.html.j2").render(
            entry=entry,
            title=heading(group.key),
            status=status,
            reasons=reasons,
            refused=True,
            folder=entry.folder or entry.path,
            stamp=made,
        )
    )


def _page(env: Any, entry: Entry, group: Group, made: str) -> str:
    """An entry's page; a non-compliant entry's from its status and findings only, never from its files' data."""
    if not entry.compliant:
        return _findings_page(env, entry, group, made, entry.status_lines(), [*entry.unranked, *entry.notes])
    scales = group_scales(group)
    runs = pages.run_views(entry, group, scales)
    charts = [(run, _markup(run.power_chart), _markup(run.quality_chart)) for run in runs]
    return str(
        env.get_template("submission.html.j2").render(
            entry=entry,
            title=heading(group.key),
            status=entry.status_lines(),
            reasons=[*entry.unranked, *entry.notes],
            layers=pages.layers(entry),
            aggregate=entry.aggregate,
            used=pages.run_names(entry.aggregate.used),
            dropped=pages.run_names(entry.aggregate.dropped) if entry.aggregate.dropped else "",
            aggregate_rows=pages.aggregate_rows(entry, group, scales),
            run_headers=pages.run_headers(group, scales, any(run.reason for run in runs)),
            runs=charts,
            folder=entry.folder or entry.path,
            stamp=made,
        )
    )


@dataclass(frozen=True)
class NotRendered:
    """A part of the board that failed to render (a bug of specbench's): what it is and the error, with its trace."""

    what: str
    reason: str
    trace: str


@dataclass(frozen=True)
class Site:
    index: Path
    not_rendered: tuple[NotRendered, ...]


def _failure(what: str, err: Exception) -> NotRendered:
    return NotRendered(what, f"{type(err).__name__}: {err}", traceback.format_exc())


def write_site(board: Leaderboard, out_dir: str | Path, now: datetime | None = None) -> Site:
    """Write index.html and one page per entry under `out_dir`.

    A group or entry that fails to render is marked "not rendered: REASON" and the rest of the board is
    written; the failures come back with the index path, for the command to report as the bugs they are.
    """
    env = _environment()
    out = Path(out_dir)
    (out / "pages").mkdir(parents=True, exist_ok=True)
    made = stamp(now)
    failures: list[NotRendered] = []
    tables = []
    for group in board.groups:
        try:
            tables.append(_index_table(group))
        except Exception as err:  # one group's bug never takes down the board
            failures.append(_failure(heading(group.key), err))
            tables.append(_empty_table(group, failures[-1]))
    index = out / "index.html"
    html = env.get_template("index.html.j2").render(
        tables=tables, unusable=board.unusable, stamp=made, long_fragment=LONG_FRAGMENT
    )
    index.write_text(html, encoding="utf-8", errors="backslashreplace")
    for group in board.groups:
        for entry in group.entries:
            try:
                page = _page(env, entry, group, made)
            except Exception as err:  # one entry's bug never takes down the board
                failures.append(_failure(f"{entry.submitter}/{entry.system}/{entry.benchmark}", err))
                page = _findings_page(env, entry, group, made, [f"not rendered: {failures[-1].reason}"], [])
            (out / "pages" / f"{entry.slug}.html").write_text(page, encoding="utf-8", errors="backslashreplace")
    return Site(index, tuple(failures))


def _empty_table(group: Group, failure: NotRendered) -> dict[str, Any]:
    return {
        "title": heading(group.key),
        "id": group.key.slug(),
        "headers": [],
        "rows": [],
        "link": 0,
        "plot": "",
        "left_off": [],
        "not_rendered": failure.reason,
    }
