"""The one reader of power.csv: fast and strict, every cell checked, every bad row reported with its line.

The validator reads a submission's trace with it (through its confined tree), and `read_trace` a trace this
machine wrote (a replay). The format is specbench.power.trace's, which writes it (columns, marks, empty cell
= not measured). A well-formed
file is read column-wise (a split and one conversion per column, a piece of the file at a time);
anything unusual is read again row by row with the csv module, so every problem gets its real line.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import compress
from operator import itemgetter
from pathlib import Path
from typing import Any, cast

from specbench.power.base import Device, PowerError
from specbench.power.metadata import CSV_NAME, FORMAT, FORMAT_VERSION, JSON_NAME, PowerJson, check_metadata
from specbench.power.trace import COLUMNS, MARKS, Sample

WIDTH = len(COLUMNS)
OPTIONAL_COLUMNS = ("power_instant_w", "power_average_w", "energy_counter_j")
POWER_COLUMNS = ("power_instant_w", "power_average_w")
SERIES_COLUMNS = tuple(name for name in COLUMNS if name not in ("device", "read_latency_s"))
CSV_ROWS = 2_000_000
"""The most lines power.csv may hold after its header (8 devices sampled at 10 Hz for almost 7 hours); the
validator refuses a longer trace before it decodes it, so the samples it holds stay bounded."""


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
    rows: Sequence[int] = field(default_factory=list)
    """Indices of the device's rows: a range where they are evenly spaced, as in a sweep of every device."""

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

PIECE_CHARS = 32_768
"""The fast reader splits the body in pieces of about this many characters (whole rows), so that a
piece's cells are still in the CPU cache while they are checked and converted."""


RECENT_CHARS = 64 * 1024 * 1024
"""The recently read traces kept, by the characters of their text: `specbench import mlperf` reads each power.csv
it writes (for the energy it records) just before the validator reads the file back, so the same text is read once."""
_recent: OrderedDict[tuple[str, tuple[str, ...]], CsvTrace] = OrderedDict()


def read_csv(text: str, known_devices: Sequence[str]) -> CsvTrace:
    """Parse power.csv text; problems are (line, message) pairs and bad rows are left out.

    The same text with the same devices again gives the same CsvTrace (never changed once read), from the
    traces read last, up to RECENT_CHARS of text.
    """
    key = (text, tuple(known_devices))
    found = _recent.get(key)
    if found is not None:
        _recent.move_to_end(key)
        return found
    trace = _read(text, known_devices)
    if len(text) <= RECENT_CHARS:
        _recent[key] = trace
        held = sum(len(held_text) for held_text, _ in _recent)
        while held > RECENT_CHARS:
            (oldest, _), _ = _recent.popitem(last=False)
            held -= len(oldest)
    return trace


def _read(text: str, known_devices: Sequence[str]) -> CsvTrace:
    header = text.partition("\n")[0]
    if header.removesuffix("\r").split(",") != list(COLUMNS):
        return CsvTrace({}, None, [(1, f"expected the header {','.join(COLUMNS)}, found {header[:120]!r}")])
    known = set(known_devices)
    try:
        return CsvTrace(_group(_fast_columns(text, len(header) + 1, known), None), None, [])
    except _Unusual:
        columns, lines, problems = _slow_columns(text, known)
        return CsvTrace(_group(columns, lines), lines, problems)


def _fast_columns(text: str, start: int, known: set[str]) -> Columns:
    """The columns of the rows from text[start:] (not copied), piece by piece; what the row-by-row reader would refuse is _Unusual."""
    stop = len(text) - 1 if text.endswith("\n") else len(text)
    if text.find('"', start) >= 0 or text.find("\r", start) >= 0:
        raise _Unusual
    if text.startswith("\n", start) or text.endswith("\n", start, stop):
        raise _Unusual
    columns: Columns = {name: [] for name in COLUMNS if name != "read_latency_s"}
    canonical = {"device": {key: key for key in known}, "mark": {mark: mark for mark in MARKS}}
    while start < stop:
        end = text.find("\n", start + PIECE_CHARS, stop)
        end = stop if end < 0 else end
        _add_piece(columns, _piece_cells(text[start:end]), canonical)
        start = end + 1
    return columns


