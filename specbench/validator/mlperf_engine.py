"""MLPerf's compliance checker run from typed rules: its verdict on a log, with every violation located.

`check_mlperf_log(log, rules)` applies the typed rules of one ruleset (specbench.formats.mlperf_rules)
with the semantics of mlperf-logging's `ComplianceChecker`, without evaluating any text:

- rule files are applied one after another from `common`, each over every line of the log in
  order; a file's includes (the division's and benchmark's files) are queued behind it;
- each file starts from its own state (its BEGIN's, else empty); a check that reads state never
  set, or a value Python cannot compare, fails as MLPerf's `eval` does inside its bare `except`;
- on a key whose name holds "submission_", CHECK and POST run on its first line only;
- POST runs after CHECK, includes first; a statement that raises ends the POST and is a failure;
- ATLEAST_ONE_CHECK must hold on one line at least; one that raises stops MLPerf's checker (the
  log fails), as do a missing rule file and a BEGIN aggregation that raises;
- REQ is counted at the end of each file; EXACTLY_ONE with repeats of one value is a warning
  (a failure with `werror`); a file that names a key again drops the earlier files' failures of it;
- a log with lines that cannot be read, or with no MLLOG line, fails; so does one that reaches a rule file
  the ruleset lists as not ported (an item no typed kind expresses: specbench cannot give MLPerf's verdict).
Keys no file names are ignored. MLPerf reports a line as its index among MLLOG lines; the
violations here carry the line of the file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from itertools import chain
from operator import attrgetter
from typing import Any, Literal

from specbench.errors import UsageError
from specbench.formats.mllog import LogEvent, ParsedLog
from specbench.formats.mlperf_rules import (
    Aggregate,
    Check,
    Include,
    KeyRecord,
    MlperfRuleSet,
    StateUpdate,
    load_mlperf_rules,
)
from specbench.validator.findings import Findings
from specbench.validator.mlperf_checks import EVAL_ERRORS, State, expected, found, holds, include_path, update
from specbench.validator.mlperf_lines import mlperf_view
from specbench.validator.values import show

ONCE_MARKER = "submission_"
"""MLPerf's checker runs CHECK and POST only on the first line of a key whose name holds this."""

Category = Literal[
    "check", "update", "count", "alternatives", "target", "parse", "no_lines", "missing_file", "stopped", "not_ported"
]
REQ_WORDS = {"exactly_one": "exactly one line", "at_least_one": "at least one line"}


@dataclass(frozen=True)
class MlperfViolation:
    """One thing MLPerf's checker reports: what kind, from which rule file, about which key and line."""

    category: Category
    rule_file: str
    key: str | None
    line: int | None
    message: str


@dataclass(frozen=True)
class MlperfVerdict:
    """The checker's verdict: `passed` exactly when MLPerf's checker passes the log."""

    passed: bool
    violations: tuple[MlperfViolation, ...]
    warnings: tuple[MlperfViolation, ...] = ()
    superseded: tuple[MlperfViolation, ...] = ()
    """Failures of a key that a later rule file names again (MLPerf drops them; they do not count)."""
    stopped: MlperfViolation | None = None
    """Where MLPerf's checker would stop with an exception (the log fails); also in `violations`."""
    rule_files: tuple[str, ...] = ()


class _Stop(Exception):
    def __init__(self, violation: MlperfViolation) -> None:
        super().__init__(violation.message)
        self.violation = violation


