"""Typed MLPerf compliance rules: the checker's rule files as data that is never evaluated as code.

MLPerf's compliance checker keeps its rules in YAML files whose CHECK, POST and BEGIN fields hold
Python that it `eval`s. `specbench.mlperf.ruleport` translates those files into the models below
(one `MlperfRuleSet` per usage and ruleset, committed under `rules/mlperf/`), and
`specbench.validator.mlperf_engine` applies them to a log with the checker's semantics. Each check,
state update and include is a small model selected by `kind`; `mlperf_text` keeps MLPerf's original
expression for documentation only.
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Final, Literal

from pydantic import Field, StrictBool, StrictFloat, StrictInt, StrictStr, model_validator

from specbench.errors import InputError, Problem, UsageError
from specbench.registry import did_you_mean
from specbench.spec.builtin import data_root
from specbench.spec.loader import validate_model
from specbench.spec.models import Strict
from specbench.spec.parsed import load_builtin_yaml

FORMAT: Final = "specbench.mlperf-rules"
FORMAT_VERSION: Final = 1
RULES_FOLDER = ("rules", "mlperf")

Number = StrictInt | StrictFloat
"""A number as MLPerf wrote it: an int stays an int, a float a float (Python compares them alike)."""
Literal_ = StrictBool | StrictInt | StrictFloat | StrictStr
"""A literal of MLPerf's rule text: true/false, a number or a text, compared with Python's `==`."""
Usage = Literal["training", "hpc"]


class _Typed(Strict):
    mlperf_text: str | None = Field(default=None, description="MLPerf's original text (documentation only).")


class Bounds(Strict):
    """Bounds of a number; each may be left out. The comparison is Python's, so a non-number fails it."""

    min: Number | None = Field(default=None, description="Lower bound; none: no lower bound.")
    min_inclusive: bool = Field(default=True, description="Whether the lower bound itself is allowed.")
    max: Number | None = Field(default=None, description="Upper bound; none: no upper bound.")
    max_inclusive: bool = Field(default=True, description="Whether the upper bound itself is allowed.")

    @model_validator(mode="after")
    def _some_bound(self) -> Bounds:
        if self.min is None and self.max is None:
            raise ValueError("a range needs min, max or both")
        return self


# Checks on the line's value -------------------------------------------------------------------------------------


class ValueEq(_Typed):
    """The value equals `value` (`v['value'] == X`)."""

    kind: Literal["value_eq"]
    value: Literal_


class ValueNe(_Typed):
    """The value differs from `value` (`v['value'] != ''`: anything but the empty text)."""

    kind: Literal["value_ne"]
    value: Literal_


class ValueIn(_Typed):
    """The value is one of `values` (`in [...]`, `in {...}`, `== a or == b`)."""

    kind: Literal["value_in"]
    values: list[Literal_] = Field(min_length=1)
    as_set: bool = Field(default=False, description="MLPerf wrote a set: a list or object value is an error.")


class ValueRange(_Typed, Bounds):
    """A number within bounds (`v['value'] > 0`, `(v['value'] <= 0.925) and v['value'] > 0.0`)."""

    kind: Literal["value_range"]


class ValueTruthy(_Typed):
    """The value is true in Python's sense (`v['value']`): not false, 0, '', [], {} or null."""

    kind: Literal["value_truthy"]


class ValueClose(_Typed):
    """`math.isclose(value, target)` with Python's default tolerances."""

    kind: Literal["value_close"]
    value: Number
    rel_tol: float = Field(default=1e-9, ge=0)
    abs_tol: float = Field(default=0.0, ge=0)


class ValueLength(_Typed):
    """`len(value)` within bounds (`len(v['value']) == 2`; `>= 0` only asks for a list, object or text)."""

    kind: Literal["value_length"]
    min: StrictInt | None = None
    max: StrictInt | None = None


class ValuePowerOfTwoMultiple(_Typed):
    """`base x 2^N` for an integer N: `is_integer(math.log2(v['value'] / base))`."""

    kind: Literal["value_power_of_two_multiple"]
    base: Number
    tolerance: float = Field(default=1e-5, gt=0, description="MLPerf's is_integer: |round(x) - x| < tolerance.")


