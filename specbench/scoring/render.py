"""Leaderboard output: terminal table, Markdown, CSV and JSON (full precision). HTML lives in html.py.

The terminal table keeps to 120 columns: two-line headers, the spread in percent, no status column
(the reasons follow the table). Markdown and HTML show every column of a group's table.

What a submission wrote is quoted through `specbench.textsafe`: the terminal shows control characters
escaped, Markdown escapes its markup and HTML's, CSV neutralises a cell a spreadsheet would take for a
formula. The cells themselves hold the text as it is (HTML escapes it with Jinja's autoescape).
"""

from __future__ import annotations

import csv
import io
import json
import re
import textwrap
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from tabulate import tabulate

from specbench import __version__, textsafe
from specbench.scoring.columns import (
    SPREAD_LABELS,
    Quantity,
    group_scales,
    heading,
    index_quantities,
    spread_percent,
    spread_text,
)
from specbench.scoring.leaderboard import Entry, Group, Leaderboard
from specbench.scoring.units import Scale

TERMINAL_WIDTH = 120


@dataclass(frozen=True)
class Cell:
    text: str
    sort: str = ""
    """What the HTML table sorts by: the number in SI units, or the text."""
    lines: tuple[str, ...] = ()
    """The status, one brief line each (HTML shows each on its own line)."""
    numeric: bool = False


@dataclass(frozen=True)
class IndexTable:
    group: Group
    headers: list[str]
    rows: list[list[Cell]]
    entries: list[Entry]
    keys: list[str]
    """Each column's report key (rank, system, samples_per_s, ..., spread, status)."""


@dataclass(frozen=True)
class Column:
    """One column of a group's table: its header, its key, and the text it shows for an entry of the group."""

    header: str
    key: str
    table: IndexTable

    def text(self, entry: Entry) -> str:
        row = self.table.rows[self.table.entries.index(entry)]
        return row[self.table.keys.index(self.key)].text


def columns(group: Group) -> list[Column]:
    """The columns of the group's (Markdown and HTML) table."""
    table = index_table(group)
    return [Column(header, key, table) for header, key in zip(table.headers, table.keys, strict=True)]


def utc(now: datetime | None = None) -> datetime:
    return (now or datetime.now(timezone.utc)).astimezone(timezone.utc)


def stamp(now: datetime | None = None) -> str:
    """When and by which version a page was made: 'generated 2026-12-02 08:40 UTC by specbench 0.1.0'."""
    return f"generated {utc(now):%Y-%m-%d %H:%M} UTC by specbench {__version__}"


def csv_status(entry: Entry) -> str:
    """The status in full: why not ranked, or 'ranked' and the notes (CSV keeps the full reasons)."""
    return "; ".join(entry.unranked) if entry.unranked else "; ".join(["ranked", *entry.notes, *entry.power_reasons])


def _number(value: float | None) -> str:
    return "" if value is None else repr(float(value))


def _rank(value: int | None) -> Cell:
    return Cell("-" if value is None else str(value), "" if value is None else str(value), numeric=True)


def index_table(group: Group, terminal: bool = False) -> IndexTable:
    """The group's table: ranks, system, the kind's numbers in the group's units, the spread and the status.

    The terminal's is narrower: short two-line headers, '-' for what is missing, the spread in percent, and
    no status column (a rank '-' is not ranked; the reasons follow the table).
    """
    scales = group_scales(group)
    quantities = [q for q in index_quantities(group) if q.terminal or not terminal]
    benchmark = any(e.benchmark != group.key.spec_id for e in group.entries)
    metric = group.entries[0].aggregate.spread_metric if group.entries else "time_s"
    spread_scale = scales.get(metric, Scale(""))
    headers = ["rank", "rank\nper W" if terminal else "rank per W", "system" if terminal else "submitter/system"]
    headers += ["benchmark"] if benchmark else []
    headers += [q.header(scales[q.key], terminal) for q in quantities]
    label = SPREAD_LABELS.get(metric, metric)
    headers += ["spread\n±%"] if terminal else [f"{label} min / median / max ({spread_scale.unit})", "status"]
    keys = ["rank", "rank_per_w", "system", *(["benchmark"] if benchmark else []), *(q.key for q in quantities)]
    keys += ["spread"] if terminal else ["spread", "status"]
    rows = [_row(entry, quantities, scales, spread_scale, benchmark, terminal) for entry in group.entries]
    return IndexTable(group, headers, rows, group.entries, keys)