@dataclass
class _Run:
    log: ParsedLog
    rules: MlperfRuleSet
    werror: bool
    keyed: list[MlperfViolation] = field(default_factory=list)
    fixed: list[MlperfViolation] = field(default_factory=list)
    warnings: list[MlperfViolation] = field(default_factory=list)
    superseded: list[MlperfViolation] = field(default_factory=list)
    applied: list[str] = field(default_factory=list)
    queue: list[str] = field(default_factory=list)
    extra: list[LogEvent] = field(default_factory=list)

    def all(self) -> None:
        for problem in self.log.problems:
            message = f"line {problem.line} cannot be read: {problem.message} (MLPerf fails a log with such lines)"
            self.fixed.append(MlperfViolation("parse", "", None, problem.line, message))
        if not self.log.events:
            self.fixed.append(MlperfViolation("no_lines", "", None, None, "the log holds no MLLOG line"))
        self.queue.append(self.rules.file_path(self.rules.entry))
        while self.queue:
            self.apply(self.queue.pop(0))

    def apply(self, path: str) -> None:
        file_id = self.rules.file_id(path)
        why = self.rules.not_ported.get(file_id)
        if why is not None:
            message = f"rule file {path} has no typed port, so the log cannot be judged: {why}"
            self.fixed.append(MlperfViolation("not_ported", path, None, None, message))
            return
        rule_file = self.rules.files.get(file_id)
        if rule_file is None:
            raise _Stop(_missing(path, self.applied))
        self.applied.append(path)
        state: State = dict(rule_file.initial_state or {})
        if rule_file.aggregate is not None:
            self.extra += self.aggregate(rule_file.aggregate, path)
        records = {r.key: r for r in rule_file.records}
        self.supersede(records)
        values: dict[str, list[Any]] = {k: [] for k in records}
        once_done: set[str] = set()
        target_hits: dict[str, list[int]] = {}
        for event in self.lines(records):
            record = records[event.key]
            values[event.key].append(event.value)
            once = ONCE_MARKER in event.key
            if not (once and event.key in once_done):
                self.checks(path, record, event, state)
                self.post(path, record, event, state)
            if record.at_least_one_check is not None:
                target_hits.setdefault(event.key, [0])[0] += self.target(path, record.at_least_one_check, event, state)
            if once:
                once_done.add(event.key)
        for key, (hits,) in target_hits.items():
            if hits == 0:
                self.fixed.append(_target_missed(path, records[key], values[key]))
        self.counts(path, rule_file.records, values)

    def lines(self, records: dict[str, KeyRecord]) -> list[LogEvent]:
        """The lines of the keys of one file in the order of the log, then the virtual lines of aggregations."""
        by_key = self.log.by_key
        found_lists = [by_key[k] for k in records if k in by_key]
        if len(found_lists) == 1:
            events = list(found_lists[0])
        else:
            events = sorted(chain.from_iterable(found_lists), key=attrgetter("line"))
        return events + [e for e in self.extra if e.key in records]

    def supersede(self, records: dict[str, KeyRecord]) -> None:
        kept = [v for v in self.keyed if v.key not in records]
        self.superseded += [v for v in self.keyed if v.key in records]
        self.keyed = kept

    def checks(self, path: str, record: KeyRecord, event: LogEvent, state: State) -> None:
        for check in record.checks:
            try:
                if holds(check, event, state):
                    continue
                why = ""
            except EVAL_ERRORS as err:
                why = f"; Python cannot evaluate it ({type(err).__name__}: {err})"
            message = f"{event.key}: expected {expected(check)}, found {found(check, event, state)}{why}"
            self.keyed.append(MlperfViolation("check", path, event.key, event.line, message + _mlperf(check)))

    def post(self, path: str, record: KeyRecord, event: LogEvent, state: State) -> None:
        """MLPerf's POST: the includes, then the state updates; the first that raises ends it."""
        current: Include | StateUpdate | None = None
        try:
            for current in record.includes:
                target = include_path(current, event)
                if target is not None:
                    self.queue.append(target)
            for current in record.sets:
                update(current, event, state)
        except EVAL_ERRORS as err:
            text = current.mlperf_text if current is not None else ""
            message = (
                f"{event.key}: its POST {text!r} cannot run on value {show(event.value)} ({type(err).__name__}: {err})"
            )
            self.keyed.append(MlperfViolation("update", path, event.key, event.line, message))

    def target(self, path: str, check: Check, event: LogEvent, state: State) -> int:
        try:
            return 1 if holds(check, event, state) else 0
        except EVAL_ERRORS as err:
            message = (
                f"{event.key}: the target check cannot be evaluated on {found(check, event, state)} "
                f"({type(err).__name__}: {err}); MLPerf's checker stops with this error{_mlperf(check)}"
            )
            raise _Stop(MlperfViolation("stopped", path, event.key, event.line, message)) from err

    def counts(self, path: str, records: list[KeyRecord], values: dict[str, list[Any]]) -> None:
        alternatives: dict[frozenset[str], None] = {}  # an ordered set
        for record in records:
            seen = values[record.key]
            n = len(seen)
            if record.req == "exactly_one" and n != 1:
                same = bool(seen) and seen.count(seen[0]) == n
                detail = (
                    f" with different values: {show(sorted({str(v) for v in seen}), 200)}" if n and not same else ""
                )
                message = f"{record.key}: expected exactly one line, found {n}{detail}"
                violation = MlperfViolation("count", path, record.key, None, message)
                if same and not self.werror:
                    self.warnings.append(violation)
                else:
                    self.keyed.append(violation)
            elif (record.req == "at_least_one" and n < 1) or (record.req == "at_least" and n < (record.at_least or 0)):
                wanted = REQ_WORDS.get(record.req, f"at least {record.at_least} lines")
                self.keyed.append(
                    MlperfViolation("count", path, record.key, None, f"{record.key}: expected {wanted}, found {n}")
                )
            elif record.req == "at_least_one_or":
                alternatives[frozenset((record.key, *(record.or_keys or ())))] = None
        for keys in alternatives:
            if not any(values[k] for k in keys):
                names = " or ".join(sorted(keys))
                self.fixed.append(
                    MlperfViolation(
                        "alternatives", path, None, None, f"expected at least one line of {names}, found none"
                    )
                )

    def aggregate(self, rule: Aggregate, path: str) -> list[LogEvent]:
        """stable_diffusion's BEGIN: one virtual line per group, its value {group_field: group, metric: value, ...}."""
        groups: dict[Any, tuple[dict[Any, Any], list[float], int]] = {}
        sources = chain(self.log.all(rule.source_key), (e for e in self.extra if e.key == rule.source_key))
        for event in sources:
            try:
                if rule.metric_field not in event.metadata:
                    continue
                group = event.metadata[rule.group_field]
                if group not in groups:
                    groups[group] = ({rule.group_field: group}, [float(event.time_ms)], event.line)
                value, latest, _ = groups[group]
                latest[0] = max(float(event.time_ms), latest[0])
                value[event.metadata[rule.metric_field]] = event.value
            except EVAL_ERRORS as err:
                message = (
                    f"{event.key}: metadata {show(event.metadata)} cannot be grouped by {rule.group_field!r} "
                    f"({type(err).__name__}: {err}); MLPerf's checker stops with this error in its BEGIN"
                )
                raise _Stop(MlperfViolation("stopped", path, event.key, event.line, message)) from err
        return [_virtual(rule.target_key, value, latest[0], line) for value, latest, line in groups.values()]

    def verdict(self, stopped: MlperfViolation | None) -> MlperfVerdict:
        violations = [*self.keyed, *self.fixed, *([stopped] if stopped else [])]
        return MlperfVerdict(
            passed=not violations,
            violations=tuple(violations),
            warnings=tuple(self.warnings),
            superseded=tuple(self.superseded),
            stopped=stopped,
            rule_files=tuple(self.applied),
        )


