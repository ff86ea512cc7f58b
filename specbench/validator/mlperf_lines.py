"""A log as MLPerf's own parser sees it, for a verdict equal to its checker's on any text.

specbench's reader (specbench.formats.mllog) is stricter than MLPerf's parser: it refuses NaN,
duplicate JSON keys, integers beyond 64 bits, negative or textual times, lines without namespace or
event_type, and metadata that is no object, all of which MLPerf's checker reads. `mlperf_view(text)`
reads the text as mlperf_logging's parser (rulesets 1.0.0 and later) does instead: lines split at
\\n, \\r or \\r\\n; the JSON after the last ':::MLLOG ' of a line, trailing whitespace stripped, read by Python's
json; then float(time_ms), key, value and metadata taken in this order. A line whose JSON or time
cannot be read is a problem (MLPerf fails the log and goes on); a line that makes its parser raise
(a field missing, a time of null) stops MLPerf's checker before any rule, and is the view's `stop`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from specbench.formats.mllog import TOKEN, LogEvent, LogProblem, ParsedLog

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
IGNORED_KEY = ""
"""The key given to a line whose key is no text: MLPerf's checker passes over such a line, as over this key."""


@dataclass(frozen=True)
class MlperfView:
    log: ParsedLog
    stop: LogProblem | None = None


def mlperf_view(text: str) -> MlperfView:
    """The lines MLPerf's parser reads, the lines it reports, and the first line that makes it raise."""
    log = ParsedLog()
    lines = _LINE_BREAK.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    log.lines = len(lines)
    for number, line in enumerate(lines, start=1):
        at = line.rfind(TOKEN)
        if at < 0:
            continue
        body = line[at + len(TOKEN) :].rstrip()  # MLPerf strips the line, which starts with the token
        try:
            data = json.loads(body)
            time_ms = float(data["time_ms"])
        except ValueError as err:  # a JSONDecodeError, or a time that is text but no number
            log.problems.append(LogProblem(number, None, f"MLPerf's parser cannot read it: {err}"))
            continue
        except (TypeError, KeyError, OverflowError, RecursionError) as err:
            return MlperfView(log, LogProblem(number, None, f"MLPerf's parser raises {type(err).__name__}: {err}"))
        try:
            key, value, metadata = data["key"], data["value"], data["metadata"]
        except KeyError as err:
            return MlperfView(log, LogProblem(number, None, f"MLPerf's parser raises KeyError: {err}"))
        log.events.append(
            LogEvent(
                line=number,
                namespace=str(data.get("namespace", "")),
                time_ms=time_ms,
                event_type=str(data.get("event_type", "")),
                key=key if isinstance(key, str) else IGNORED_KEY,
                value=value,
                metadata=metadata,
            )
        )
    return MlperfView(log)
