"""The expression shapes of MLPerf's rule files, each mapped to typed rules (specbench.formats.mlperf_rules).

An expression is normalised (runs of whitespace become one space, balanced outer parentheses are
dropped), split at its top-level `and`, `or`, `|` or `;`, and each part is matched against an explicit
table of regular expressions with named groups. Literals are read by `literal()` (quotes, True/False,
int() or float()); nothing is evaluated. An expression no shape recognises raises UnknownShape.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Iterator
from typing import Any

from specbench.errors import SpecbenchError
from specbench.formats.mlperf_rules import (
    Aggregate,
    Check,
    FieldRange,
    Include,
    Literal_,
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
    ValueClose,
    ValueEq,
    ValueEqCeilQuotientMinusState,
    ValueEqConstantMinusState,
    ValueFieldsInRange,
    ValueHasKey,
    ValueIn,
    ValueLength,
    ValueMultipleOf,
    ValueNe,
    ValuePowerOfTwoMultiple,
    ValueRange,
    ValueScaledEqStateScaled,
    ValueTruthy,
    WithinMinutesOfFirst,
)


class UnknownShape(SpecbenchError):
    """An expression of an MLPerf rule file that no shape of the table recognises."""


NUM = r"-?(?:\d[\d_]*(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)"
STR = r"'[^'\\]*'|\"[^\"\\]*\""
LIT = rf"(?:{NUM}|{STR}|True|False)"
V = r"v\['value'\]"
MD = r"v\['metadata'\]"
OP = r"<=|>=|<|>"
PATH = r"[\w.]+/[\w.]*"


def literal(text: str) -> Literal_:
    """A literal of rule text: a quoted text, True/False, an int, or a float (a '.' or an exponent)."""
    if text in ("True", "False"):
        return text == "True"
    if text[:1] in "'\"":
        return text[1:-1]
    if re.fullmatch(NUM, text) is None:
        raise UnknownShape(f"expected a literal (number, quoted text, True or False), found {text!r}")
    return float(text) if any(c in text for c in ".eE") else int(text)


def number(text: str) -> int | float:
    value = literal(text)
    assert isinstance(value, (int, float)) and not isinstance(value, bool)
    return value


def normalise(text: str) -> str:
    """The text with each run of whitespace made one space (MLPerf's rule text, as shown in the typed rules)."""
    return " ".join(text.split())


def unwrap(text: str) -> str:
    """The text without parentheses that enclose all of it: '( a )' -> 'a', '(a) and (b)' unchanged."""
    while text.startswith("(") and text.endswith(")") and _closing(text, 0) == len(text) - 1:
        text = text[1:-1].strip()
    return text


def _depths(text: str) -> Iterator[tuple[int, str, int]]:
    """Each character outside quotes with its index and the bracket depth after it (quoted text is skipped)."""
    depth, quote = 0, ""
    for i, c in enumerate(text):
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        else:
            depth += (c in "([{") - (c in ")]}")
            yield i, c, depth


def _closing(text: str, start: int) -> int:
    for i, c, depth in _depths(text[start:]):
        if c in ")]}" and depth == 0:
            return start + i
    return -1


def split_top(text: str, separator: str) -> list[str]:
    """The parts of `text` between top-level occurrences of `separator` (outside brackets and quotes)."""
    parts, start = [], 0
    for i, c, depth in _depths(text):
        if i >= start and depth == 0 and c not in ")]}" and text.startswith(separator, i):
            parts.append(text[start:i])
            start = i + len(separator)
    parts.append(text[start:])
    return [unwrap(p.strip()) for p in parts]


# Comparisons: one subject (the value or a field of it) against a number ---------------------------------------

_BOUND = {">": ("min", False), ">=": ("min", True), "<": ("max", False), "<=": ("max", True)}
_MIRROR = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
_SUBJECT_OP_NUM = re.compile(rf"{V}(?:\['(?P<field>\w+)'\])? ?(?P<op>{OP}) ?(?P<num>{NUM})")
_CHAIN = re.compile(rf"(?P<lo>{NUM}) ?(?P<lop><=|<) ?{V}(?:\['(?P<field>\w+)'\])? ?(?P<hop><=|<) ?(?P<hi>{NUM})")


def _comparisons(term: str) -> list[tuple[str | None, str, int | float]] | None:
    """`(field, op, number)` of a comparison term, the subject on the left; None when it is none."""
    m = _SUBJECT_OP_NUM.fullmatch(term)
    if m:
        return [(m["field"], m["op"], number(m["num"]))]
    m = _CHAIN.fullmatch(term)
    if m:
        return [(m["field"], _MIRROR[m["lop"]], number(m["lo"])), (m["field"], m["hop"], number(m["hi"]))]
    return None


def _bounds(items: list[tuple[str, int | float]], text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for op, num in items:
        side, inclusive = _BOUND[op]
        if side in out:
            raise UnknownShape(f"two {side} bounds of one subject in {text!r}")
        out[side], out[f"{side}_inclusive"] = num, inclusive
    return out


def _conjunction(text: str, shown: str) -> Check | None:
    """`a and b ...` of comparisons: a value_range of the value, or a value_fields_in_range of its fields."""
    subjects: dict[str | None, list[tuple[str, int | float]]] = {}
    for term in split_top(text, " and "):
        found = _comparisons(term)
        if found is None:
            return None
        for field, op, num in found:
            subjects.setdefault(field, []).append((op, num))
    if list(subjects) == [None]:
        return ValueRange(kind="value_range", mlperf_text=shown, **_bounds(subjects[None], text))
    if None in subjects:
        raise UnknownShape(f"a comparison of the value and of its fields together in {text!r}")
    fields = [FieldRange(field=str(f), **_bounds(items, text)) for f, items in subjects.items()]
    return ValueFieldsInRange(kind="value_fields_in_range", fields=fields, mlperf_text=shown)


def _items(text: str) -> list[Literal_]:
    return [literal(p) for p in split_top(text, ",") if p]


# The single shapes of CHECK and ATLEAST_ONE_CHECK ---------------------------------------------------------------

CheckBuilder = Callable[[re.Match[str], str], Check]
CHECK_SHAPES: list[tuple[str, re.Pattern[str], CheckBuilder]] = [
    ("value == literal", re.compile(rf"{V} == (?P<lit>{LIT})"), lambda m, t: ValueEq(kind="value_eq", value=literal(m["lit"]), mlperf_text=t)),
    ("value != literal", re.compile(rf"{V} != (?P<lit>{LIT})"), lambda m, t: ValueNe(kind="value_ne", value=literal(m["lit"]), mlperf_text=t)),
    ("value in [list]", re.compile(rf"{V} in \[(?P<items>.*)\]"), lambda m, t: ValueIn(kind="value_in", values=_items(m["items"]), mlperf_text=t)),
    ("value in {set}", re.compile(rf"{V} in \{{(?P<items>.*)\}}"), lambda m, t: ValueIn(kind="value_in", values=_items(m["items"]), as_set=True, mlperf_text=t)),
    ("value (truthy)", re.compile(V), lambda m, t: ValueTruthy(kind="value_truthy", mlperf_text=t)),
    ("math.isclose(value, x)", re.compile(rf"math\.isclose\({V}, ?(?P<num>{NUM})\)"), lambda m, t: ValueClose(kind="value_close", value=number(m["num"]), mlperf_text=t)),
    ("len(value) == n", re.compile(rf"len\({V}\) == (?P<n>\d+)"), lambda m, t: ValueLength(kind="value_length", min=int(m["n"]), max=int(m["n"]), mlperf_text=t)),
    ("len(value) >= n", re.compile(rf"len\({V}\) >= (?P<n>\d+)"), lambda m, t: ValueLength(kind="value_length", min=int(m["n"]), mlperf_text=t)),
    ("is_integer(math.log2(value / base))", re.compile(rf"is_integer\(math\.log2\({V} / (?P<num>{NUM})\)\)"), lambda m, t: ValuePowerOfTwoMultiple(kind="value_power_of_two_multiple", base=number(m["num"]), mlperf_text=t)),
    ("is_integer(value / step)", re.compile(rf"is_integer\({V} / (?P<num>{NUM})\)"), lambda m, t: ValueMultipleOf(kind="value_multiple_of", step=number(m["num"]), mlperf_text=t)),
    ("'k' in value", re.compile(rf"'(?P<key>\w+)' in {V}"), lambda m, t: ValueHasKey(kind="value_has_key", key=m["key"], mlperf_text=t)),
    ("'k' in metadata", re.compile(rf"'(?P<key>\w+)' in {MD}"), lambda m, t: MetadataAnyOf(kind="metadata_any_of", keys=[m["key"]], mlperf_text=t)),
    ("'k' in metadata if 'p' in metadata else True", re.compile(rf"'(?P<key>\w+)' in {MD} if '(?P<cond>\w+)' in {MD} else True"), lambda m, t: MetadataImplies(kind="metadata_implies", present=m["cond"], requires=m["key"], mlperf_text=t)),
    ("metadata['k'] op number", re.compile(rf"{MD}\['(?P<key>\w+)'\] (?P<op>{OP}) (?P<num>{NUM})"), lambda m, t: _metadata_range(m, t, False)),
    ("metadata['k'] op number if 'k' in metadata else True", re.compile(rf"{MD}\['(?P<key>\w+)'\] (?P<op>{OP}) (?P<num>{NUM}) if '(?P=key)' in {MD} else True"), lambda m, t: _metadata_range(m, t, True)),
    ("s['flag']", re.compile(r"s\['(?P<name>\w+)'\]"), lambda m, t: StateTrue(kind="state_true", name=m["name"], mlperf_text=t)),
    ("not s['flag']", re.compile(r"not s\['(?P<name>\w+)'\]"), lambda m, t: StateFalse(kind="state_false", name=m["name"], mlperf_text=t)),
    ("s['flag'] == literal", re.compile(rf"s\['(?P<name>\w+)'\] == (?P<lit>{LIT})"), lambda m, t: StateEq(kind="state_eq", name=m["name"], value=literal(m["lit"]), mlperf_text=t)),
    ("ll.timestamp - s['first'] < (minutes*60*1e3)", re.compile(rf"ll\.timestamp - s\['(?P<first>\w+)'\] < \((?P<num>{NUM})\*60\*1e3\)"), lambda m, t: WithinMinutesOfFirst(kind="within_minutes_of_first", first=m["first"], minutes=number(m["num"]), mlperf_text=t)),
    ("ll.timestamp - s['first'] < (s['minutes']*60*1e3)", re.compile(r"ll\.timestamp - s\['(?P<first>\w+)'\] < \(s\['(?P<minutes>\w+)'\]\*60\*1e3\)"), lambda m, t: WithinMinutesOfFirst(kind="within_minutes_of_first", first=m["first"], minutes_state=m["minutes"], mlperf_text=t)),
    ("value * a == s['x'] * b", re.compile(rf"{V} \* (?P<a>{NUM}) == s\['(?P<state>\w+)'\] \* (?P<b>{NUM})"), lambda m, t: ValueScaledEqStateScaled(kind="value_scaled_eq_state_scaled", value_factor=number(m["a"]), state=m["state"], state_factor=number(m["b"]), mlperf_text=t)),
    ("value == n - s['x']", re.compile(rf"{V} == (?P<n>{NUM}) - s\['(?P<state>\w+)'\]"), lambda m, t: ValueEqConstantMinusState(kind="value_eq_constant_minus_state", constant=number(m["n"]), state=m["state"], mlperf_text=t)),
    ("value == math.ceil(a * b / s['x']) - s['y']", re.compile(rf"{V} == math\.ceil\((?P<a>{NUM}) \* (?P<b>{NUM}) / s\['(?P<div>\w+)'\] ?\) - s\['(?P<state>\w+)'\]"), lambda m, t: ValueEqCeilQuotientMinusState(kind="value_eq_ceil_quotient_minus_state", dividend=number(m["a"]), dividend_factor=number(m["b"]), divisor_state=m["div"], state=m["state"], mlperf_text=t)),
]  # fmt: skip


def _metadata_range(m: re.Match[str], text: str, when_present: bool) -> Check:
    bounds = _bounds([(m["op"], number(m["num"]))], text)
    return MetadataRange(
        kind="metadata_range", key=m["key"], only_when_present=when_present, mlperf_text=text, **bounds
    )


def check_shape(text: str) -> tuple[str, Check]:
    """The shape's name and the typed check of one CHECK or ATLEAST_ONE_CHECK expression."""
    shown = normalise(text)
    text = unwrap(shown)
    if len(split_top(text, " and ")) > 1 or _comparisons(text):
        found = _conjunction(text, shown)
        if isinstance(found, ValueRange):
            return "value op number [and value op number]", found
        if found is not None:
            return "value['f'] op number [and value['g'] op number]", found
    if len(split_top(text, " or ")) > 1:
        values = [re.fullmatch(rf"{V} == (?P<lit>{LIT})", p) for p in split_top(text, " or ")]
        if all(values):
            return "value == a or value == b", ValueIn(
                kind="value_in", values=[literal(m["lit"]) for m in values if m], mlperf_text=shown
            )
    if len(split_top(text, " | ")) > 1:
        keys = [re.fullmatch(rf"'(?P<key>\w+)' in {MD}", p) for p in split_top(text, " | ")]
        if all(keys):
            return "('a' in metadata) | ('b' in metadata)", MetadataAnyOf(
                kind="metadata_any_of", keys=[m["key"] for m in keys if m], mlperf_text=shown
            )
    for name, pattern, build in CHECK_SHAPES:
        m = pattern.fullmatch(text)
        if m:
            return name, build(m, shown)
    raise UnknownShape(f"no shape recognises the check {text!r}")


# POST: includes and state updates, statement by statement -------------------------------------------------------

Post = Include | StateUpdate
PostBuilder = Callable[[re.Match[str], str], Post]
POST_SHAPES: list[tuple[str, re.Pattern[str], PostBuilder]] = [
    ("enqueue_config('path_{}'.format(value))", re.compile(rf"enqueue_config\('(?P<head>{PATH})\{{\}}(?P<tail>[\w.]*)'\.format\({V}(?P<lower>\.lower\(\))?\)\)"), lambda m, t: Include(pattern=m["head"] + "{value}" + m["tail"], lower=bool(m["lower"]), mlperf_text=t)),
    ("if (value == literal): enqueue_config('path')", re.compile(rf"if \({V} == (?P<lit>{LIT})\): enqueue_config\('(?P<path>{PATH})'\)"), lambda m, t: Include(pattern=m["path"], when_value=literal(m["lit"]), mlperf_text=t)),
    ("s['x'] = value", re.compile(rf"s\['(?P<name>\w+)'\] ?= ?{V}"), lambda m, t: SetValue(kind="set_value", name=m["name"], mlperf_text=t)),
    ("s['x'] = literal", re.compile(rf"s\['(?P<name>\w+)'\] ?= ?(?P<lit>{LIT})"), lambda m, t: SetConstant(kind="set_constant", name=m["name"], value=literal(m["lit"]), mlperf_text=t)),
    ("s['x'] = min(s['x'], ll.timestamp)", re.compile(r"s\['(?P<name>\w+)'\] ?= ?min\(s\['(?P=name)'\], ?ll\.timestamp\)"), lambda m, t: SetMinTime(kind="set_min_time", name=m["name"], mlperf_text=t)),
    ("s['x'] = a if value == b else c", re.compile(rf"s\['(?P<name>\w+)'\] ?= ?(?P<then>{LIT}) if {V} == (?P<when>{LIT}) else (?P<other>{LIT})"), lambda m, t: SetChoice(kind="set_choice", name=m["name"], when_value=literal(m["when"]), then=literal(m["then"]), otherwise=literal(m["other"]), mlperf_text=t)),
    ("s['x'] = math.ceil(a * b / s['y'])", re.compile(rf"s\['(?P<name>\w+)'\] ?= ?math\.ceil\((?P<a>{NUM}) \* (?P<b>{NUM}) / s\['(?P<div>\w+)'\] ?\)"), lambda m, t: SetCeilQuotient(kind="set_ceil_quotient", name=m["name"], dividend=number(m["a"]), dividend_factor=number(m["b"]), divisor_state=m["div"], mlperf_text=t)),
]  # fmt: skip


def post_shapes(text: str) -> list[tuple[str, Post]]:
    """The shape and typed form of each statement of a POST, in order; includes must come first."""
    out: list[tuple[str, Post]] = []
    for statement in split_top(unwrap(normalise(text)), ";"):
        for name, pattern, build in POST_SHAPES:
            m = pattern.fullmatch(statement)
            if m:
                out.append((name, build(m, statement)))
                break
        else:
            raise UnknownShape(f"no shape recognises the statement {statement!r}")
    kinds = [isinstance(p, Include) for _, p in out]
    if kinds != sorted(kinds, reverse=True):
        raise UnknownShape(f"a state update before an include in {text!r}: the typed record runs includes first")
    return out


# BEGIN: state initialisation, and stable_diffusion's aggregation of metric lines ---------------------------------

_STATE_ITEM = re.compile(rf"'(?P<name>\w+)' ?: ?(?P<lit>{LIT})")
AGGREGATE_CODE = textwrap.dedent(
    """\
    from dataclasses import replace
    agg_eval_lines = {}
    for line in loglines:
        if line.key == "<source>" and '<metric>' in line.value['metadata']:
            <var> = line.value['metadata']['<group>']
            if <var> not in agg_eval_lines:
                new_line = replace(line) # Make a copy
                new_line.key = "<target>"
                new_line.full_string = "" # Not needed
                new_line.lineno = -1      # Not needed
                new_line.value = {'value': {'<group>': <var>}, 'metadata':{}}
                agg_eval_lines[<var>] = new_line

            agg_eval_lines[<var>].timestamp = max(line.timestamp, agg_eval_lines[<var>].timestamp)
            agg_eval_lines[<var>].value['value'][line.value['metadata']['<metric>']] = line.value['value']
    loglines.extend(agg_eval_lines.values())
    """
)
"""stable_diffusion's BEGIN line by line, with its indentation (which is its meaning); <name> marks a name
(<var> the local name of a group: samples_count from ruleset 4.0.0 on, step_num in 3.1.0)."""


def _template(code: str) -> re.Pattern[str]:
    pattern = re.escape(code)
    for name in ("source", "metric", "group", "target", "var"):
        marker = re.escape(f"<{name}>")
        first = pattern.index(marker)
        rest = pattern[first + len(marker) :].replace(marker, f"(?P={name})")
        pattern = pattern[:first] + f"(?P<{name}>\\w+)" + rest
    return re.compile(pattern)


AGGREGATE_TEMPLATE = _template(AGGREGATE_CODE)


def begin_shape(code: str) -> tuple[str, dict[str, Literal_] | Aggregate]:
    """The typed form of a BEGIN block: the state it sets, or the aggregation it performs."""
    m = re.fullmatch(r"s\.update\(\{(?P<items>.*)\}\)", unwrap(normalise(code)))
    if m:
        state: dict[str, Literal_] = {}
        for item in split_top(m["items"], ","):
            if item:
                entry = _STATE_ITEM.fullmatch(item)
                if entry is None:
                    raise UnknownShape(f"no shape recognises the state entry {item!r}")
                state[entry["name"]] = literal(entry["lit"])
        return "s.update({...})", state
    lines = "\n".join(line.rstrip() for line in code.strip("\n").split("\n")) + "\n"
    m = AGGREGATE_TEMPLATE.fullmatch(lines)
    if m:
        return "aggregate metric lines", Aggregate(
            source_key=m["source"], metric_field=m["metric"], group_field=m["group"], target_key=m["target"]
        )
    raise UnknownShape(f"no shape recognises the BEGIN code {normalise(code)[:80]!r}...")
