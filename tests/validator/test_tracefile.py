"""The fast power.csv reader accepts exactly what the row-by-row reader accepts, with the same numbers and lines.

read_csv reads a well-formed file column-wise, a piece at a time, and leaves anything unusual to the
row-by-row reader; so whatever the text, its answer must equal the row-by-row reader's alone.
"""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specbench.power import csvread as tracefile
from specbench.power.csvread import CsvTrace, read_csv
from specbench.power.trace import COLUMNS, MARKS
from specbench.validator.powerwindow import _first_decrease, _first_not_increasing, marked_window

HEADER = ",".join(COLUMNS)
KNOWN = ["nvml:0", "nvml:1", "rapl:package-0"]
NUMBERS = ("t_mono_s", "t_wall_s", "power_instant_w", "power_average_w", "energy_counter_j")
BAD_CELLS = ("", "x", "nan", "inf", "-inf", "1e999", "-1.5", "nvml:9", "bogus", " 7 ", "1_0", "0x10", "\x00")
"""Cells that some column refuses (or, like ' 7 ' and '1_0', that float() and int() accept)."""


def _row_by_row(text: str, known: list[str]) -> CsvTrace:
    columns, lines, problems = tracefile._slow_columns(text, set(known))
    return CsvTrace(tracefile._group(columns, lines), lines, problems)


def _assert_same(text: str, known: list[str] = KNOWN) -> CsvTrace:
    fast, slow = read_csv(text, known), _row_by_row(text, known)
    assert fast.problems == slow.problems
    assert list(fast.series) == list(slow.series)
    for key, series in fast.series.items():
        other = slow.series[key]
        for name in ("sweep", *NUMBERS, "mark"):
            assert repr(getattr(series, name)) == repr(getattr(other, name)), (key, name)
        assert [fast.line(r) for r in series.rows] == [slow.line(r) for r in other.rows]
    return fast


finite = st.floats(allow_nan=False, allow_infinity=False, width=64).map(repr)
power = st.one_of(st.just(""), st.floats(min_value=0.0, max_value=2000.0).map(repr))
row = st.tuples(
    st.integers(0, 10**6).map(str),
    finite,
    finite,
    st.sampled_from(KNOWN),
    power,
    power,
    st.one_of(st.just(""), finite),
    finite,
    st.sampled_from(MARKS),
).map(list)


@st.composite
def csv_text(draw: st.DrawFn) -> str:
    """A valid trace (devices in turn, or in any order), then a few cells or rows spoilt."""
    rows = draw(st.lists(row, max_size=40))
    if rows and draw(st.booleans()):
        for i, r in enumerate(rows):
            r[3] = KNOWN[i % 2]
            r[5] = r[4]
    for _ in range(draw(st.integers(0, 2))):
        if not rows:
            break
        i = draw(st.integers(0, len(rows) - 1))
        how = draw(st.sampled_from(["cell", "drop", "extra", "blank", "quote", "cr"])) if rows[i] else "blank"
        j = draw(st.integers(0, max(len(rows[i]) - 1, 0)))
        if how == "cell":
            rows[i][j] = draw(st.sampled_from(BAD_CELLS))
        elif how == "drop":
            del rows[i][j]
        elif how == "extra":
            rows[i].insert(j, draw(st.sampled_from(BAD_CELLS)))
        elif how == "blank":
            rows.insert(i, [])
        elif how == "quote":
            rows[i][j] = f'"{rows[i][j]}"'
        else:
            rows[i][j] += "\r"
    ending = draw(st.sampled_from(["", "\n", "\n\n"]))
    return "\n".join([HEADER, *(",".join(r) for r in rows)]) + ending


@settings(max_examples=300, deadline=None)
@given(text=csv_text(), piece=st.integers(1, 400))
def test_fast_reader_equals_row_by_row_reader(text: str, piece: int) -> None:
    with mock.patch.object(tracefile, "PIECE_CHARS", piece):
        _assert_same(text)


def test_large_trace_in_many_pieces_equals_row_by_row_reader() -> None:
    rows = [
        f"{s},{100 + s / 10!r},{1.8e9 + s / 10!r},{key},{200 + k + s / 7!r},{200 + k + s / 7!r},{1e6 + s * 25.5!r},0.0002,"
        for s in range(2000)
        for k, key in enumerate(KNOWN)
    ]
    rows[100] = rows[100].removesuffix(",") + ",start"
    trace = _assert_same("\n".join([HEADER, *rows]) + "\n")
    assert trace.problems == [] and trace.row_lines is None
    assert [len(s) for s in trace.series.values()] == [2000] * len(KNOWN)


@pytest.mark.parametrize(
    "ending", ["", "\n", "\n\n", "\r\n", "\n\n\n", "\n0,1,1,nvml:0,1,1,1,1,", "\n0,1,1,nvml:0,,,,1,\n\n"]
)
def test_a_header_with_few_or_no_rows(ending: str) -> None:
    _assert_same(HEADER + ending)


@pytest.mark.parametrize(
    ("rows", "problem_lines"),
    [
        pytest.param(["0", "1-mark", "", "3"], [3, 4], id="a row short of a cell, then an empty line"),
        pytest.param(["0", "1+cell", "2-mark", "3"], [3, 4], id="a row with a cell too many, then one short"),
        pytest.param(["0", "1", "2", "3", ""], [6], id="an empty line at the end"),
    ],
)
def test_rows_of_the_wrong_width_are_reported_even_when_the_cell_count_adds_up(
    rows: list[str], problem_lines: list[int]
) -> None:
    """Earlier the fast reader counted all cells at once, so a short row and an empty line passed as one row."""

    def line(spec: str) -> str:
        if not spec:
            return ""
        s = int(spec[0])
        cells = [str(s), f"{s}.5", f"{s}.25", "nvml:0", "100.0", "100.0", f"{s}.0", "0.001", ""]
        if spec.endswith("-mark"):
            cells.pop()
        if spec.endswith("+cell"):
            cells.append("")
        return ",".join(cells)

    text = "\n".join([HEADER, *map(line, rows)]) + "\n"
    trace = _assert_same(text)
    assert [n for n, _ in trace.problems] == problem_lines


@given(st.lists(st.floats(allow_nan=False, allow_infinity=False)))
def test_first_decrease(values: list[float]) -> None:
    expected = next((i for i in range(1, len(values)) if values[i] < values[i - 1]), None)
    assert _first_decrease(values) == expected


@given(st.lists(st.integers(-5, 5)))
def test_first_not_increasing(values: list[int]) -> None:
    expected = next((i for i in range(1, len(values)) if values[i] <= values[i - 1]), None)
    assert _first_not_increasing(values) == expected


@given(st.lists(st.sampled_from(MARKS)))
def test_marked_window(marks: list[str]) -> None:
    once = marks.count("start") == 1 and marks.count("stop") == 1
    expected = (marks.index("start"), marks.index("stop")) if once else None
    assert marked_window(marks) == (expected if expected and expected[0] < expected[1] else None)
