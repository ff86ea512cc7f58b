"""Typed rule kinds: each a small pydantic model plus one pure evaluation function.

A rule constrains one named parameter of one layer. `evaluate(rule, value, params)` says
whether a value complies, and what was expected, without ever executing text from a file.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from specbench.registry import Registry

Scalar = bool | int | float | str
Level = Literal["hardware", "system", "free"]
LEVELS: tuple[Level, ...] = ("hardware", "system", "free")
Cardinality = Literal["exactly_one", "at_most_one", "at_least_one", "any"]


class RuleBase(BaseModel):
    """Fields every rule kind shares (each kind's validator built when first used, as `Strict`'s)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)

    levels: list[Level] | None = Field(
        default=None,
        description="Levels at which the rule binds. Default: the levels at which its layer is fixed; "
        "elsewhere the parameter need only be reported.",
    )
    when: dict[str, Scalar | list[Scalar]] | None = Field(
        default=None,
        description="The rule applies only when each named parameter of the same layer has the given value, "
        "or one of the values of a list (for example `{optimizer: lars}`, `{model: [800M, 13B]}`).",
    )
    cardinality: Cardinality = Field(
        default="exactly_one",
        description="How many times the parameter may be stated (MLPerf's vocabulary): exactly_one, "
        "at_most_one, at_least_one or any.",
    )
    note: str | None = Field(default=None, description="Why the rule exists; shown in findings.")


class FixedRule(RuleBase):
    """The value must equal `value` (numbers within `rel_tol`)."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"kind": "fixed", "value": "sgd"}]})

    kind: Literal["fixed"]
    value: Scalar = Field(description="The one value allowed; a text, a number or true/false, compared with its type.")
    rel_tol: float = Field(default=0.0, ge=0, description="Relative tolerance for numbers.")


class OneOfRule(RuleBase):
    """The value must be one of `values`."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"kind": "one_of", "values": ["fp32", "tf32", "bf16", "fp16"], "levels": ["hardware", "system"]}
            ]
        }
    )

    kind: Literal["one_of"]
    values: list[Scalar] = Field(
        min_length=1, description="The values allowed (at least one), each compared with its type."
    )


class RangeRule(RuleBase):
    """A number with `min <= value <= max` (either bound may be left out)."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"kind": "range", "min": 0, "max": 10}]})

    kind: Literal["range"]
    min: float | None = Field(default=None, description="The smallest value allowed; none: no lower bound.")
    max: float | None = Field(default=None, description="The largest value allowed; none: no upper bound.")

    @model_validator(mode="after")
    def _bounds(self) -> RangeRule:
        if self.min is None and self.max is None:
            raise ValueError("a range needs min, max or both")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min {self.min} is greater than max {self.max}")
        return self


class MultipleOfRule(RuleBase):
    """A positive integer multiple of `value` (a batch size multiple of 8, a learning rate multiple of 0.001)."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"kind": "multiple_of", "value": 0.001}]})

    kind: Literal["multiple_of"]
    value: float = Field(gt=0, description="The step: the value must be 1, 2, 3, ... times it.")


class PowerOfTwoMultipleRule(RuleBase):
    """`base * 2**N` for an integer N in [min_exponent, max_exponent] (MLPerf's weight decay = 1e-4 x 2^N)."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"kind": "power_of_two_multiple", "base": 0.0001}]})

    kind: Literal["power_of_two_multiple"]
    base: float = Field(gt=0, description="The value at N = 0.")
    min_exponent: int | None = Field(default=None, description="The smallest N allowed; none: no lower bound.")
    max_exponent: int | None = Field(default=None, description="The largest N allowed; none: no upper bound.")
    rel_tol: float = Field(default=1e-9, ge=0, description="Relative tolerance of the match to base x 2^N.")


class ScaledWithRule(RuleBase):
    """`reference * (param / reference_param)**exponent`, e.g. learning rate linear in global batch size."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"kind": "scaled_with", "param": "global_batch_size", "reference": 0.256, "reference_param": 256}
            ]
        }
    )

    kind: Literal["scaled_with"]
    param: str = Field(description="The parameter of the same layer this one scales with.")
    reference: float = Field(description="This parameter's value when `param` equals `reference_param`.")
    reference_param: float = Field(gt=0, description="The value of `param` at which this parameter is `reference`.")
    exponent: float = Field(default=1.0, description="1 for linear scaling, 0.5 for square-root scaling.")
    rel_tol: float = Field(default=1e-6, ge=0, description="Relative tolerance of the match to the scaled value.")


class ReportedRule(RuleBase):
    """The value must be stated; any value is accepted."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"kind": "reported"}]})

    kind: Literal["reported"]


class FreeRule(RuleBase):
    """Anything, including absence."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"kind": "free"}]})

    kind: Literal["free"]


Rule = Annotated[
    FixedRule
    | OneOfRule
    | RangeRule
    | MultipleOfRule
    | PowerOfTwoMultipleRule
    | ScaledWithRule
    | ReportedRule
    | FreeRule,
    Field(discriminator="kind"),
]


@dataclass(frozen=True)
class Verdict:
    """The outcome of one rule on one value."""

    ok: bool
    expected: str


