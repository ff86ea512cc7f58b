"""The shortcuts that make an import fast give exactly what the plain ways give.

- parse_log decodes all MLLOG lines of a log in one pass, falling back to line by line: the same
  events and problems as line by line, on every corpus log and on logs with broken lines;
- a YAML file that is one JSON object is read with the JSON decoder: the same data as the YAML
  parser gives, and the YAML parser still for anything else;
- the importer's manifest, built from what it wrote, equals the one write_manifest computes;
- an event built by the log reader equals and prints as the LogEvent built field by field;
- the import report's table is the one tabulate prints;
- the characters that send a JSON-looking YAML file to the YAML parser are those of the class of
  characters kept, left out;
- a log's derived values are computed once;
- a source file is read to its size, not to its bound first: the same bytes, and the same refusal
  of a file over the bound, also of one that grew after its size was taken.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mlperf_support import corpus

from specbench.errors import InputError
from specbench.files import write_manifest
from specbench.formats.mllog import LogEvent, ParsedLog, _event, parse_line, parse_log
from specbench.mlperf.report import plain_table
from specbench.mlperf.staging import Staging
from specbench.spec.yamlio import MAX_DEPTH, parse_yaml
from specbench.validator.documents import _NOT_PLAIN, _json_document
from specbench.validator.evidence import log_epochs


def line_by_line(text: str) -> ParsedLog:
    log = ParsedLog()
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    log.lines = len(lines)
    for number, line in enumerate(lines, start=1):
        outcome = parse_line(line.removesuffix("\r"), number)
        if isinstance(outcome, LogEvent):
            log.events.append(outcome)
        elif outcome is not None:
            log.problems.append(outcome)
    return log


def same(a: ParsedLog, b: ParsedLog) -> bool:
    return (a.events, a.problems, a.lines) == (b.events, b.problems, b.lines)


def test_every_corpus_log_parses_as_line_by_line() -> None:
    logs = sorted(corpus().parent.rglob("*.txt"))
    assert len(logs) > 200
    for path in logs:
        text = path.read_text(errors="replace")
        assert same(parse_log.__wrapped__(text), line_by_line(text)), path


GOOD = ':::MLLOG {"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": "k", "value": 1, "metadata": {}}'
PIECES = st.sampled_from(
    [
        GOOD,
        GOOD.replace('"value": 1', '"value": 1, "value": 2'),
        GOOD + " trailing",
        GOOD + ", {}",
        ":::MLLOG ",
        ":::MLLOG ]",
        ":::MLLOG [1, 2",
        ":::MLLOG 3",
        ':::MLLOG {"a": NaN}',
        ":::MLLOG {}, {}",
        "rank 0: " + GOOD,
        "no marker here",
        GOOD.replace("1,", "1e999,", 1),
        GOOD + "\r",
        "",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(PIECES, max_size=12))
def test_broken_lines_are_found_as_line_by_line(lines: list[str]) -> None:
    text = "\n".join(lines) + "\n"
    assert same(parse_log.__wrapped__(text), line_by_line(text))


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)  # beyond int64 both paths refuse (SB-NUM-001)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=8), JSON, max_size=6))
def test_a_json_yaml_file_reads_as_the_yaml_parser_reads_it(data: dict[str, Any]) -> None:
    text = json.dumps(data, indent=2)  # as the importer writes them: every character outside ASCII escaped
    fast = _json_document(text)
    assert fast is not None and fast == parse_yaml(text).data
    raw = json.dumps(data, ensure_ascii=False)
    fast = _json_document(raw)
    assert fast is None or fast == parse_yaml(raw).data  # None: characters only the YAML parser may judge


def test_anything_else_is_left_to_the_yaml_parser() -> None:
    assert _json_document("a: 1\n") is None
    assert _json_document('{"a": 1, "a": 2}') is None  # duplicate keys: the YAML parser says where
    assert _json_document('{"a": NaN}') is None
    assert _json_document("[1, 2]") is None
    assert _json_document('{"a": "\x7f"}') is None and _json_document('{"a": "\u2028"}') is None
    deep: Any = 1
    for _ in range(MAX_DEPTH + 1):
        deep = {"a": deep}
    with pytest.raises(InputError):
        parse_yaml(json.dumps(deep))
    assert _json_document(json.dumps(deep)) is None
    assert _json_document(json.dumps(deep["a"])) == parse_yaml(json.dumps(deep["a"])).data


def test_the_staging_manifest_is_write_manifests(tmp_path: Path) -> None:
    staging = Staging(tmp_path / "sub")
    staging.text("system.yaml", "{}\n")
    staging.json("a/run_1/result.json", {"x": 1.5})
    staging.write("a/run_1/log.txt", b"\x00 bytes\n")
    staging.manifest()
    built = json.loads((tmp_path / "sub" / "manifest.json").read_text())
    assert json.loads(write_manifest(tmp_path / "sub").read_text()) == built


def test_an_event_read_is_the_event_built_field_by_field() -> None:
    data = {"namespace": "", "time_ms": 5, "event_type": "INTERVAL_END", "key": "k", "value": [1], "metadata": {"a": 1}}
    read = _event(dict(data), 7, 9)
    built = LogEvent(7, "", 5, "INTERVAL_END", "k", [1], {"a": 1})
    assert type(read) is LogEvent
    assert read == built and repr(read) == repr(built) and vars(read) == vars(built)
    with pytest.raises(AttributeError):
        read.key = "other"  # type: ignore[misc]


CELLS = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x3000), max_size=12)


@settings(max_examples=300, deadline=None)
@given(
    st.integers(min_value=1, max_value=6).flatmap(
        lambda n: st.tuples(
            st.lists(CELLS, min_size=n, max_size=n),
            st.lists(st.lists(CELLS, min_size=n, max_size=n), max_size=5),
        )
    )
)
def test_the_report_table_is_tabulates(table: tuple[list[str], list[list[str]]]) -> None:
    from tabulate import tabulate

    headers, rows = table
    assert plain_table(rows, headers) == tabulate(rows, headers=headers, tablefmt="plain", disable_numparse=True)


@settings(max_examples=300, deadline=None)
@given(
    st.integers(min_value=1, max_value=9).flatmap(
        lambda n: st.tuples(
            st.lists(
                st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=14).map(
                    str.strip
                ),
                min_size=n,
                max_size=n,
            ),
            st.lists(
                st.lists(
                    st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=14).map(str.strip),
                    min_size=n,
                    max_size=n,
                ),
                max_size=6,
            ),
        )
    )
)
def test_the_report_table_of_ascii_cells_is_tabulates(table: tuple[list[str], list[list[str]]]) -> None:
    from tabulate import tabulate

    headers, rows = table
    assert plain_table(rows, headers) == tabulate(rows, headers=headers, tablefmt="plain", disable_numparse=True)


def test_the_characters_not_plain_are_those_the_yaml_path_needs() -> None:
    kept = re.compile("[^\t\n\r\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
    text = "".join(map(chr, range(0x110000)))
    assert [m.start() for m in _NOT_PLAIN.finditer(text)] == [m.start() for m in kept.finditer(text)]


def test_a_derived_value_is_computed_once_per_log() -> None:
    calls: list[ParsedLog] = []

    def count(log: ParsedLog) -> int:
        calls.append(log)
        return len(log.events)

    log = parse_log.__wrapped__(GOOD.replace('"k"', '"eval_accuracy"').replace("{}}", '{"epoch_num": 3}}') + "\n")
    assert log.derived(count) == log.derived(count) == 1 and len(calls) == 1
    assert log_epochs(log) == log_epochs(log) == 3.0
    assert log == parse_log.__wrapped__(
        GOOD.replace('"k"', '"eval_accuracy"').replace("{}}", '{"epoch_num": 3}}') + "\n"
    )


@pytest.mark.parametrize("size", [0, 1, 99, 100, 101, 5000])
def test_a_source_file_is_read_whole_up_to_its_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    from specbench.mlperf import source

    monkeypatch.setattr(source, "MAX_BYTES", {".txt": 100})
    path = tmp_path / "result_1.txt"
    path.write_bytes(bytes(range(256)) * (size // 256) + bytes(range(size % 256)))
    if size <= 100:
        assert source.read_bytes(path) == path.read_bytes()
    else:
        with pytest.raises(source.SourceError, match="larger than 100 bytes"):
            source.read_bytes(path)


def test_a_source_file_that_grew_is_read_on_to_its_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from specbench.mlperf import source

    monkeypatch.setattr(source, "MAX_BYTES", {".txt": 100})
    path = tmp_path / "result_1.txt"
    path.write_bytes(b"x" * 10)
    real_fstat = os.fstat

    def fstat_then_grow(fd: int) -> os.stat_result:
        info = real_fstat(fd)
        with path.open("ab") as grow:
            grow.write(b"y" * grown)
        return info

    monkeypatch.setattr(source.os, "fstat", fstat_then_grow)
    grown = 50
    assert source.read_bytes(path) == b"x" * 10 + b"y" * 50
    path.write_bytes(b"x" * 10)
    grown = 200
    with pytest.raises(source.SourceError, match="larger than 100 bytes"):
        source.read_bytes(path)
