"""Generate `docs/spec-reference.md` from the pydantic models: `python -m specbench.spec.reference`."""

from __future__ import annotations

import re
import sys
import typing
from collections.abc import Collection
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from specbench.spec.models import RuleSet, Spec
from specbench.spec.rules import Rule, RuleBase
from specbench.spec.system import SubmissionMeta, SystemDescription

HEADER = """# Spec reference

Generated from the pydantic models by `python -m specbench.spec.reference > docs/spec-reference.md`;
a test fails when this file is out of date. The JSON Schemas in `schemas/` come from the same models.

Every file-format model refuses unknown keys and non-finite numbers. A spec usually starts with
`extends: hpcai500` (or a relative path such as `../rules/hpcai500.yaml`) to inherit the nine
layers and the three levels; local keys win over inherited ones, lists and empty mappings
replace whole, and `extends` chains are followed up to 8 deep with cycles refused. Every profile is
merged and validated when a spec loads; `show` and `execute` refuse a profile whose own
hyperparameters break the spec's rules at the chosen level.

A spec with an executor names only parameters that executor reads: every key of `hyperparameters`
and of `throughput.sweep` (the spec's and each profile's), of `rules.workload` and of a workload
rule's `when` is one of the executor's hyperparameters or settings, as `specbench/spec/params.py`
declares them. Another name (a typo such as `optimiser`) is refused when the spec loads, located at
its file, line and column, with the closest known name ("did you mean") and the names the executor
reads; an unknown `workload.executor` likewise. A spec without an executor (an MLPerf benchmark whose
results are imported) names what MLPerf logs, unchecked. The validator holds a submission's declared
hyperparameters and settings to the same names (SB-EQV-006, docs/rules.md).

`specbench show SPEC --level L` prints, under `resolved`, the rules that bind at the level
(`effective_rules`) and the reference values the level holds as stated beyond them
(`follows_reference`, what the validator checks as SB-CNS-002): at the hardware level, which has no
scaling rules, every reference value of a fixed layer that no rule of its own chooses (a `reported`
batch size, a `scaled_with` learning rate, a `range` warm-up all stay at the reference); at the
system level, only those that no rule governs. Its note says when the rules are all that binds.
"""


RULE_MODELS: list[type[RuleBase]] = list(typing.get_args(typing.get_args(Rule)[0]))

RULE_KINDS_INTRO = """A rule constrains one parameter of one layer, under `rules.LAYER.PARAMETER` of a spec or rule set,
for example `rules: {workload: {optimizer: {kind: fixed, value: sgd}}}`. Its `kind` selects one of the
models below, and one pure function per kind evaluates it; nothing in a rule is ever executed.
"""


def _kind(model: type[BaseModel]) -> str:
    """The `kind` a rule model is selected by."""
    return str(typing.get_args(model.model_fields["kind"].annotation)[0])


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is type(None):
        return "null"
    if annotation in RULE_MODELS:
        return f"[{_kind(annotation)}](#{_kind(annotation)})"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"[{annotation.__name__}](#{annotation.__name__.lower()})"
    if origin is typing.Literal:
        return " \\| ".join(f"`{a}`" for a in args)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return " \\| ".join(_type_name(a) for a in args)
    if origin is list:
        return f"list of {_type_name(args[0])}"
    if origin is dict:
        return f"mapping {_type_name(args[0])} → {_type_name(args[1])}"
    if annotation is Any:
        return "any"
    return getattr(annotation, "__name__", str(annotation))


def _nested_models(annotation: Any) -> list[type[BaseModel]]:
    found: list[type[BaseModel]] = []
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        found.append(annotation)
    for arg in typing.get_args(annotation):
        found.extend(_nested_models(arg))
    return found


def _default(info: Any) -> str:
    if info.is_required():
        return "required"
    if info.default_factory is not None:
        value = info.default_factory()
        return f"`{value!r}`" if value not in ({}, []) else "empty"
    if info.default is PydanticUndefined:
        return ""
    return f"`{info.default!r}`"


def _table(model: type[BaseModel], skip: Collection[str] = ()) -> list[str]:
    lines = ["| key | type | default | description |", "|---|---|---|---|"]
    for name, info in model.model_fields.items():
        if name in skip:
            continue
        description = (info.description or "").replace("|", "\\|").replace("\n", " ")
        lines.append(f"| `{name}` | {_type_name(info.annotation)} | {_default(info)} | {description} |")
    return lines


def _model_section(model: type[BaseModel]) -> str:
    doc = (model.__doc__ or "").strip()
    return "\n".join([f"### {model.__name__}", "", doc, "", *_table(model)]) + "\n"


def _flow(value: Any) -> str:
    """A value as YAML flow style: `{kind: fixed, value: sgd}`."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str) and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", value):
        return f'"{value}"'
    return str(value)


def _rule_kind_section(model: type[BaseModel]) -> str:
    """One kind: what it accepts, its own fields (those it shares are listed once) and its example."""
    extra = model.model_config.get("json_schema_extra")
    found = extra.get("examples") if isinstance(extra, dict) else None
    examples = found if isinstance(found, list) else []
    own = _table(model, skip={"kind", *RuleBase.model_fields})
    lines = [f"### {_kind(model)}", "", (model.__doc__ or "").strip(), ""]
    lines += own if len(own) > 2 else ["No fields besides `kind` and those every kind shares."]
    lines += ["", "Example: " + ", ".join(f"`{_flow(e)}`" for e in examples)] if examples else []
    return "\n".join(lines) + "\n"


def _rule_kinds() -> list[str]:
    """The rule kinds section: the fields they share, then each kind with its own fields and an example."""
    shared = ["### Fields every rule kind shares", "", *_table(RuleBase)]
    return [RULE_KINDS_INTRO, "\n".join(shared) + "\n", *(_rule_kind_section(m) for m in RULE_MODELS)]


def _collect(roots: list[type[BaseModel]]) -> list[type[BaseModel]]:
    ordered: list[type[BaseModel]] = []
    queue = list(roots)
    while queue:
        model = queue.pop(0)
        if model in ordered:
            continue
        ordered.append(model)
        for info in model.model_fields.values():
            queue.extend(m for m in _nested_models(info.annotation) if m not in ordered)
    return ordered


def render() -> str:
    parts = [HEADER]
    sections: list[tuple[str, list[type[BaseModel]]]] = [
        ("Spec files (`specs/*.yaml`)", [Spec]),
        ("Rule kinds", []),
        ("Rule sets (`rules/*.yaml`)", [RuleSet]),
        ("Submission metadata (`system.yaml`, `submission.yaml`)", [SystemDescription, SubmissionMeta]),
    ]
    done: set[type[BaseModel]] = set(RULE_MODELS)
    for title, roots in sections:
        parts.append(f"## {title}\n")
        if title == "Rule kinds":
            parts.extend(_rule_kinds())
        for model in _collect(roots):
            if model in done:
                continue
            done.add(model)
            parts.append(_model_section(model))
    return "\n".join(parts)


if __name__ == "__main__":
    sys.stdout.write(render())