def _virtual(key: str, value: dict[Any, Any], time_ms: float, line: int) -> LogEvent:
    return LogEvent(
        line=line, namespace="", time_ms=time_ms, event_type="POINT_IN_TIME", key=key, value=value, metadata={}
    )


def _mlperf(check: Check) -> str:
    return f" (MLPerf: {check.mlperf_text})" if check.mlperf_text else ""


def _missing(path: str, applied: list[str]) -> MlperfViolation:
    after = f" after {applied[-1]}" if applied else ""
    message = f"rule file {path}, enqueued{after}, does not exist; MLPerf's checker stops with FileNotFoundError"
    return MlperfViolation("missing_file", path, None, None, message)


def _target_missed(path: str, record: KeyRecord, seen: list[Any]) -> MlperfViolation:
    check = record.at_least_one_check
    assert check is not None
    message = (
        f"{record.key}: expected at least one line with {expected(check)}, found {show(seen, 120)}{_mlperf(check)}"
    )
    return MlperfViolation("target", path, record.key, None, message)


def check_mlperf_log(log: ParsedLog, rules: MlperfRuleSet, *, werror: bool = False) -> MlperfVerdict:
    """Apply one ruleset's typed rules to a parsed log with MLPerf's checker's semantics (see the module)."""
    run = _Run(log, rules, werror)
    try:
        run.all()
    except _Stop as stop:
        return run.verdict(stop.violation)
    return run.verdict(None)


@cache
def _checker(usage: str, ruleset: str) -> Callable[[ParsedLog], MlperfVerdict]:
    """The checker of one ruleset as one function object, so that a log keeps its verdict (`ParsedLog.derived`):
    `specbench import mlperf` judges each log when converting it and again when validating the submission."""
    rules = load_mlperf_rules(usage, ruleset)
    return lambda log: check_mlperf_log(log, rules)


def typed_log_rules(log: ParsedLog, file: str, findings: Findings, usage: str, ruleset: str) -> list[str]:
    """MLPerf's checker on an imported log from the typed rules of its ruleset: each violation an SB-MLP-001
    finding at its line; returns why the run counts as failed (empty when MLPerf's checker passes the log)."""
    try:
        checker = _checker(usage, ruleset)
    except UsageError as err:
        message = f"{err}: the log cannot be judged by MLPerf's rules; the run counts as failed"
        findings.add("SB-MLP-001", file, message)
        return [message]
    verdict = log.derived(checker)
    broken = []
    for violation in verdict.violations:
        message = f"{violation.message} (MLPerf {violation.rule_file}); the run counts as failed"
        findings.add("SB-MLP-001", file, message, line=violation.line)
        broken.append(violation.message)
    if not verdict.passed and not broken:
        broken.append("MLPerf's compliance checker fails the log")
    return broken


def check_mlperf_text(text: str, rules: MlperfRuleSet, *, werror: bool = False) -> MlperfVerdict:
    """The verdict on a log's text read as MLPerf's parser reads it (specbench.validator.mlperf_lines).

    Decode a file as latin-1, as MLPerf does, for the same verdict on any bytes.
    """
    view = mlperf_view(text)
    if view.stop is None:
        return check_mlperf_log(view.log, rules, werror=werror)
    stop = MlperfViolation("stopped", "", None, view.stop.line, f"line {view.stop.line}: {view.stop.message}")
    return MlperfVerdict(passed=False, violations=(stop,), stopped=stop)