def _row(
    entry: Entry, quantities: list[Quantity], scales: dict[str, Scale], spread: Scale, benchmark: bool, terminal: bool
) -> list[Cell]:
    row = [_rank(entry.rank), _rank(entry.rank_per_w), Cell(f"{entry.submitter}/{entry.system}")]
    row += [Cell(entry.benchmark)] if benchmark else []
    for q in quantities:
        value = q.of(entry.aggregate.values)
        row.append(Cell(scales[q.key].text(value, "-" if terminal else q.missing()), _number(value), numeric=True))
    middle = _number(entry.aggregate.spread[1] if entry.aggregate.spread else None)
    row.append(Cell(spread_percent(entry) if terminal else spread_text(entry, spread), middle, (), True))
    if not terminal:
        lines = tuple(entry.status_lines())
        row.append(Cell(lines[0], "; ".join(lines), lines))
    return row


def _notes(table: IndexTable) -> list[str]:
    """What the terminal table leaves out: why an entry is not ranked, its power not measured, what its re-runs say
    (a contradiction is among the reasons it is not ranked)."""
    notes = []
    for entry in table.entries:
        reasons = [] if entry.rank is not None else list(entry.unranked)
        reasons += [] if entry.power_measured else entry.power_brief
        settled = entry.reproduction
        reasons += [settled.line()] if settled is not None and settled.status != "contradicted" else []
        if reasons:
            text = textsafe.visible(f"{entry.submitter}/{entry.system}: " + "; ".join(reasons))
            notes.append(textwrap.fill(text, TERMINAL_WIDTH, subsequent_indent="    "))
    return notes


BREAK_AFTER = re.compile(r"[^/\- ]*(?:[/\-]+| +|$)")
"""A piece of a cell that a line may end after: up to a `/`, a `-` or spaces (a word is never split)."""


def _pieces(cell: str) -> list[str]:
    return [piece for piece in BREAK_AFTER.findall(cell) if piece]


def wrap(cell: str, width: int) -> list[str]:
    """`cell` in lines of at most `width`, broken after a `/`, a `-` or at spaces; a piece longer than `width`
    stays whole on its own line."""
    lines: list[str] = []
    line = ""
    for piece in _pieces(cell):
        if line and len((line + piece).rstrip()) > width:
            lines.append(line.rstrip())
            line = piece.lstrip()
        else:
            line += piece
    if line.strip():
        lines.append(line.rstrip())
    return lines


def layout(headers: list[str], rows: list[list[str]], right: list[bool], width: int = TERMINAL_WIDTH) -> str:
    """tabulate's `simple` layout without its two spaces of header padding; the widest text column wraps
    (after a `/`, a `-` or at spaces, never inside a word) where the table would pass `width`."""
    head = [h.split("\n") for h in headers]
    depth = max(len(h) for h in head)
    head = [[""] * (depth - len(h)) + h for h in head]
    widths = [max([len(x) for x in h] + [len(r[i]) for r in rows]) for i, h in enumerate(head)]
    over = sum(widths) + 2 * (len(widths) - 1) - width
    text_columns = [i for i, r in enumerate(right) if not r]
    if over > 0 and text_columns:
        widest = max(text_columns, key=lambda i: widths[i])
        words = [len(p.rstrip()) for r in rows for p in _pieces(r[widest])]
        widths[widest] = max(widths[widest] - over, *(len(x) for x in head[widest]), *words, 12)
    out = [_line([h[k] for h in head], widths, right) for k in range(depth)]
    out.append("  ".join("-" * w for w in widths))
    for row in rows:
        wrapped = [wrap(c, w) or [""] for c, w in zip(row, widths, strict=True)]
        for k in range(max(len(c) for c in wrapped)):
            out.append(_line([c[k] if k < len(c) else "" for c in wrapped], widths, right))
    return "\n".join(out)


def _line(cells: list[str], widths: list[int], right: list[bool]) -> str:
    return "  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right, strict=True)).rstrip()


def _terminal(table: IndexTable) -> str:
    right = [c.numeric for c in table.rows[0]] if table.rows else [False] * len(table.headers)
    text = layout(table.headers, [[textsafe.visible(c.text) for c in row] for row in table.rows], right)
    notes = _notes(table)
    return text + ("\n\n" + "\n".join(notes) if notes else "")