class ValueMultipleOf(_Typed):
    """An integer multiple of `step` (zero and negatives included): `is_integer(v['value'] / step)`."""

    kind: Literal["value_multiple_of"]
    step: Number
    tolerance: float = Field(default=1e-5, gt=0, description="MLPerf's is_integer: |round(x) - x| < tolerance.")


class ValueHasKey(_Typed):
    """`key in value`: a field of an object value (a list's item, a text's part, as Python's `in`)."""

    kind: Literal["value_has_key"]
    key: StrictStr


class FieldRange(Bounds):
    """Bounds of one field of an object value."""

    field: StrictStr


class ValueFieldsInRange(_Typed):
    """Fields of an object value within bounds, tested in order and stopping at the first that fails."""

    kind: Literal["value_fields_in_range"]
    fields: list[FieldRange] = Field(min_length=1)


# Checks on the line's metadata ----------------------------------------------------------------------------------


class MetadataAnyOf(_Typed):
    """The metadata holds at least one of `keys` (`'epoch_num' in v['metadata']`, `(...) | (...)`)."""

    kind: Literal["metadata_any_of"]
    keys: list[StrictStr] = Field(min_length=1)


class MetadataImplies(_Typed):
    """When the metadata holds `present`, it also holds `requires`."""

    kind: Literal["metadata_implies"]
    present: StrictStr
    requires: StrictStr


class MetadataRange(_Typed, Bounds):
    """A metadata number within bounds; when `only_when_present`, a missing key passes, else it fails."""

    kind: Literal["metadata_range"]
    key: StrictStr
    only_when_present: bool = False


# Checks on the checker's state ----------------------------------------------------------------------------------


class StateTrue(_Typed):
    """A state entry is true (`s['run_started']`); an entry never set fails."""

    kind: Literal["state_true"]
    name: StrictStr


class StateFalse(_Typed):
    """A state entry is false (`not s['init_stopped']`); an entry never set fails."""

    kind: Literal["state_false"]
    name: StrictStr


class StateEq(_Typed):
    """A state entry equals `value` (`s['init_stopped'] == True`)."""

    kind: Literal["state_eq"]
    name: StrictStr
    value: Literal_


class WithinMinutesOfFirst(_Typed):
    """The line's time is less than N minutes after the time in state `first` (the first init_start).

    N is `minutes`, or the state entry `minutes_state` (30 closed, 240 open, set by submission_division).
    """

    kind: Literal["within_minutes_of_first"]
    first: StrictStr
    minutes: Number | None = None
    minutes_state: StrictStr | None = None

    @model_validator(mode="after")
    def _one_limit(self) -> WithinMinutesOfFirst:
        if (self.minutes is None) == (self.minutes_state is None):
            raise ValueError("give exactly one of minutes and minutes_state")
        return self


# Arithmetic checks of the LLM benchmarks ------------------------------------------------------------------------


class ValueScaledEqStateScaled(_Typed):
    """`value x value_factor == state[state] x state_factor`, exactly (llama31_405b's learning rate)."""

    kind: Literal["value_scaled_eq_state_scaled"]
    value_factor: Number
    state: StrictStr
    state_factor: Number


class ValueEqConstantMinusState(_Typed):
    """`value == constant - state[state]` (llama31_8b's decay steps: 1,200,000 minus the warmup steps)."""

    kind: Literal["value_eq_constant_minus_state"]
    constant: Number
    state: StrictStr


class ValueEqCeilQuotientMinusState(_Typed):
    """`value == ceil(dividend x dividend_factor / state[divisor_state]) - state[state]`."""

    kind: Literal["value_eq_ceil_quotient_minus_state"]
    dividend: Number
    dividend_factor: Number
    divisor_state: StrictStr
    state: StrictStr


