"""Loading specs and rule sets: safe YAML, `extends:` with cycle detection, located validation errors."""

from __future__ import annotations

import copy
import hashlib
import json
import os
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from specbench.errors import InputError, Location, Problem
from specbench.registry import did_you_mean
from specbench.spec import builtin
from specbench.spec.models import RULESET_FORMAT_VERSION, SPEC_FORMAT_VERSION, RuleSet, Spec
from specbench.spec.numbers import first_bad_number
from specbench.spec.params import EXECUTOR_PARAMS
from specbench.spec.parsed import is_builtin, load_builtin_yaml
from specbench.spec.rules import RULE_KINDS
from specbench.spec.yamlio import Document, JsonPath, Position, format_path, load_yaml

MAX_EXTENDS_DEPTH = 8
IDENTITY_KEYS = ("format_version", "id", "version", "title", "description", "extends", "based_on")
PROFILE_OVERRIDABLE = ("workload", "quality", "budget", "throughput", "hyperparameters", "measurement")


@dataclass
class LoadedSpec:
    """A spec as loaded and validated, with the merged document that locates each of its values."""

    spec: Spec
    document: Document
    path: Path


def _problem(doc: Document, path: JsonPath, message: str) -> Problem:
    return Problem(doc.locate(path), message)


def load_spec(path: str | Path) -> LoadedSpec:
    """Load a spec file (or a built-in spec by id) and validate it; raise InputError with every problem."""
    spec_path = builtin.find_spec(str(path))
    return _validated(spec_path, _load_merged(spec_path, _allowed_root(spec_path), chain=()))


def _validated(spec_path: Path, doc: Document) -> LoadedSpec:
    """A spec's merged document validated, each profile applied once to check it."""
    _check_format(doc, SPEC_FORMAT_VERSION, "spec")
    spec = validate_model(Spec, doc)
    _check_profiles(spec, doc)
    _check_executor_params(spec, doc)
    loaded = LoadedSpec(spec, doc, spec_path)
    for profile in spec.profiles:
        apply_profile(loaded, profile)
    return loaded


def load_spec_cached(path: str | Path) -> LoadedSpec:
    """load_spec of a spec file, once per process for its path and modification time (a LoadedSpec is never
    changed once loaded): the import, the validator and the scoring each ask for the same built-in specs."""
    return _load_once(str(path), os.stat(path).st_mtime_ns)


@cache
def _load_once(path: str, mtime_ns: int) -> LoadedSpec:
    return _validated(builtin.find_spec(path), _merged_once(path, mtime_ns))


def spec_data(path: str | Path) -> dict[str, Any]:
    """A spec file's data with its `extends:` merged in, not validated, once per process for its path and
    modification time (not to be changed): enough to tell which specs a task needs, each then loaded whole
    (load_spec_cached). Raises InputError where load_spec would, for a file that does not read or merge."""
    spec_path = builtin.find_spec(str(path))
    data: dict[str, Any] = _merged_once(str(spec_path), os.stat(spec_path).st_mtime_ns).data
    return data


@cache
def _merged_once(path: str, mtime_ns: int) -> Document:
    """The merged document of a spec file (load_spec_cached validates this one)."""
    spec_path = builtin.find_spec(path)
    return _load_merged(spec_path, _allowed_root(spec_path), chain=())


def load_ruleset(path: str | Path) -> RuleSet:
    """Load a rule set file and validate it."""
    doc = _load_file(Path(path))
    _check_format(doc, RULESET_FORMAT_VERSION, "rule set")
    return validate_model(RuleSet, doc)


def _allowed_root(spec_path: Path) -> Path:
    """Files a spec may extend lie under its folder's parent (e.g. `specs/` and `rules/` of one project)."""
    return spec_path.resolve().parent.parent


def _check_format(doc: Document, supported: int, what: str) -> None:
    found = doc.data.get("format_version")
    if found is None:
        raise InputError(
            [
                _problem(
                    doc, (), f"missing required key 'format_version' (this specbench reads {what} format {supported})"
                )
            ]
        )
    if found != supported:
        raise InputError(
            [
                _problem(
                    doc,
                    ("format_version",),
                    f"{what} format version {found!r} not supported (this specbench reads {supported})",
                )
            ]
        )


