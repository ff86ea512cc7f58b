"""Generate `docs/spec-reference.md` from the pydantic models: `python -m specbench.spec.reference`."""

from __future__ import annotations

import sys
import typing
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from specbench.spec.models import RuleSet, Spec
from specbench.spec.rules import Rule
from specbench.spec.system import SubmissionMeta, SystemDescription

HEADER = """# Spec reference

Generated from the pydantic models by `python -m specbench.spec.reference > docs/spec-reference.md`;
a test fails when this file is out of date. The JSON Schemas in `schemas/` come from the same models.

Every file-format model refuses unknown keys and non-finite numbers. A spec usually starts with
`extends: hpcai500` (or a relative path such as `../rules/hpcai500.yaml`) to inherit the nine
layers and the three levels; local keys win over inherited ones, lists and empty mappings
replace whole, and `extends` chains are followed up to 8 deep with cycles refused.
"""


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is type(None):
        return "null"
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


def _model_section(model: type[BaseModel]) -> str:
    doc = (model.__doc__ or "").strip()
    lines = [f"### {model.__name__}", "", doc, "", "| key | type | default | description |", "|---|---|---|---|"]
    for name, info in model.model_fields.items():
        description = (info.description or "").replace("|", "\\|").replace("\n", " ")
        lines.append(f"| `{name}` | {_type_name(info.annotation)} | {_default(info)} | {description} |")
    return "\n".join(lines) + "\n"


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
    sections = [
        ("Spec files (`specs/*.yaml`)", [Spec]),
        ("Rule kinds", list(typing.get_args(typing.get_args(Rule)[0]))),
        ("Rule sets (`rules/*.yaml`)", [RuleSet]),
        ("Submission metadata (`system.yaml`, `submission.yaml`)", [SystemDescription, SubmissionMeta]),
    ]
    done: set[type[BaseModel]] = set()
    for title, roots in sections:
        parts.append(f"## {title}\n")
        for model in _collect(roots):
            if model in done:
                continue
            done.add(model)
            parts.append(_model_section(model))
    return "\n".join(parts)


if __name__ == "__main__":
    sys.stdout.write(render())