def _markdown(table: IndexTable) -> str:
    """The group's table in GitHub's Markdown; every text cell and header escaped (numbers are specbench's own)."""
    rows = [
        [c.text if c.numeric else textsafe.markdown("; ".join(c.lines) or c.text) for c in row] for row in table.rows
    ]
    headers = [textsafe.markdown(h) for h in table.headers]
    return tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)


def _unusable_line(unusable: dict[str, Any], markdown_out: bool) -> str:
    """One refused submission: its folder and its first three findings, escaped for the output."""
    quote = textsafe.markdown if markdown_out else textsafe.visible
    said = "; ".join(f"{f['code']} {quote(f['message'])}" for f in unusable["findings"][:3])
    line = f"- {quote(str(unusable.get('folder') or unusable['path']))}: {said}"
    return line if markdown_out else textwrap.fill(line, TERMINAL_WIDTH, subsequent_indent="    ")


def render_table(board: Leaderboard, fmt: str = "simple", now: datetime | None = None) -> str:
    """One table per group (tabulate's `simple` for terminals, `github` for Markdown, with its stamp)."""
    markdown = fmt == "github"
    parts = []
    for group in board.groups:
        table = index_table(group, terminal=not markdown)
        title = (textsafe.markdown if markdown else textsafe.visible)(heading(group.key))
        body = _markdown(table) if markdown else _terminal(table)
        parts.append((f"## {title}" if markdown else textwrap.fill(title, TERMINAL_WIDTH)) + "\n\n" + body)
    if board.unusable:
        lines = [_unusable_line(u, markdown) for u in board.unusable]
        parts.append(("## Unusable submissions" if markdown else "Unusable submissions") + "\n\n" + "\n".join(lines))
    if not parts:
        return "no submissions found\n"
    if markdown:
        parts.append(f"_{stamp(now)}_")
    return "\n\n".join(parts) + "\n"


CSV_FIELDS = [
    "group", "spec_id", "spec_version", "level", "profile", "power_scope", "submitter", "system", "benchmark",
    "rank", "rank_per_w", "compliant", "status",
    "time_s", "achieved", "flops_per_s", "valid_flops_per_s", "valid_flops_per_w", "energy_j", "mean_power_w",
    "samples_per_s", "tflops_per_device", "mfu", "energy_per_sample_j", "spread_min", "spread_median", "spread_max",
    "folder",
]  # fmt: skip


CSV_TEXT_FIELDS = frozenset(
    ["group", "spec_id", "spec_version", "level", "profile", "power_scope", "submitter", "system", "benchmark", "status", "folder"]
)  # fmt: skip
"""The columns that hold text (from the submission, or quoting it): each goes through `textsafe.csv_cell`. The
others hold what specbench computed (numbers, ranks, booleans), written as they are, a negative number too."""


def render_csv(board: Leaderboard) -> str:
    """One row per entry, values in SI units at full precision (units in the column names).

    Rows end in CRLF (RFC 4180), so a cell holding a carriage return is quoted and still parses."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_FIELDS, lineterminator="\r\n")
    writer.writeheader()
    for group in board.groups:
        for entry in group.entries:
            spread = entry.aggregate.spread or (None, None, None)
            row = {
                "group": group.key.title(),
                "spec_id": group.key.spec_id,
                "spec_version": group.key.spec_version,
                "level": group.key.level,
                "profile": group.key.profile,
                "power_scope": group.key.scope,
                "submitter": entry.submitter,
                "system": entry.system,
                "benchmark": entry.benchmark,
                "rank": entry.rank,
                "rank_per_w": entry.rank_per_w,
                "compliant": entry.compliant,
                "status": csv_status(entry),
                "spread_min": spread[0],
                "spread_median": spread[1],
                "spread_max": spread[2],
                "folder": entry.folder,
            }
            for name in CSV_FIELDS:
                if name not in row:
                    value = entry.value(name)
                    row[name] = repr(value) if isinstance(value, float) else value
            writer.writerow({k: _csv_value(k, v) for k, v in row.items()})
    return out.getvalue()


def _csv_value(name: str, value: Any) -> Any:
    return textsafe.csv_cell(value) if name in CSV_TEXT_FIELDS and isinstance(value, str) else value


def render_json(board: Leaderboard, now: datetime | None = None) -> str:
    data = board.to_dict()
    data["generated_at"] = utc(now).isoformat(timespec="seconds")
    data["specbench_version"] = __version__
    return json.dumps(data, indent=2, allow_nan=False) + "\n"
