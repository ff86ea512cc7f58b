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
  of a file over the bound, also of one that grew after its size was taken;
- MLLOG events decoded without the duplicate-key hook (parse_json_records) give what parse_json_text
  gives, value or error, also where a key repeats at any depth or strings hold ':' and '{';
- the positions of a JSON file's values (json_positions) are those the YAML parser gives, in every
  layout json.dumps writes, and a file read as JSON is located so;
- a node power log's power_reading lines taken by the regular expression give the events, readings
  and problems that the JSON decoder gives, on every corpus power log and on broken or odd lines.
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
from specbench.formats.mllog import PROBLEMS_KEPT, LogEvent, ParsedLog, _event, parse_line, parse_log
from specbench.formats.mlperf_import import SourceFile
from specbench.formats.strictjson import parse_json_records, parse_json_text
from specbench.mlperf import power
from specbench.mlperf.report import plain_table
from specbench.mlperf.staging import Staging
from specbench.spec.yamlio import MAX_DEPTH, json_positions, parse_yaml
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
    """The same events and lines; the same first PROBLEMS_KEPT problems, and the rest counted (`problems_left_out`)."""
    kept = b.problems[:PROBLEMS_KEPT]
    left_out = len(b.problems) - len(kept)
    return (a.events, a.problems, a.problems_left_out, a.lines) == (b.events, kept, left_out, b.lines)


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


SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["1e999", "-1e999", "NaN", "0.5e-3", "12345678901234567890"]).map(lambda t: _Raw(t))
    | st.text(alphabet=st.sampled_from(["a", ":", "{", "}", '"', "\\", "\u00e9", "\n", "k"]), max_size=6)
)
"""Scalars of MLLOG values, strings full of the characters counted, and number texts each path must refuse alike."""


class _Raw(str):
    """A JSON text written as it is (a number out of range, a constant JSON does not allow)."""


def _render(value: Any) -> str:
    """JSON text of a value in which an object is a list of (key, value) pairs: keys may repeat."""
    if isinstance(value, _Raw):
        return str(value)
    if isinstance(value, _Pairs):
        return "{" + ", ".join(f"{json.dumps(k)}: {_render(v)}" for k, v in value) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(map(_render, value)) + "]"
    return json.dumps(value)


class _Pairs(list):  # type: ignore[type-arg]
    pass


KEYS = st.sampled_from(["namespace", "time_ms", "key", "value", "metadata", "file", "a:b", "{"])
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.lists(st.tuples(KEYS, inner), max_size=4).map(_Pairs),
    max_leaves=12,
)
RECORDS = st.lists(st.lists(st.tuples(KEYS, VALUES), max_size=7).map(_Pairs) | VALUES, max_size=6)


def _outcome(parse: Any, text: str) -> tuple[str, Any]:
    try:
        return "value", parse(text)
    except (ValueError, RecursionError) as err:
        return type(err).__name__, str(err)


@settings(max_examples=600, deadline=None)
@given(RECORDS, st.sampled_from(["", " ", "\n", " x"]))
def test_records_decode_as_the_strict_reader(records: list[Any], after: str) -> None:
    text = _render(records) + after
    fast = _outcome(lambda t: parse_json_records(t, ("value", "metadata")), text)
    assert fast == _outcome(parse_json_text, text)
    assert fast == _outcome(lambda t: parse_json_records(t, ("metadata", "metadata")), text)


@pytest.mark.parametrize(
    "text",
    [
        '[{"key": 1, "key": 2}]',
        '[{"key": 1, "metadata": {"file": "a", "file": "b"}}]',
        '[{"key": 1, "value": {"a": {"b": 1, "b": 2}}}]',
        '[{"key": 1, "value": [{"b": 1, "b": 2}]}]',
        '[{"key": "x:y", "key": 2}]',  # the repeated key's ':' made up by one in a string: still found
        '[{"key": "{", "value": {"a": 1, "a": 2}}]',
    ],
)
def test_a_repeated_key_is_refused_at_any_depth(text: str) -> None:
    with pytest.raises(ValueError, match="duplicate key"):
        parse_json_records(text, ("value", "metadata"))


