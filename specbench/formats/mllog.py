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


def parse_log(text: str) -> ParsedLog:
    """Parse a whole log; never raises on bad content.

    The JSON of all MLLOG lines is decoded in one pass of the strict decoder; where that fails,
    each line is decoded on its own, so every problem gets its line and column. The logs parsed
    last are kept, up to RECENT_CHARS of text (ParsedLog is never changed once built): the same text
    again gives the same ParsedLog, with what was derived from it (`derived`).
    """
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
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    log.lines = len(lines)
    marked = []
    for number, line in enumerate(lines, start=1):
        at = line.rfind(TOKEN)  # the same as in the line without its "\r" (the token holds none)
        if at >= 0:
            marked.append((number, line.removesuffix("\r"), at + len(TOKEN)))
    values = decode_together([line[start:] for _, line, start in marked])
    events, problems = log.events, log.problems
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
                    problems.append(made)
        return log
    for number, line, _ in marked:
        outcome = parse_line(line, number)
        if isinstance(outcome, LogEvent):
            events.append(outcome)
        elif outcome is not None:
            problems.append(outcome)
    return log


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