Check = Annotated[
    ValueEq
    | ValueNe
    | ValueIn
    | ValueRange
    | ValueTruthy
    | ValueClose
    | ValueLength
    | ValuePowerOfTwoMultiple
    | ValueMultipleOf
    | ValueHasKey
    | ValueFieldsInRange
    | MetadataAnyOf
    | MetadataImplies
    | MetadataRange
    | StateTrue
    | StateFalse
    | StateEq
    | WithinMinutesOfFirst
    | ValueScaledEqStateScaled
    | ValueEqConstantMinusState
    | ValueEqCeilQuotientMinusState,
    Field(discriminator="kind"),
]


# State updates (MLPerf's POST) ----------------------------------------------------------------------------------


class SetConstant(_Typed):
    """`s[name] = value`."""

    kind: Literal["set_constant"]
    name: StrictStr
    value: Literal_


class SetValue(_Typed):
    """`s[name] = v['value']`: remember the line's value."""

    kind: Literal["set_value"]
    name: StrictStr


class SetMinTime(_Typed):
    """`s[name] = min(s[name], ll.timestamp)`: remember the earliest time."""

    kind: Literal["set_min_time"]
    name: StrictStr


class SetChoice(_Typed):
    """`s[name] = then if v['value'] == when_value else otherwise`."""

    kind: Literal["set_choice"]
    name: StrictStr
    when_value: Literal_
    then: Literal_
    otherwise: Literal_


class SetCeilQuotient(_Typed):
    """`s[name] = ceil(dividend x dividend_factor / s[divisor_state])`."""

    kind: Literal["set_ceil_quotient"]
    name: StrictStr
    dividend: Number
    dividend_factor: Number
    divisor_state: StrictStr


StateUpdate = Annotated[SetConstant | SetValue | SetMinTime | SetChoice | SetCeilQuotient, Field(discriminator="kind")]


class Include(_Typed):
    """Enqueue another rule file (MLPerf's enqueue_config), named by `pattern` with `{value}` the line's value."""

    pattern: StrictStr = Field(description="MLPerf's path of the file, e.g. 'training_5.0.0/closed_{value}.yaml'.")
    lower: bool = Field(default=False, description="Lower-case the value first (a value that is no text fails).")
    when_value: Literal_ | None = Field(default=None, description="Only when the line's value equals this.")


Req = Literal["exactly_one", "at_least_one", "at_least", "at_least_one_or", "optional"]


class KeyRecord(Strict):
    """What one rule file says about one key: how often it occurs, what each line must pass, what it sets."""

    key: StrictStr
    req: Req | None = Field(default=None, description="MLPerf's REQ; none: the count is not checked.")
    at_least: StrictInt | None = Field(default=None, ge=1, description="The count for req at_least.")
    or_keys: list[StrictStr] | None = Field(default=None, description="The other keys of req at_least_one_or.")
    checks: list[Check] = Field(default_factory=list, description="MLPerf's CHECK: every line must pass each.")
    at_least_one_check: Check | None = Field(
        default=None, description="MLPerf's ATLEAST_ONE_CHECK: one line at least must pass it (the target quality)."
    )
    includes: list[Include] = Field(default_factory=list, description="MLPerf's POST: rule files to enqueue.")
    sets: list[StateUpdate] = Field(default_factory=list, description="MLPerf's POST: state updates, after includes.")

    @model_validator(mode="after")
    def _req_fields(self) -> KeyRecord:
        if (self.req == "at_least") != (self.at_least is not None):
            raise ValueError("at_least is given exactly when req is at_least")
        if (self.req == "at_least_one_or") != bool(self.or_keys):
            raise ValueError("or_keys are given exactly when req is at_least_one_or")
        return self


class Aggregate(Strict):
    """stable_diffusion's BEGIN: one virtual line per group of `source_key` lines that carry `metric_field`.

    Each virtual line has key `target_key`, the latest time of its group, and as value an object
    `{group_field: group, <metric>: value, ...}`; the virtual lines follow the log's lines.
    """

    source_key: StrictStr
    metric_field: StrictStr
    group_field: StrictStr
    target_key: StrictStr
    mlperf_text: str | None = None