def test_corpus_events_take_the_path_without_the_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    from specbench.formats import strictjson

    calls: list[int] = []
    real = strictjson.parse_json_text

    def counted(text: str) -> Any:
        calls.append(len(text))
        return real(text)

    monkeypatch.setattr(strictjson, "parse_json_text", counted)
    logs = sorted(corpus().parent.rglob("result_*.txt"))[:40]
    assert logs
    for path in logs:
        parse_log.__wrapped__(path.read_text(errors="replace"))  # type: ignore[attr-defined]
    assert calls == []


LAYOUTS = [
    {"indent": 2},
    {"indent": None},
    {"indent": None, "separators": (",", ":")},
    {"indent": 4, "ensure_ascii": False},
    {"indent": 1, "separators": (",", ": ")},
]


@settings(max_examples=400, deadline=None)
@given(
    st.dictionaries(st.text(max_size=8), JSON, max_size=6),
    st.sampled_from(LAYOUTS),
    st.sampled_from(["", "\n", "\n\n"]),
    st.booleans(),
)
def test_json_positions_are_the_yaml_parsers(
    data: dict[str, Any], layout: dict[str, Any], end: str, crlf: bool
) -> None:
    text = json.dumps(data, **layout) + end
    text = text.replace("\n", "\r\n") if crlf else text
    found = json_positions(text, "f.json")
    if layout.get("ensure_ascii", True):
        assert found is not None  # what the importer writes takes this path
    if found is not None:
        assert found == parse_yaml(text, "f.json").positions


@pytest.mark.parametrize(
    "text",
    [
        '{"a":\t1}',
        '{"a" : 1}',
        '{"a"\n: 1}',
        '{"' + "k" * 1100 + '": 1}',
        '{"a": "\u2028"}'.replace("\\u2028", "\u2028"),
        '{"a": 1,}',
        '{"a": 1} x',
        '{"a": 01}',
        "{a: 1}",
        "",
    ],
)
def test_what_yaml_may_read_otherwise_is_left_to_it(text: str) -> None:
    assert json_positions(text, "f.yaml") is None


def test_json_positions_stop_where_the_yaml_parser_refuses() -> None:
    from specbench.spec.yamlio import MAX_EXPANDED_NODES

    deep: Any = 1
    for _ in range(MAX_DEPTH):
        deep = {"a": deep}
    many = list(range(MAX_EXPANDED_NODES - 3))  # with the root, its key and the list: the most YAML reads
    for text, refused in [
        (json.dumps(deep), False),
        (json.dumps({"a": deep}), True),
        (json.dumps({"a": many}), False),
        (json.dumps({"a": [*many, 0]}), True),
        ("[1]", True),
    ]:
        found = json_positions(text, "f.json")
        if refused:
            assert found is None
            with pytest.raises(InputError):
                parse_yaml(text)
        else:
            assert found == parse_yaml(text, "f.json").positions


def test_a_file_read_as_json_is_located_as_the_yaml_parser_locates_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from specbench.validator import documents
    from specbench.validator.documents import Loaded

    text = json.dumps({"layers": {"hardware": {"accelerator_model": "X", "accelerator_count": 8}}}, indent=2)
    monkeypatch.setattr(documents, "parse_yaml", lambda *_: pytest.fail("the YAML parser was loaded"))
    path = ("layers", "hardware", "accelerator_count")
    located = Loaded(json.loads(text), "system.yaml", text, is_yaml=True).locate(*path)
    assert located == {"line": 5, "column": 28, "json_path": "layers.hardware.accelerator_count"}
    monkeypatch.undo()
    assert (parse_yaml(text).locate(path).line, parse_yaml(text).locate(path).column) == (5, 28)


