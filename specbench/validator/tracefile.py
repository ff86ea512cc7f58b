"""Reading power.csv fast and strictly: every cell checked, every bad row reported with its line.

The format is specbench.power.trace's (columns, marks, empty cell = not measured). A well-formed
file is read column-wise (one split, one conversion per column); anything unusual is read again
row by row with the csv module, so every problem gets its real line.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import compress
from typing import Any

from specbench.power.trace import COLUMNS, MARKS

WIDTH = len(COLUMNS)
FLOAT_COLUMNS = ("t_mono_s", "t_wall_s", "read_latency_s")
OPTIONAL_COLUMNS = ("power_instant_w", "power_average_w", "energy_counter_j")
POWER_COLUMNS = ("power_instant_w", "power_average_w")
SERIES_COLUMNS = tuple(name for name in COLUMNS if name not in ("device", "read_latency_s"))


class _Unusual(Exception):
    """The fast reader met something it leaves to the row-by-row reader."""


@dataclass
class Series:
    """One device's samples in file order; `rows` are indices into the file's data rows."""

    device: str
    sweep: list[int] = field(default_factory=list)
    t_mono_s: list[float] = field(default_factory=list)
    t_wall_s: list[float] = field(default_factory=list)
    power_instant_w: list[float | None] = field(default_factory=list)
    power_average_w: list[float | None] = field(default_factory=list)
    energy_counter_j: list[float | None] = field(default_factory=list)
    mark: list[str] = field(default_factory=list)
    rows: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.t_mono_s)

    @property
    def measured(self) -> bool:
        return any(
            v is not None
            for column in (self.power_instant_w, self.power_average_w, self.energy_counter_j)
            for v in column
        )


@dataclass
class CsvTrace:
    """The samples of power.csv by device, and how to turn a data-row index into a file line."""

    series: dict[str, Series]
    row_lines: list[int] | None
    problems: list[tuple[int | None, str]]

    def line(self, row: int) -> int:
        return self.row_lines[row] if self.row_lines is not None else row + 2


Columns = dict[str, list[Any]]


def read_csv(text: str, known_devices: Sequence[str]) -> CsvTrace:
    """Parse power.csv text; problems are (line, message) pairs and bad rows are left out."""
    header, _, body = text.partition("\n")
    if header.removesuffix("\r").split(",") != list(COLUMNS):
        return CsvTrace({}, None, [(1, f"expected the header {','.join(COLUMNS)}, found {header[:120]!r}")])
    known = set(known_devices)
    try:
        columns = _fast_columns(body, known)
        return CsvTrace(_group(columns, None), None, [])
    except _Unusual:
        columns, lines, problems = _slow_columns(text, known)
        return CsvTrace(_group(columns, lines), lines, problems)


def _fast_columns(body: str, known: set[str]) -> Columns:
    if '"' in body or "\r" in body:
        raise _Unusual
    if body.endswith("\n"):
        body = body[:-1]
    if not body:
        return {name: [] for name in COLUMNS}
    flat = body.replace("\n", ",").split(",")
    if len(flat) % WIDTH:
        raise _Unusual
    raw = {name: flat[i::WIDTH] for i, name in enumerate(COLUMNS)}
    if not set(raw["device"]) <= known or not set(raw["mark"]) <= set(MARKS):
        raise _Unusual
    try:
        columns: Columns = {"sweep": list(map(int, raw["sweep"])), "device": raw["device"], "mark": raw["mark"]}
        for name in FLOAT_COLUMNS:
            columns[name] = values = list(map(float, raw[name]))
            if not _all_finite(values):
                raise _Unusual
        for name in OPTIONAL_COLUMNS:
            cells = raw[name]
            if "" in cells:
                columns[name] = [float(c) if c else None for c in cells]
                present = [v for v in columns[name] if v is not None]
            else:
                columns[name] = present = list(map(float, cells))
            if not _all_finite(present) or (name in POWER_COLUMNS and present and min(present) < 0):
                raise _Unusual
    except ValueError:
        raise _Unusual from None
    return columns


def _all_finite(values: list[float]) -> bool:
    """Whether every value is finite: a finite sum proves it in one pass (inf and NaN never sum to a finite value)."""
    return math.isfinite(sum(values)) or all(map(math.isfinite, values))


def _slow_columns(text: str, known: set[str]) -> tuple[Columns, list[int], list[tuple[int | None, str]]]:
    columns: Columns = {name: [] for name in COLUMNS}
    lines: list[int] = []
    problems: list[tuple[int | None, str]] = []
    reader = csv.reader(io.StringIO(text, newline=""))
    next(reader, None)
    try:
        for row in reader:
            line = reader.line_num
            if not row:
                problems.append((line, "expected a sample row, found an empty line"))
                continue
            values, problem = _convert_row(row, known)
            if problem is not None:
                problems.append((line, problem))
                continue
            for name, value in zip(COLUMNS, values, strict=True):
                columns[name].append(value)
            lines.append(line)
    except csv.Error as err:
        problems.append((reader.line_num, f"expected CSV, found {err}"))
    return columns, lines, problems


def _convert_row(row: list[str], known: set[str]) -> tuple[list[Any], str | None]:
    if len(row) != WIDTH:
        return [], f"expected {WIDTH} cells ({','.join(COLUMNS)}), found {len(row)}"
    out: list[Any] = []
    for name, cell in zip(COLUMNS, row, strict=True):
        value, problem = _cell(name, cell, known)
        if problem is not None:
            return [], f"{name}: {problem}"
        out.append(value)
    return out, None


def _cell(name: str, cell: str, known: set[str]) -> tuple[Any, str | None]:
    if name == "device":
        return (cell, None) if cell in known else (None, f"expected a device power.json lists, found {cell!r}")
    if name == "mark":
        return (cell, None) if cell in MARKS else (None, f"expected one of {MARKS}, found {cell!r}")
    if name == "sweep":
        return _number(cell, int)
    if name in OPTIONAL_COLUMNS and cell == "":
        return None, None
    value, problem = _number(cell, float)
    if problem is None and name in POWER_COLUMNS and value < 0:
        return None, f"expected power >= 0 W, found {cell}"
    return value, problem


def _number(cell: str, kind: Callable[[str], Any]) -> tuple[Any, str | None]:
    try:
        value = kind(cell)
    except ValueError:
        return None, f"expected a number, found {cell[:40]!r}"
    if isinstance(value, float) and not math.isfinite(value):
        return None, f"expected a finite number, found {cell!r}"
    return value, None


def _group(columns: Columns, lines: list[int] | None) -> dict[str, Series]:
    devices = columns["device"]
    order = list(dict.fromkeys(devices))
    n, total = len(order), len(devices)
    out: dict[str, Series] = {}
    periodic = n > 0 and devices[:n] == order and devices[n:] == devices[:-n]
    for k, device in enumerate(order):
        if periodic:
            taken = {name: columns[name][k::n] for name in SERIES_COLUMNS}
            rows = list(range(k, total, n))
        else:
            mask = list(map(device.__eq__, devices))
            taken = {name: list(compress(columns[name], mask)) for name in SERIES_COLUMNS}
            rows = list(compress(range(total), mask))
        out[device] = Series(device, rows=rows, **taken)
    return out
