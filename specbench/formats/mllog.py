"""A pure-Python reader of MLPerf's MLLOG format that keeps each event's real line in the file.

A line holds an event when it contains ':::MLLOG ' followed by one JSON object (text before the
marker, such as an MPI rank prefix, is ignored, as MLPerf's parser does by taking the last
marker of the line). Other lines are allowed and skipped. MLPerf's checker reports an index
among MLLOG lines; this reader reports the line of the file.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

from specbench.formats.strictjson import parse_json_records, parse_json_text

TOKEN = ":::MLLOG "
EVENT_TYPES = ("INTERVAL_START", "INTERVAL_END", "POINT_IN_TIME")
FIELDS = ("namespace", "time_ms", "event_type", "key", "value", "metadata")
_FIELD_SET = frozenset(FIELDS)
T = TypeVar("T")

MLLOG_LINES = 100_000
"""The most ':::MLLOG ' markers a log may hold (the logs of MLPerf rounds hold under 2,000); a log with more is
not parsed (`ParsedLog.unread` says why), so a log's events, and the memory they take, stay bounded."""
PROBLEMS_KEPT = 1_000
"""The unreadable MLLOG lines a ParsedLog keeps; the rest are counted (`problems_left_out`). Findings keep fewer."""
PIECE_CHARS = 1024 * 1024
"""A log is parsed a piece of about this many characters (whole lines) at a time, each piece's lines dropped
before the next: memory is the text, its events and one piece."""


@dataclass(frozen=True)
class LogEvent:
    """One MLLOG event; `line` is its 1-based line in the file, `time_ms` the wall clock in ms."""

    line: int
    namespace: str
    time_ms: float
    event_type: str
    key: str
    value: Any
    metadata: dict[str, Any]

    @property
    def time_s(self) -> float:
        return self.time_ms / 1000.0


@dataclass(frozen=True)
class LogProblem:
    line: int
    column: int | None
    message: str


@dataclass
class ParsedLog:
    """Every event of one log in file order, and the lines that could not be read."""

    events: list[LogEvent] = field(default_factory=list)
    problems: list[LogProblem] = field(default_factory=list)
    lines: int = 0
    problems_left_out: int = 0
    """Unreadable lines after the first PROBLEMS_KEPT, counted and not kept."""
    unread: str | None = None
    """Why the log was not parsed (more MLLOG lines than its bound); None when it was."""

    def add_problem(self, problem: LogProblem) -> None:
        if len(self.problems) < PROBLEMS_KEPT:
            self.problems.append(problem)
        else:
            self.problems_left_out += 1

    @cached_property
    def by_key(self) -> dict[str, list[LogEvent]]:
        out: dict[str, list[LogEvent]] = {}
        for event in self.events:
            out.setdefault(event.key, []).append(event)
        return out

    def all(self, key: str) -> list[LogEvent]:
        return self.by_key.get(key, [])

    def first(self, key: str) -> LogEvent | None:
        found = self.by_key.get(key)
        return found[0] if found else None

    def __iter__(self) -> Iterator[LogEvent]:
        return iter(self.events)

    def derived(self, compute: Callable[[ParsedLog], T]) -> T:
        """`compute(self)`, computed once per log and function (as by_key: a log read is not changed after)."""
        memo: dict[Callable[[ParsedLog], Any], Any] = self.__dict__.setdefault("_derived", {})
        if compute not in memo:
            memo[compute] = compute(self)
        return memo[compute]  # type: ignore[no-any-return]


RECENT_CHARS = 96 * 1024 * 1024
"""The recently parsed logs kept, by the characters of their text: `specbench import mlperf` converts a
system's logs (and the next system's, while the first is written) before it validates them, and a whole
system's logs fit in this bound, so each log is parsed once; a larger tree only parses some twice."""
_recent: OrderedDict[str, ParsedLog] = OrderedDict()


def parse_log(text: str, max_mllog_lines: int = MLLOG_LINES) -> ParsedLog:
    """Parse a whole log; never raises on bad content.

    A log with more than `max_mllog_lines` markers ':::MLLOG ' is not parsed: its ParsedLog holds no
    event and says why in `unread`. The JSON of a piece's MLLOG lines is decoded in one pass of the strict
    decoder; where that fails, each line is decoded on its own, so every problem gets its line and column.
    The logs parsed last are kept, up to RECENT_CHARS of text (ParsedLog is never changed once built): the
    same text again gives the same ParsedLog, with what was derived from it (`derived`).
    """
    markers = text.count(TOKEN)
    if markers > max_mllog_lines:
        unread = f"expected at most {max_mllog_lines} MLLOG lines, found {markers}; the log is not read"
        return ParsedLog(lines=text.count("\n") + (not text.endswith("\n")) if text else 0, unread=unread)
    found = _recent.get(text)
    if found is not None:
        _recent.move_to_end(text)
        return found
    log = _parse(text)
    if len(text) <= RECENT_CHARS:
        _recent[text] = log
        held = sum(map(len, _recent))
        while held > RECENT_CHARS:
            oldest, _ = _recent.popitem(last=False)
            held -= len(oldest)
    return log


def _parse(text: str) -> ParsedLog:
    """parse_log without the cache of recent logs (`parse_log.__wrapped__`, as functools names such a function)."""
    log = ParsedLog()
    for piece in _pieces(text):
        lines = piece.split("\n")
        marked = []
        for number, line in enumerate(lines, start=log.lines + 1):
            at = line.rfind(TOKEN)  # the same as in the line without its "\r" (the token holds none)
            if at >= 0:
                marked.append((number, line.removesuffix("\r"), at + len(TOKEN)))
        log.lines += len(lines)
        del lines
        _add_marked(log, marked)
    return log