READING = (
    ':::MLLOG {"namespace": "", "time_ms": 1728510043000, "event_type": "POINT_IN_TIME", "key": "power_reading", '
    '"value": 2849.0, "metadata": {"file": "/home/x/power_measurement.py", "lineno": 88, "host": "2"}}'
)
READING_V40 = (
    ':::MLLOG {"namespace": "", "time_ms": 1715267044171, "event_type": "POINT_IN_TIME", "key": "power_reading", '
    '"value": 2701, "metadata": ""}'
)
POWER_PIECES = st.sampled_from(
    [
        READING,
        READING_V40,
        READING.replace("2849.0", "0"),
        READING.replace("2849.0", "0.25"),
        READING.replace("2849.0", "-3.5"),
        READING.replace("2849.0", "1e3"),
        READING.replace("2849.0", "1" * 400 + ".0"),
        READING.replace("2849.0", "02849"),
        READING.replace("2849.0", "null"),
        READING.replace("2849.0", '"2849"'),
        READING.replace("1728510043000", "1728510043000.5"),
        READING.replace("1728510043000", "1" * 25),
        READING.replace('"host": "2"', '"host": "2", "host": "3"'),
        READING.replace('"host": "2"', '"file": "y"'),
        READING.replace('"host": "2"', '"host": "a:::MLLOG {}"'),
        READING.replace('"lineno": 88', '"lineno": -88'),
        READING.replace("/home/x", "C:\\\\x"),
        READING.replace("/home/x", "\\u00e9t\u00e9"),
        READING.replace('"namespace": ""', '"namespace": "", "namespace": ""'),
        READING.replace("POINT_IN_TIME", "INTERVAL_START"),
        READING.replace('"power_reading"', '"power_measurement_start"'),
        READING + " ",
        READING + "}",
        "host 3: " + READING,
        READING + " " + READING,
        READING.replace("}}", "}"),
        READING_V40.replace('""}', '"\u2028"}'),
        READING_V40.replace('""}', '"\x0c"}'),
        ':::MLLOG {"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": "conversion_eff", "value": 0.96}',
        ":::MLLOG [1]",
        ":::MLLOG ",
        "no marker here",
        "",
    ]
)


def _power_outcome(log: power.PowerLog) -> tuple[Any, ...]:
    events = [(e.line, e.time_ms, e.key, e.value, type(e.value)) for e in log.events]
    readings = [(r.line, r.time_ms, r.power_w, type(r.power_w)) for r in log.readings]
    return (events, readings, log.step_backs, log.starts, log.stops, log.conversion_eff, log.problems)


def _power_both_ways(text: str, monkeypatch: pytest.MonkeyPatch) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """parse_power_log of `text`, and the same with every line sent to the JSON decoder."""
    file = SourceFile(path="node_0.txt", sha256="0" * 64, bytes=len(text))
    fast = _power_outcome(power.parse_power_log(text, file))
    with monkeypatch.context() as patch:
        patch.setattr(power, "_cut_at_newlines", lambda text: False)
        decoded = _power_outcome(power.parse_power_log(text, file))
    return fast, decoded


def test_every_corpus_power_log_reads_as_the_decoder_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    logs = sorted(path for path in corpus().parent.rglob("node_*.txt") if path.parent.parent.name == "power")
    assert len(logs) > 100
    for path in logs:
        fast, decoded = _power_both_ways(path.read_bytes().decode("utf-8", errors="replace"), monkeypatch)
        assert fast == decoded, path


@settings(max_examples=400, deadline=None)
@given(st.lists(POWER_PIECES, max_size=10), st.sampled_from(["\n", "\r\n", "\r", "\x0c"]), st.booleans())
def test_power_lines_read_as_the_decoder_reads_them(lines: list[str], newline: str, last: bool) -> None:
    text = newline.join(lines) + (newline if last else "")
    with pytest.MonkeyPatch.context() as monkeypatch:
        fast, decoded = _power_both_ways(text, monkeypatch)
    assert fast == decoded
