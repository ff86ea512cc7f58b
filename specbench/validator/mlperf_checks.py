"""One pure function per typed MLPerf check kind, with Python's semantics on the log's JSON values.

`holds(check, event, state)` says whether one line passes one check. Each function applies Python's
operators to the value exactly as MLPerf's checker's expression does, so an operation Python refuses
(a text compared with a number, a key that is missing, log2 of zero) raises one of EVAL_ERRORS, as it
does inside MLPerf's `eval`; the engine decides what an error means where (a failure in CHECK, a stop
of the checker in ATLEAST_ONE_CHECK). `expected(check)` and `found(check, event, state)` word messages.
"""

from __future__ import annotations

import math
from collections.abc import Callable, MutableMapping
from typing import Any

from specbench.formats.mllog import LogEvent
from specbench.formats.mlperf_rules import (
    Bounds,
    Check,
    Include,
    MetadataAnyOf,
    MetadataImplies,
    MetadataRange,
    SetCeilQuotient,
    SetChoice,
    SetConstant,
    SetMinTime,
    SetValue,
    StateEq,
    StateFalse,
    StateTrue,
    StateUpdate,
    ValueFieldsInRange,
    WithinMinutesOfFirst,
)
from specbench.validator.values import show

EVAL_ERRORS = (TypeError, ValueError, KeyError, IndexError, AttributeError, ArithmeticError, RecursionError)
"""What Python raises for the operations of MLPerf's rule expressions on JSON values."""
State = MutableMapping[str, Any]
Holds = Callable[[Any, LogEvent, State], bool]


def time_ms(event: LogEvent) -> float:
    """The line's time as MLPerf's parser reads it: float(time_ms)."""
    return float(event.time_ms)


def in_bounds(x: Any, bounds: Bounds) -> bool:
    """Python's `min <= x` / `min < x`, then `x <= max` / `x < max`; a value Python cannot order raises."""
    if bounds.min is not None and not (x >= bounds.min if bounds.min_inclusive else x > bounds.min):
        return False
    return bounds.max is None or bool(x <= bounds.max if bounds.max_inclusive else x < bounds.max)


def _is_integer(x: float, tolerance: float) -> bool:
    return abs(round(x) - x) < tolerance


def _fields(check: ValueFieldsInRange, e: LogEvent, s: State) -> bool:
    return all(in_bounds(e.value[f.field], f) for f in check.fields)


def _metadata_range(check: MetadataRange, e: LogEvent, s: State) -> bool:
    if check.only_when_present and check.key not in e.metadata:
        return True
    return in_bounds(e.metadata[check.key], check)


def _within(check: WithinMinutesOfFirst, e: LogEvent, s: State) -> bool:
    minutes = check.minutes if check.minutes is not None else s[str(check.minutes_state)]
    return bool(time_ms(e) - s[check.first] < (minutes * 60 * 1e3))


def _ceil_quotient(dividend: float, factor: float, divisor: Any) -> int:
    return math.ceil(dividend * factor / divisor)


HOLDS: dict[str, Holds] = {
    "value_eq": lambda c, e, s: bool(e.value == c.value),
    "value_ne": lambda c, e, s: bool(e.value != c.value),
    "value_in": lambda c, e, s: e.value in (set(c.values) if c.as_set else c.values),
    "value_range": lambda c, e, s: in_bounds(e.value, c),
    "value_truthy": lambda c, e, s: bool(e.value),
    "value_close": lambda c, e, s: math.isclose(e.value, c.value, rel_tol=c.rel_tol, abs_tol=c.abs_tol),
    "value_length": lambda c, e, s: (c.min is None or len(e.value) >= c.min) and (c.max is None or len(e.value) <= c.max),
    "value_power_of_two_multiple": lambda c, e, s: _is_integer(math.log2(e.value / c.base), c.tolerance),
    "value_multiple_of": lambda c, e, s: _is_integer(e.value / c.step, c.tolerance),
    "value_has_key": lambda c, e, s: c.key in e.value,
    "value_fields_in_range": _fields,
    "metadata_any_of": lambda c, e, s: any(k in e.metadata for k in c.keys),
    "metadata_implies": lambda c, e, s: c.present not in e.metadata or c.requires in e.metadata,
    "metadata_range": _metadata_range,
    "state_true": lambda c, e, s: bool(s[c.name]),
    "state_false": lambda c, e, s: not s[c.name],
    "state_eq": lambda c, e, s: bool(s[c.name] == c.value),
    "within_minutes_of_first": _within,
    "value_scaled_eq_state_scaled": lambda c, e, s: bool(e.value * c.value_factor == s[c.state] * c.state_factor),
    "value_eq_constant_minus_state": lambda c, e, s: bool(e.value == c.constant - s[c.state]),
    "value_eq_ceil_quotient_minus_state": lambda c, e, s: bool(
        e.value == _ceil_quotient(c.dividend, c.dividend_factor, s[c.divisor_state]) - s[c.state]
    ),
}  # fmt: skip


def holds(check: Check, event: LogEvent, state: State) -> bool:
    """Whether one line passes one check; raises one of EVAL_ERRORS where MLPerf's expression raises."""
    return HOLDS[check.kind](check, event, state)