def _piece_cells(piece: str) -> dict[str, list[str]]:
    """Each column's cells of whole rows; a row of another width than WIDTH is _Unusual.

    Each newline becomes a cell of its own, so row r's cells are flat[r * span : r * span + WIDTH]:
    that every newline cell sits at such a row's end proves that every row has WIDTH cells.
    """
    spread = piece.replace("\n", ",\n,")
    newlines = (len(spread) - len(piece)) // 2
    flat, span = spread.split(","), WIDTH + 1
    if len(flat) != span * (newlines + 1) - 1 or flat[WIDTH::span] != ["\n"] * newlines:
        raise _Unusual
    return {name: flat[j::span] for j, name in enumerate(COLUMNS)}


def _add_piece(columns: Columns, cells: dict[str, list[str]], canonical: dict[str, dict[str, str]]) -> None:
    """Check and convert one piece's cells onto the columns.

    The clocks repeat for one meter's devices, so each distinct text is converted once (sweep numbers
    convert faster than they look up); the average power column, where it holds the very text of the
    instant one, takes its numbers; read_latency_s is checked, not kept.
    """
    for name, allowed in canonical.items():
        columns[name] += _look_up(allowed, cells[name])
    _floats(list(set(cells["read_latency_s"])))
    columns["sweep"] += _ints(cells["sweep"])
    columns["t_mono_s"] += _repeated(cells["t_mono_s"], _floats)
    columns["t_wall_s"] += _repeated(cells["t_wall_s"], _floats)
    instant, average = cells["power_instant_w"], cells["power_average_w"]
    power = _optional(instant, negative=False)
    columns["power_instant_w"] += power
    columns["power_average_w"] += power if average == instant else _optional(average, negative=False)
    columns["energy_counter_j"] += _optional(cells["energy_counter_j"])


def _repeated(cells: list[str], convert: Callable[[list[str]], list[Any]]) -> list[Any]:
    """The numbers of cells whose texts repeat, each distinct text converted once."""
    distinct = dict.fromkeys(cells)
    if len(distinct) == len(cells):
        return convert(cells)
    return _look_up(dict(zip(distinct, convert(list(distinct)), strict=True)), cells)


def _look_up(table: dict[str, Any], keys: list[str]) -> list[Any]:
    """table[key] for each key, in one call of itemgetter (twice as fast as a map); a missing key is _Unusual."""
    try:
        found = itemgetter(*keys)(table) if len(keys) > 1 else [table[key] for key in keys]
    except KeyError:
        raise _Unusual from None
    return list(found)


def _ints(cells: list[str]) -> list[int]:
    try:
        return list(map(int, cells))
    except ValueError:
        raise _Unusual from None


def _floats(cells: list[str]) -> list[float]:
    return cast("list[float]", _optional(cells, empty=False))


def _optional(cells: list[str], *, empty: bool = True, negative: bool = True) -> list[float | None]:
    """Numbers of the cells ('' is None where `empty`), all finite (and >= 0 unless `negative`), else _Unusual."""
    try:
        if empty and "" in cells:
            numbers = [float(c) if c else None for c in cells]
            present = [v for v in numbers if v is not None]
        else:
            numbers = present = list(map(float, cells))  # type: ignore[assignment]
    except ValueError:
        raise _Unusual from None
    if not _all_finite(present) or (not negative and present and min(present) < 0):
        raise _Unusual
    return numbers


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
    """Each device's rows: every n-th row (a sweep of n devices per row group), a run of rows each (a trace
    written device by device, as an imported MLPerf one is), else the rows that name it."""
    devices = columns["device"]
    order = list(dict.fromkeys(devices))
    n, total = len(order), len(devices)
    out: dict[str, Series] = {}
    periodic = n > 0 and devices[:n] == order and devices[n:] == devices[:-n]
    blocks = None if periodic else _blocks(devices, order)
    for k, device in enumerate(order):
        rows: Sequence[int]
        if n == 1:  # one device: its columns are the file's, not copied
            taken = {name: columns[name] for name in SERIES_COLUMNS}
            rows = range(total)
        elif periodic:
            taken = {name: columns[name][k::n] for name in SERIES_COLUMNS}
            rows = range(k, total, n)
        elif blocks is not None:
            start, stop = blocks[k], blocks[k + 1]
            taken = {name: columns[name][start:stop] for name in SERIES_COLUMNS}
            rows = range(start, stop)
        else:
            mask = list(map(device.__eq__, devices))
            taken = {name: list(compress(columns[name], mask)) for name in SERIES_COLUMNS}
            rows = list(compress(range(total), mask))
        out[device] = Series(device, rows=rows, **taken)
    return out