class RuleFile(Strict):
    """One of MLPerf's rule files: its BEGIN (state and aggregation) and its key records in file order."""

    initial_state: dict[str, Literal_] | None = Field(default=None, description="BEGIN's `s.update({...})`.")
    aggregate: Aggregate | None = None
    records: list[KeyRecord] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_keys(self) -> RuleFile:
        keys = [r.key for r in self.records]
        if len(keys) != len(set(keys)):
            raise ValueError(f"a key has two records: {sorted(k for k in set(keys) if keys.count(k) > 1)}")
        return self


class Source(Strict):
    package: Literal["mlperf-logging"]
    version: StrictStr
    folder: StrictStr = Field(description="The rule folder inside mlperf_logging/compliance_checker.")


class MlperfRuleSet(Strict):
    """The typed rules of one MLPerf ruleset; `files` are keyed by MLPerf's file name without `.yaml`
    (a file of another ruleset's folder, which a rule includes, by `folder/name`)."""

    format: Literal["specbench.mlperf-rules"]
    format_version: Literal[1]
    usage: Usage
    ruleset: StrictStr = Field(pattern=r"^\d+\.\d+\.\d+$")
    source: Source
    entry: StrictStr = Field(description="The file the checker starts from (common).")
    files: dict[str, RuleFile]
    not_ported: dict[str, StrictStr] = Field(
        default_factory=dict,
        description="MLPerf's rule files of the folder that hold an item no typed kind expresses, keyed like "
        "`files`, with the reason: a log that reaches one cannot be judged, and fails.",
    )

    @model_validator(mode="after")
    def _ported_or_not(self) -> MlperfRuleSet:
        both = sorted(set(self.files) & set(self.not_ported))
        if both:
            raise ValueError(f"files both ported and not ported: {both}")
        return self

    @property
    def folder(self) -> str:
        return f"{self.usage}_{self.ruleset}"

    def file_id(self, path: str) -> str:
        """The key in `files` of MLPerf's path of a rule file ('training_5.0.0/closed_bert.yaml' -> 'closed_bert')."""
        name = path.removesuffix(".yaml")
        own = self.folder + "/"
        return name[len(own) :] if name.startswith(own) else name

    def file_path(self, file_id: str) -> str:
        """MLPerf's path of a rule file ('closed_bert' -> 'training_5.0.0/closed_bert.yaml')."""
        return (file_id if "/" in file_id else f"{self.folder}/{file_id}") + ".yaml"


RULESETS: tuple[tuple[Usage, str], ...] = (
    ("training", "3.1.0"),
    ("training", "4.0.0"),
    ("training", "4.1.0"),
    ("training", "5.0.0"),
    ("training", "5.1.0"),
    ("hpc", "1.0.0"),
    ("hpc", "2.0.0"),
    ("hpc", "3.0.0"),
)
"""The rulesets with typed rules under rules/mlperf/."""


def rules_file_name(usage: str, ruleset: str) -> str:
    return f"{usage}-{ruleset}.yaml"


@cache
def load_mlperf_rules(usage: str, ruleset: str) -> MlperfRuleSet:
    """The committed typed rules of one ruleset (safe YAML, then the model; read once per process)."""
    if (usage, ruleset) not in RULESETS:
        known = [f"{u} {r}" for u, r in RULESETS]
        hint = did_you_mean(f"{usage} {ruleset}", known)
        raise UsageError(f"no typed MLPerf rules for {usage} {ruleset}; known: {', '.join(known)}{hint}")
    doc = load_builtin_yaml(data_root().joinpath(*RULES_FOLDER, rules_file_name(usage, ruleset)))
    found = doc.data.get("format_version")
    if doc.data.get("format") != FORMAT or found != FORMAT_VERSION:
        where = doc.locate(("format_version",))
        message = f"MLPerf rules format {doc.data.get('format')!r} version {found!r} not supported"
        raise InputError([Problem(where, f"{message} (this specbench reads {FORMAT!r} version {FORMAT_VERSION})")])
    rules: MlperfRuleSet = validate_model(MlperfRuleSet, doc)
    return rules