def _resolve_extends(doc: Document, value: Any, root: Path) -> Path:
    here = Path(doc.file)
    if not isinstance(value, str) or not value:
        raise InputError([_problem(doc, ("extends",), f"expected a path or built-in id as a string, found {value!r}")])
    found = builtin.find_extendable(value)
    if found is not None:
        return found
    if Path(value).is_absolute():
        raise InputError(
            [_problem(doc, ("extends",), f"expected a relative path or a built-in id, found absolute path {value!r}")]
        )
    target = (builtin.home_folder(here) / value).resolve()
    roots = [root.resolve(), builtin.data_root().resolve()]
    if not any(target.is_relative_to(r) for r in roots):
        raise InputError(
            [
                _problem(
                    doc,
                    ("extends",),
                    f"expected a file under the spec's project folder or a built-in id, found {value!r}, which points outside",
                )
            ]
        )
    if not target.is_file():
        known = builtin.extendable_ids()
        raise InputError(
            [
                _problem(
                    doc,
                    ("extends",),
                    f"{value!r} is neither a file nor a built-in id{did_you_mean(value, known)}; built-in: {', '.join(known)}",
                )
            ]
        )
    return target


def _load_file(path: Path) -> Document:
    """One YAML file; a built-in one from its parsed copy (the same Document, read faster)."""
    return load_builtin_yaml(path) if is_builtin(path) else load_yaml(path)


def _load_merged(path: Path, root: Path, chain: tuple[Path, ...]) -> Document:
    doc = _load_file(path)
    if "extends" not in doc.data:
        return doc
    target = _resolve_extends(doc, doc.data["extends"], root)
    if target in chain or target == path.resolve():
        cycle = " -> ".join(p.name for p in (*chain, path.resolve(), target))
        raise InputError([_problem(doc, ("extends",), f"extends forms a cycle: {cycle}")])
    if len(chain) >= MAX_EXTENDS_DEPTH:
        raise InputError([_problem(doc, ("extends",), f"extends chain deeper than {MAX_EXTENDS_DEPTH}")])
    base = _load_merged(target, root, (*chain, path.resolve()))
    return _merge(base, doc)


def _merge(base: Document, local: Document) -> Document:
    """Deep-merge `local` over `base` (local keys win); identity keys of `base` are not inherited."""
    base_data = {k: v for k, v in base.data.items() if k not in IDENTITY_KEYS}
    data = deep_merge(base_data, local.data)
    ident = f"{base.data.get('id', Path(base.file).stem)}@{base.data.get('version', '?')}"
    data["based_on"] = [*base.data.get("based_on", []), ident]
    positions: dict[JsonPath, Position] = {
        p: pos for p, pos in base.positions.items() if not (p and p[0] in IDENTITY_KEYS)
    }
    overridden = _replaced_paths(base_data, local.data)
    positions = {
        p: pos for p, pos in positions.items() if not any(p[: len(o)] == o and len(p) > len(o) for o in overridden)
    }
    positions.update(local.positions)
    return Document(data, local.file, positions)


def _replaced_paths(base: dict[str, Any], local: dict[str, Any], prefix: JsonPath = ()) -> list[JsonPath]:
    """Paths where a local value replaces (rather than merges into) a base value."""
    out: list[JsonPath] = []
    for key, value in local.items():
        if key in base and isinstance(base[key], dict) and isinstance(value, dict) and value:
            out.extend(_replaced_paths(base[key], value, (*prefix, key)))
        elif key in base:
            out.append((*prefix, key))
    return out


def deep_merge(base: dict[str, Any], local: dict[str, Any]) -> dict[str, Any]:
    """Merge mappings recursively; local values win, lists and empty mappings replace whole."""
    out = copy_data(base)
    for key, value in local.items():
        if isinstance(out.get(key), dict) and isinstance(value, dict) and value:
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy_data(value)
    return out


_SCALARS = frozenset({str, int, float, bool, type(None)})


def copy_data(value: Any) -> Any:
    """copy.deepcopy of plain data (mappings, lists, numbers, strings), a few times faster: a scalar is kept, a
    mapping or list rebuilt; anything else is left to copy.deepcopy. (A document's data shares no parts.)"""
    kind = type(value)
    if kind is dict:
        return {key: copy_data(item) for key, item in value.items()}
    if kind is list:
        return [copy_data(item) for item in value]
    return value if kind in _SCALARS else copy.deepcopy(value)


def validate_model(model: type[BaseModel], doc: Document) -> Any:
    """Validate a document against a model, turning every pydantic error into a located problem."""
    bad = first_bad_number(doc.data, floats=False)  # non-finite floats: the models say where they are allowed
    if bad is not None:
        where, problem = bad
        raise InputError([Problem(doc.locate(where), f"expected a number within range, found {problem}")])
    try:
        return model.model_validate(doc.data)
    except ValidationError as err:
        raise InputError([_from_pydantic(doc, e, model) for e in err.errors()]) from None


def _data_path(data: Any, loc: tuple[Any, ...], missing: bool) -> JsonPath:
    """Map a pydantic error location onto the document, dropping union tags pydantic inserts."""
    out: list[str | int] = []
    node = data
    for i, part in enumerate(loc):
        if (isinstance(node, dict) and part in node) or (
            isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        ):
            out.append(part)
            node = node[part]
        elif missing and i == len(loc) - 1 and isinstance(node, dict):
            out.append(part)
    return tuple(out)