def count_rows(raw: bytes) -> int:
    """The lines of power.csv's bytes after its header (the last one counted with or without its newline)."""
    return max(0, raw.count(b"\n") - 1 + (not raw.endswith(b"\n")))


def _blocks(devices: list[str], order: list[str]) -> list[int] | None:
    """Where each device's rows start (in `order`, the order they first appear) and where the last one's end, when
    every device's rows are one run; else None."""
    starts = [0]
    for device in order[1:]:
        starts.append(devices.index(device, starts[-1]))
    starts.append(len(devices))
    for k, device in enumerate(order):
        if devices[starts[k] : starts[k + 1]] != [device] * (starts[k + 1] - starts[k]):
            return None
    return starts


@dataclass(frozen=True)
class Trace:
    """A power trace this machine wrote (a run folder, a recording to replay), read back from disk."""

    metadata: dict[str, Any]
    devices: list[Device]
    samples: list[Sample]

    def samples_of(self, device_key: str) -> list[Sample]:
        return [s for s in self.samples if s.device == device_key]


def read_metadata(folder: Path) -> PowerJson:
    """power.json of a trace this machine wrote, parsed by its one model (power/metadata.py).

    A submission's power.json is read by the validator, through its confined tree, with the same model.
    """
    path = Path(folder) / JSON_NAME
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise PowerError(f"{path}: no power trace metadata here; expected {JSON_NAME} beside {CSV_NAME}") from None
    try:
        metadata = json.loads(raw)
    except ValueError as err:
        raise PowerError(f"{path}: not valid JSON: {err}") from err
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT:
        found = metadata.get("format") if isinstance(metadata, dict) else type(metadata).__name__
        raise PowerError(f"{path}: format is {found!r}, expected {FORMAT!r}")
    version = metadata.get("format_version")
    if version != FORMAT_VERSION:
        raise PowerError(
            f"{path}: power trace format version {version!r} not supported (this specbench reads {FORMAT_VERSION})"
        )
    return check_metadata(metadata, str(path))


def read_trace(folder: str | Path) -> Trace:
    """power.json and power.csv of a folder this machine wrote, in file order, read by the validator's own parsers
    (one reader per format; the row-by-row one, which keeps every column), refusing unknown format versions and
    any problem the validator would find in the samples."""
    folder = Path(folder)
    model = read_metadata(folder)
    devices = [device for device, _ in model.devices()]
    path = folder / model.csv
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PowerError(f"{path}: missing; {JSON_NAME} names it as the sample file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise PowerError(f"{path}: unreadable: {err}") from err
    header = text.partition("\n")[0]
    if header.removesuffix("\r").split(",") != list(COLUMNS):
        raise PowerError(f"{path}: columns are {header.split(',')}, expected {list(COLUMNS)}")
    written = text[: text.rfind("\n") + 1]  # a trace read while it is sampled: a row being written is not one yet
    columns, _, problems = _slow_columns(written, {d.key for d in devices})
    if problems:
        line, problem = problems[0]
        raise PowerError(f"{path}:{line}: unreadable power sample: {problem}")
    samples = [Sample(*values) for values in zip(*(columns[name] for name in COLUMNS), strict=True)]
    return Trace(
        metadata=model.model_dump(mode="json", exclude_unset=True),
        devices=devices,
        samples=samples,
    )