Evaluator = Callable[[Any, Any, Mapping[str, Any]], Verdict]
RULE_KINDS: Registry[Evaluator] = Registry("rule kind")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _close(a: float, b: float, rel_tol: float) -> bool:
    return math.isclose(a, b, rel_tol=rel_tol, abs_tol=0.0) if rel_tol else a == b


def _fixed(rule: FixedRule, value: Any, params: Mapping[str, Any]) -> Verdict:
    expected = repr(rule.value) + (f" (within {rule.rel_tol:g} relative)" if rule.rel_tol else "")
    if _is_number(rule.value) and _is_number(value):
        return Verdict(_close(float(value), float(rule.value), rule.rel_tol), expected)
    return Verdict(value == rule.value and type(value) is type(rule.value), expected)


def _one_of(rule: OneOfRule, value: Any, params: Mapping[str, Any]) -> Verdict:
    expected = "one of " + ", ".join(repr(v) for v in rule.values)
    return Verdict(any(value == v and type(value) is type(v) for v in rule.values), expected)


def _range(rule: RangeRule, value: Any, params: Mapping[str, Any]) -> Verdict:
    low = "-inf" if rule.min is None else f"{rule.min:g}"
    high = "inf" if rule.max is None else f"{rule.max:g}"
    expected = f"a number in [{low}, {high}]"
    if not _is_number(value):
        return Verdict(False, expected)
    ok = (rule.min is None or value >= rule.min) and (rule.max is None or value <= rule.max)
    return Verdict(ok, expected)


def _multiple_of(rule: MultipleOfRule, value: Any, params: Mapping[str, Any]) -> Verdict:
    expected = f"a positive multiple of {rule.value:g}"
    if not _is_number(value) or value <= 0:
        return Verdict(False, expected)
    if isinstance(value, int) and float(rule.value).is_integer():
        return Verdict(value % int(rule.value) == 0, expected)
    ratio = value / rule.value
    return Verdict(round(ratio) >= 1 and abs(ratio - round(ratio)) <= 1e-9 * max(1.0, ratio), expected)


def _power_of_two_multiple(rule: PowerOfTwoMultipleRule, value: Any, params: Mapping[str, Any]) -> Verdict:
    span = ""
    if rule.min_exponent is not None or rule.max_exponent is not None:
        span = f" with N in [{rule.min_exponent if rule.min_exponent is not None else '-inf'}, "
        span += f"{rule.max_exponent if rule.max_exponent is not None else 'inf'}]"
    expected = f"{rule.base:g} x 2^N for an integer N{span}"
    if not _is_number(value) or value <= 0:
        return Verdict(False, expected)
    exponent = round(math.log2(value / rule.base))
    in_span = (rule.min_exponent is None or exponent >= rule.min_exponent) and (
        rule.max_exponent is None or exponent <= rule.max_exponent
    )
    ok = in_span and math.isclose(value, rule.base * 2.0**exponent, rel_tol=max(rule.rel_tol, 1e-12))
    return Verdict(ok, expected)


def _scaled_with(rule: ScaledWithRule, value: Any, params: Mapping[str, Any]) -> Verdict:
    other: Any = params.get(rule.param)
    if not _is_number(other) or other <= 0:
        return Verdict(False, f"a value scaled with {rule.param}, which is missing or not a positive number")
    target = rule.reference * (other / rule.reference_param) ** rule.exponent
    expected = f"{target:.6g} = {rule.reference:g} x ({rule.param} {other:g} / {rule.reference_param:g})" + (
        f"^{rule.exponent:g}" if rule.exponent != 1 else ""
    )
    return Verdict(_is_number(value) and _close(float(value), target, rule.rel_tol), expected)


def _reported(rule: ReportedRule, value: Any, params: Mapping[str, Any]) -> Verdict:
    return Verdict(value is not None and value != "", "any stated value")


def _free(rule: FreeRule, value: Any, params: Mapping[str, Any]) -> Verdict:
    return Verdict(True, "anything")


for _kind, _fn in (
    ("fixed", _fixed),
    ("one_of", _one_of),
    ("range", _range),
    ("multiple_of", _multiple_of),
    ("power_of_two_multiple", _power_of_two_multiple),
    ("scaled_with", _scaled_with),
    ("reported", _reported),
    ("free", _free),
):
    RULE_KINDS.register(_kind, _fn)  # type: ignore[arg-type]


def evaluate(rule: BaseModel, value: Any, params: Mapping[str, Any]) -> Verdict:
    """Evaluate one rule on one value; `params` are the other parameters of the same layer."""
    kind = rule.kind  # type: ignore[attr-defined]
    return RULE_KINDS.get(kind)(rule, value, params)


def applies(rule: BaseModel, params: Mapping[str, Any]) -> bool:
    """Whether a rule's `when` condition holds for the given parameters."""
    when = rule.when  # type: ignore[attr-defined]
    return not when or all(_matches(params.get(k), v) for k, v in when.items())


def _matches(value: Any, wanted: Scalar | list[Scalar]) -> bool:
    return any(value == w for w in wanted) if isinstance(wanted, list) else value == wanted


def count_ok(cardinality: Cardinality, count: int) -> bool:
    """Whether a parameter stated `count` times satisfies the cardinality."""
    return {
        "exactly_one": count == 1,
        "at_most_one": count <= 1,
        "at_least_one": count >= 1,
        "any": True,
    }[cardinality]