@cache
def _field_names(model: type[BaseModel]) -> list[str]:
    names: set[str] = set()
    stack: list[Any] = [model]
    seen: set[Any] = set()
    while stack:
        item = stack.pop()
        if item in seen:
            continue
        seen.add(item)
        if isinstance(item, type) and issubclass(item, BaseModel):
            for name, info in item.model_fields.items():
                names.add(name)
                stack.append(info.annotation)
        for arg in getattr(item, "__args__", ()) or ():
            stack.append(arg)
        origin = getattr(item, "__origin__", None)
        if origin is not None:
            stack.append(origin)
        metadata = getattr(item, "__metadata__", None)
        if metadata is not None:
            stack.append(item.__origin__)
    return sorted(names)


def _short(value: Any) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _from_pydantic(doc: Document, error: Any, model: type[BaseModel]) -> Problem:
    loc = tuple(error["loc"])
    kind = error["type"]
    text = str(error["msg"]).removeprefix("Value error, ")
    if kind == "value_error" and text.startswith("@"):
        where, _, text = text[1:].partition(" ")
        loc = (*loc, *(int(p) if p.isdigit() else p for p in where.split(".")))
    path = _data_path(doc.data, loc, missing=kind == "missing")
    if kind == "missing":
        message = f"missing required key {str(loc[-1])!r}"
    elif kind == "extra_forbidden":
        key = str(loc[-1])
        message = f"unknown key {key!r}{did_you_mean(key, _field_names(model))}"
    elif kind == "union_tag_invalid":
        found = error.get("ctx", {}).get("tag", error.get("input"))
        known = RULE_KINDS.names()
        message = f"unknown rule kind {found!r}{did_you_mean(str(found), known)}; expected one of {', '.join(known)}"
    elif kind == "union_tag_not_found":
        message = "a rule needs a 'kind' key, e.g. {kind: fixed, value: ...}"
    elif kind == "literal_error":
        expected = error.get("ctx", {}).get("expected", "")
        message = f"expected {expected}, found {_short(error.get('input'))}"
    else:
        message = text[0].lower() + text[1:]
        if not isinstance(error.get("input"), (dict, list)) and kind != "value_error":
            message += f", found {_short(error.get('input'))}"
    return Problem(doc.locate(path), message, "SPEC002")


def _check_profiles(spec: Spec, doc: Document) -> None:
    """Each profile overrides only what may vary with the scale, under names the spec knows."""
    problems = []
    known = sorted(set(spec.hyperparameters) | set(spec.rules.get("workload", {})))
    for name, profile in spec.profiles.items():
        where = ("profiles", name, "overrides")
        for key in profile.overrides:
            if key not in PROFILE_OVERRIDABLE:
                allowed = ", ".join(PROFILE_OVERRIDABLE)
                hint = did_you_mean(key, PROFILE_OVERRIDABLE)
                message = f"a profile may override only {allowed}; found {key!r}{hint}"
                problems.append(_problem(doc, (*where, key), message))
        hyperparameters = profile.overrides.get("hyperparameters")
        for key in hyperparameters if isinstance(hyperparameters, dict) else ():
            hint = did_you_mean(key, known)
            if key not in known and hint:
                message = (
                    f"unknown hyperparameter {key!r}{hint}: neither hyperparameters nor rules.workload name it; "
                    "fix the name, or state a new one under hyperparameters first"
                )
                problems.append(_problem(doc, (*where, "hyperparameters", key), message))
    if problems:
        raise InputError(problems)


def _named_params(spec: Spec) -> list[JsonPath]:
    """Where the spec names a parameter of its executor: its hyperparameters and sweep (and each profile's), its
    workload rules and the hyperparameters their `when` names."""
    paths: list[JsonPath] = [("hyperparameters", key) for key in spec.hyperparameters]
    paths += [("throughput", "sweep", key) for key in (spec.throughput.sweep if spec.throughput else {})]
    for name, profile in spec.profiles.items():
        where = ("profiles", name, "overrides")
        hyperparameters = profile.overrides.get("hyperparameters")
        paths += [(*where, "hyperparameters", key) for key in _keys(hyperparameters)]
        throughput = profile.overrides.get("throughput")
        paths += [(*where, "throughput", "sweep", key) for key in _keys(_keys(throughput).get("sweep"))]
    for param, rule in spec.rules.get("workload", {}).items():
        paths.append(("rules", "workload", param))
        paths += [("rules", "workload", param, "when", key) for key in getattr(rule, "when", None) or {}]
    return paths