def update(action: StateUpdate, event: LogEvent, state: State) -> None:
    """Apply one state update (a POST statement); raises one of EVAL_ERRORS where MLPerf's statement raises."""
    if isinstance(action, SetConstant):
        state[action.name] = action.value
    elif isinstance(action, SetValue):
        state[action.name] = event.value
    elif isinstance(action, SetMinTime):
        state[action.name] = min(state[action.name], time_ms(event))
    elif isinstance(action, SetChoice):
        state[action.name] = action.then if event.value == action.when_value else action.otherwise
    elif isinstance(action, SetCeilQuotient):
        state[action.name] = _ceil_quotient(action.dividend, action.dividend_factor, state[action.divisor_state])


def include_path(include: Include, event: LogEvent) -> str | None:
    """MLPerf's path of the rule file an include enqueues for this line, None when its condition is not met."""
    if include.when_value is not None and event.value != include.when_value:
        return None
    text = event.value.lower() if include.lower else event.value
    return include.pattern.replace("{value}", format(text, ""))


# Messages --------------------------------------------------------------------------------------------------------


def bounds_text(bounds: Bounds, subject: str = "a number") -> str:
    parts = []
    if bounds.min is not None:
        parts.append(f"{'>=' if bounds.min_inclusive else '>'} {bounds.min!r}")
    if bounds.max is not None:
        parts.append(f"{'<=' if bounds.max_inclusive else '<'} {bounds.max!r}")
    return f"{subject} {' and '.join(parts)}"


EXPECTED: dict[str, Callable[[Any], str]] = {
    "value_eq": lambda c: f"{c.value!r}",
    "value_ne": lambda c: f"anything but {c.value!r}",
    "value_in": lambda c: "one of " + ", ".join(repr(v) for v in c.values),
    "value_range": lambda c: bounds_text(c),
    "value_truthy": lambda c: "a true value (not false, 0, empty or null)",
    "value_close": lambda c: f"a number close to {c.value!r} (relative {c.rel_tol:g})",
    "value_length": lambda c: f"a list, object or text of length {c.min if c.min == c.max else f'>= {c.min}'}",
    "value_power_of_two_multiple": lambda c: f"{c.base!r} x 2^N for an integer N",
    "value_multiple_of": lambda c: f"an integer multiple of {c.step!r}",
    "value_has_key": lambda c: f"an object with field {c.key!r}",
    "value_fields_in_range": lambda c: "; ".join(bounds_text(f, f"field {f.field!r}") for f in c.fields),
    "metadata_any_of": lambda c: "metadata with " + " or ".join(repr(k) for k in c.keys),
    "metadata_implies": lambda c: f"metadata with {c.requires!r} where it has {c.present!r}",
    "metadata_range": lambda c: bounds_text(c, f"metadata {c.key!r}") + (" where present" if c.only_when_present else ""),
    "state_true": lambda c: f"after {c.name} (state {c.name!r} true)",
    "state_false": lambda c: f"before {c.name} (state {c.name!r} false)",
    "state_eq": lambda c: f"state {c.name!r} == {c.value!r}",
    "within_minutes_of_first": lambda c: f"a time less than {_minutes(c)} minutes after the first init (state {c.first!r})",
    "value_scaled_eq_state_scaled": lambda c: f"value x {c.value_factor!r} == {c.state} x {c.state_factor!r}",
    "value_eq_constant_minus_state": lambda c: f"{c.constant!r} - {c.state}",
    "value_eq_ceil_quotient_minus_state": lambda c: f"ceil({c.dividend!r} x {c.dividend_factor!r} / {c.divisor_state}) - {c.state}",
}  # fmt: skip


def _minutes(check: WithinMinutesOfFirst) -> str:
    return repr(check.minutes) if check.minutes is not None else f"state {check.minutes_state!r}"


def expected(check: Check) -> str:
    return EXPECTED[check.kind](check)


def _state_names(check: Check) -> list[str]:
    names = [getattr(check, a, None) for a in ("name", "state", "divisor_state", "first", "minutes_state")]
    return [n for n in names if isinstance(n, str)]


def found(check: Check, event: LogEvent, state: State) -> str:
    """What the line (and the state the check reads) holds, for the message."""
    metadata = event.metadata
    if not isinstance(metadata, dict) and isinstance(check, (MetadataAnyOf, MetadataImplies, MetadataRange)):
        return f"metadata {show(metadata)} (no object)"
    if isinstance(check, (MetadataAnyOf, MetadataImplies)):
        return f"metadata keys {sorted(metadata)}"
    if isinstance(check, MetadataRange):
        return f"metadata {check.key!r} = {show(metadata.get(check.key, '(missing)'))}"
    parts = [] if isinstance(check, (StateTrue, StateFalse, StateEq)) else [f"value {show(event.value)}"]
    if isinstance(check, WithinMinutesOfFirst):
        parts = [f"time_ms {time_ms(event)!r}"]
    for name in _state_names(check):
        parts.append(f"state {name!r} = {show(state[name]) if name in state else '(never set)'}")
    return ", ".join(parts)