def _pieces(text: str) -> Iterator[str]:
    """The text in pieces of whole lines, about PIECE_CHARS each; their lines are the lines of the text (a last
    newline ends the last line and opens none)."""
    if not text:
        return
    stop = len(text) - 1 if text.endswith("\n") else len(text)
    start = 0
    while True:
        end = text.find("\n", start + PIECE_CHARS, stop)
        if end < 0:
            yield text[start:stop]
            return
        yield text[start:end]
        start = end + 1


def _add_marked(log: ParsedLog, marked: list[tuple[int, str, int]]) -> None:
    """The events and problems of one piece's MLLOG lines (number, line, where its JSON starts), onto the log."""
    values = decode_together([line[start:] for _, line, start in marked])
    events = log.events
    if values is not None:
        for (number, _, start), data in zip(marked, values, strict=True):
            if _well_formed(data):
                data["line"] = number  # the decoded object, with its line, becomes the event's fields
                event = _new(LogEvent)
                _set(event, "__dict__", data)
                events.append(event)
            else:
                made = _event(data, number, start)
                if isinstance(made, LogEvent):
                    events.append(made)
                else:
                    log.add_problem(made)
        return
    for number, line, _ in marked:
        outcome = parse_line(line, number)
        if isinstance(outcome, LogEvent):
            events.append(outcome)
        elif outcome is not None:
            log.add_problem(outcome)


parse_log.__wrapped__ = _parse  # type: ignore[attr-defined]


def _well_formed(data: Any) -> bool:
    """An object with exactly the six fields, each of the type an event needs (what _check_fields accepts)."""
    if type(data) is not dict or data.keys() != _FIELD_SET:
        return False
    time_ms = data["time_ms"]
    return (
        type(time_ms) in (int, float)
        and time_ms >= 0
        and data["event_type"] in EVENT_TYPES
        and type(data["key"]) is str
        and data["key"] != ""
        and type(data["namespace"]) is str
        and type(data["metadata"]) is dict
    )


def decode_together(bodies: list[str]) -> list[Any] | None:
    """The JSON values of all bodies, decoded as one array; None when that fails or the count differs."""
    if not bodies:
        return []
    try:
        values = parse_json_records("[" + ",".join(bodies) + "]", ("value", "metadata"))
    except (ValueError, RecursionError):
        return None
    return values if isinstance(values, list) and len(values) == len(bodies) else None


def parse_line(line: str, number: int) -> LogEvent | LogProblem | None:
    """One line: an event, a problem, or None for a line without the MLLOG marker."""
    at = line.rfind(TOKEN)
    if at < 0:
        return None
    start = at + len(TOKEN)
    body = line[start:]
    try:
        data = parse_json_text(body)
    except json.JSONDecodeError as err:
        return LogProblem(number, start + err.pos + 1, f"expected one JSON object after ':::MLLOG ', found {err.msg}")
    except (ValueError, RecursionError) as err:
        return LogProblem(number, start + 1, f"expected one JSON object after ':::MLLOG ', found {err}")
    return _event(data, number, start)


def _event(data: Any, number: int, start: int) -> LogEvent | LogProblem:
    """The event of one line's decoded JSON, or the problem with it."""
    if not isinstance(data, dict):
        return LogProblem(number, start + 1, f"expected a JSON object, found {type(data).__name__}")
    problem = _check_fields(data)
    if problem:
        return LogProblem(number, start + 1, problem)
    event = _new(LogEvent)  # LogEvent(...) field by field, without the frozen __init__'s setattr per field
    event.__dict__.update(
        line=number,
        namespace=data["namespace"],
        time_ms=data["time_ms"],
        event_type=data["event_type"],
        key=data["key"],
        value=data["value"],
        metadata=data["metadata"],
    )
    return event


_new = object.__new__
_set = object.__setattr__


def _check_fields(data: dict[str, Any]) -> str | None:
    if data.keys() == _FIELD_SET:
        time_ms, metadata = data["time_ms"], data["metadata"]
        if (
            type(time_ms) in (int, float)
            and time_ms >= 0
            and data["event_type"] in EVENT_TYPES
            and type(data["key"]) is str
            and data["key"]
            and type(data["namespace"]) is str
            and type(metadata) is dict
        ):
            return None
    missing = [name for name in FIELDS if name not in data]
    if missing:
        return f"expected fields {', '.join(FIELDS)}; missing {', '.join(missing)}"
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        return f"expected only the fields {', '.join(FIELDS)}; found also {', '.join(unknown)}"
    time_ms = data["time_ms"]
    if isinstance(time_ms, bool) or not isinstance(time_ms, (int, float)) or time_ms < 0:
        return f"expected time_ms to be a non-negative number of milliseconds, found {time_ms!r}"
    if data["event_type"] not in EVENT_TYPES:
        return f"expected event_type to be one of {', '.join(EVENT_TYPES)}, found {data['event_type']!r}"
    if not isinstance(data["key"], str) or not data["key"]:
        return f"expected key to be a non-empty string, found {data['key']!r}"
    if not isinstance(data["namespace"], str):
        return f"expected namespace to be a string, found {data['namespace']!r}"
    if not isinstance(data["metadata"], dict):
        return f"expected metadata to be an object, found {type(data['metadata']).__name__}"
    return None