def _keys(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _check_executor_params(spec: Spec, doc: Document) -> None:
    """Every parameter the spec names is one its executor reads (a typo is refused with 'did you mean'); a spec
    without an executor (an imported MLPerf benchmark) names what MLPerf logs."""
    executor = spec.workload.executor
    if executor is None:
        return
    if executor not in EXECUTOR_PARAMS:
        known = EXECUTOR_PARAMS.names()
        message = f"unknown executor {executor!r}{did_you_mean(executor, known)}; known: {', '.join(known)}"
        raise InputError([_problem(doc, ("workload", "executor"), message)])
    declared = EXECUTOR_PARAMS.get(executor)
    problems = []
    for path in _named_params(spec):
        name = str(path[-1])
        if not declared.knows(name):
            what = "sweep parameter" if "sweep" in path else "hyperparameter"
            problems.append(_problem(doc, path, declared.unknown(name, what)))
    if problems:
        raise InputError(problems)


ADDED_FIELDS = ("scoring", "mlperf", "listed_results")
"""Spec fields added after specs were released: left out of the digest when unset, so no released digest changes."""


NESTED_ADDED_DEFAULTS: dict[tuple[str, ...], dict[str, Any]] = {
    ("quality",): {"log_key": "eval_accuracy"},
    ("workload", "dataset"): {"counts_checked": True},
    ("workload", "variants", "*"): {"flops_source": ""},
    ("mlperf",): {"epoch_num": "epochs"},
}
"""Fields added to nested parts of a spec after specs were released, left out of the digest at their default so
that an earlier spec (and every submission naming it) keeps its identity; `*` stands for every key of a mapping."""


def _drop_added_defaults(data: dict[str, Any]) -> None:
    for path, defaults in NESTED_ADDED_DEFAULTS.items():
        for part in _parts(data, path):
            for key, default in defaults.items():
                if key in part and part[key] == default:
                    part.pop(key)


def _parts(data: Any, path: tuple[str, ...]) -> list[dict[str, Any]]:
    """The mappings at `path` in `data` (`*` taking every value of a mapping)."""
    if not isinstance(data, dict):
        return []
    if not path:
        return [data]
    head, rest = path[0], path[1:]
    values = list(data.values()) if head == "*" else [data.get(head)]
    return [part for value in values for part in _parts(value, rest)]


def spec_digest(spec: Spec) -> str:
    """sha256 of the canonical JSON of a spec: the identity a submission names."""
    data = spec.model_dump(mode="json")
    for key in ADDED_FIELDS:
        if data.get(key) is None:
            data.pop(key, None)
    _drop_added_defaults(data)
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def apply_profile(loaded: LoadedSpec, profile: str) -> Spec:
    """The spec as run at a profile: the profile's overrides merged in and validated again."""
    spec = loaded.spec
    if profile not in spec.profiles:
        known = sorted(spec.profiles)
        raise InputError(
            [
                Problem(
                    Location(str(loaded.path)),
                    f"unknown profile {profile!r}{did_you_mean(profile, known)}; known: {', '.join(known)}",
                )
            ]
        )
    overrides = spec.profiles[profile].overrides
    data = deep_merge(spec.model_dump(mode="json", exclude_defaults=False), overrides)
    doc = _ProfiledDocument(data, loaded.document.file, loaded.document.positions, profile, overrides)
    try:
        return validate_model(Spec, doc)
    except InputError as err:
        raise InputError([_in_profile(problem, profile) for problem in err.problems]) from None


@dataclass
class _ProfiledDocument(Document):
    """A spec with a profile's overrides merged in: a value the overrides set is located under the profile."""

    profile: str = ""
    overrides: dict[str, Any] = field(default_factory=dict)

    def locate(self, path: JsonPath) -> Location:
        within = _holds(self.overrides, path) or (len(path) > 1 and _holds(self.overrides, path[:-1]))
        return super().locate(("profiles", self.profile, "overrides", *path) if within else path)


def _holds(data: Any, path: JsonPath) -> bool:
    """Whether `path` names a value inside `data`."""
    node = data
    for part in path:
        in_dict = isinstance(node, dict) and part in node
        if not in_dict and not (isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)):
            return False
        node = node[part]
    return bool(path)


def _in_profile(problem: Problem, profile: str) -> Problem:
    """A problem of the merged spec, said to arise from the profile where the profile's overrides do not hold it."""
    if problem.location.json_path.startswith(f"profiles.{profile}."):
        return problem
    return Problem(problem.location, f"with profile {profile!r} applied, {problem.message}", problem.code)


__all__ = [
    "LoadedSpec",
    "apply_profile",
    "copy_data",
    "deep_merge",
    "format_path",
    "load_ruleset",
    "load_spec",
    "load_spec_cached",
    "spec_data",
    "spec_digest",
    "validate_model",
]
