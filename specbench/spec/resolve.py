"""A spec resolved for one run: profile applied, level chosen, effective rules per layer."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from specbench.errors import InputError, Location, Problem, UsageError
from specbench.registry import did_you_mean
from specbench.spec.loader import LoadedSpec, apply_profile, spec_digest
from specbench.spec.models import LAYER_NAMES, LayerName, Spec
from specbench.spec.rules import FixedRule, FreeRule, Level, ReportedRule, applies, evaluate
from specbench.spec.yamlio import Document, JsonPath, format_path


@dataclass
class ResolvedSpec:
    """What a run at one profile and level must follow."""

    spec: Spec
    profile: str
    level: Level
    ranked: bool
    digest: str
    rules: dict[LayerName, dict[str, BaseModel]]
    document: Document | None = field(default=None, repr=False, compare=False)
    """The spec's merged file, to locate a value that breaks a rule."""

    def result_header(self, spec_sha256: str | None = None) -> dict[str, Any]:
        """The fields each run's result.json takes from its spec (the executors' and the MLPerf import's):
        the spec's id, version and digest (this one's unless given), kind, profile, level, sample unit
        and FLOP accounting."""
        spec = self.spec
        return {
            "spec_id": spec.id,
            "spec_version": spec.version,
            "spec_sha256": spec_sha256 if spec_sha256 is not None else self.digest,
            "kind": spec.kind,
            "profile": self.profile,
            "level": self.level,
            "sample_unit": spec.workload.sample_unit,
            "flop_accounting": spec.workload.flop_accounting,
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.spec.model_dump(mode="json"),
            "resolved": {
                "profile": self.profile,
                "level": self.level,
                "ranked": self.ranked,
                "spec_sha256": self.digest,
                "effective_rules": {
                    layer: {param: rule.model_dump(mode="json", exclude_none=True) for param, rule in params.items()}
                    for layer, params in self.rules.items()
                },
                "follows_reference": self.follows_reference(),
            },
        }

    def follows_reference(self) -> dict[str, Any]:
        """What the level binds beyond `effective_rules`: reference values that must hold as stated (SB-CNS-002),
        by layer, with a note that says what they are (or that the rules are all)."""
        bound = reference_bindings(self)
        if not bound:
            return {"note": f"at the {self.level} level, the effective rules are all that binds"}
        out: dict[str, Any] = {
            "note": f"at the {self.level} level these reference values hold as stated (or as one of the values "
            "listed), beyond the effective rules (validator: SB-CNS-002)"
        }
        for name, binding in bound.items():
            values = [v for i, v in enumerate(binding.allowed) if v not in binding.allowed[:i]]
            allowed = values[0] if len(values) == 1 else {"one_of": values}
            out.setdefault(binding.layer, {})[name] = allowed
        return out


def problem_params(spec: Spec) -> dict[str, Any]:
    """The parameters of layer 9, which never vary: dataset, target quality, budget."""
    params: dict[str, Any] = {
        "dataset": spec.workload.dataset.name,
        "train_samples": spec.workload.dataset.train_samples,
        "eval_samples": spec.workload.dataset.eval_samples,
    }
    if spec.quality is not None:
        params["quality_metric"] = spec.quality.metric
        params["quality_target"] = spec.quality.target
    if spec.budget.epochs is not None:
        params["epoch_budget"] = spec.budget.epochs
    if spec.budget.steps is not None:
        params["step_budget"] = spec.budget.steps
    return params


def home_layer(spec: Spec, name: str) -> LayerName:
    """The layer a reference hyperparameter belongs to: the first of layers 1 to 7 whose rules name it, else workload."""
    for layer in LAYER_NAMES[:-2]:
        if name in spec.rules.get(layer, {}):
            return layer
    return "workload"


def alternatives(spec: Spec, name: str, value: Any) -> list[Any]:
    """The values the spec accepts in place of its reference value: the reference, its sweep, its variants."""
    allowed = [value]
    if spec.throughput is not None:
        allowed += spec.throughput.sweep.get(name, [])
    if name == "model":
        allowed += list(spec.workload.variants)
    return allowed


def chosen_by_rule(resolved: ResolvedSpec, layer: LayerName, name: str) -> bool:
    """Whether a rule governs the value instead of the reference: `free`, `fixed` (checked as a rule), or one
    that names this level in its own `levels` (other than `reported`)."""
    rule = resolved.spec.rules.get(layer, {}).get(name)
    if rule is None:
        return False
    if rule.kind in ("free", "fixed"):
        return True
    return rule.levels is not None and resolved.level in rule.levels and rule.kind != "reported"


def governed(resolved: ResolvedSpec, layer: LayerName, name: str) -> bool:
    """Whether the reference value may differ at this level: with scaling rules, any rule of the parameter
    governs it; without, only a rule `chosen_by_rule` does."""
    spec = resolved.spec
    assert spec.levels is not None
    if spec.levels[resolved.level].scaling_rules:
        return name in spec.rules.get(layer, {})
    return chosen_by_rule(resolved, layer, name)


@dataclass(frozen=True)
class Binding:
    """A reference value that a level holds as it is: its layer, and the values accepted (the reference first)."""

    layer: LayerName
    allowed: list[Any]


def reference_bindings(resolved: ResolvedSpec) -> dict[str, Binding]:
    """Each reference value (the model and the hyperparameters at the profile) of a layer the level fixes that no
    rule lets differ: at a level without scaling rules (hardware), any not chosen by a rule; at one with them
    (system), any that no rule governs. The validator holds submissions to these (SB-CNS-002)."""
    spec = resolved.spec
    out: dict[str, Binding] = {}
    for name, value in {"model": spec.workload.model, **spec.hyperparameters}.items():
        layer = home_layer(spec, name)
        if spec.layer_is_fixed(layer, resolved.level) and not governed(resolved, layer, name):
            out[name] = Binding(layer, alternatives(spec, name, value))
    return out


PROBLEM = "layer 9 (the problem: dataset, target quality, epoch budget)"
PROBLEM_NAMES: dict[str, tuple[str, str]] = {
    **dict.fromkeys(("dataset", "dataset_name", "data_set"), ("the dataset", "workload.dataset.name")),
    **{name: (f"the dataset's {name}", f"workload.dataset.{name}") for name in ("train_samples", "eval_samples")},
    "num_classes": ("the dataset's num_classes", "workload.dataset.num_classes"),
    **dict.fromkeys(
        ("target", "quality_target", "target_quality", "quality"), ("the target quality", "quality.target")
    ),
    **dict.fromkeys(("metric", "quality_metric"), ("the quality metric", "quality.metric")),
    **dict.fromkeys(
        ("epochs", "epoch_budget", "budget", "num_epochs", "max_epochs", "train_epochs"),
        ("the epoch budget", "budget.epochs"),
    ),
    **dict.fromkeys(
        ("steps", "step_budget", "max_steps", "num_steps", "train_steps"), ("the step budget", "budget.steps")
    ),
}
"""Names a user may give a parameter of layer 9 (`problem_params`' and their usual spellings): what each is, and
where the spec states it."""


def problem_setting(name: str, resolved: ResolvedSpec) -> str:
    """Why `name` (one of PROBLEM_NAMES) is never set: what it is, that it is layer 9, and the spec's value."""
    what, path = PROBLEM_NAMES[name]
    value: Any = resolved.spec
    for part in path.split("."):
        value = getattr(value, part, None)
    shown = f"{value:g}" if isinstance(value, float) else repr(value)
    stated = "which states none" if value is None else f"{path}: {shown} at profile {resolved.profile}"
    return f"{what} is {PROBLEM}, fixed by the spec ({stated}) and never set"


def effective_rules(spec: Spec, level: Level) -> dict[LayerName, dict[str, BaseModel]]:
    """Rules that bind at `level`; a rule of a layer that varies there becomes `reported`."""
    out: dict[LayerName, dict[str, BaseModel]] = {}
    for layer in LAYER_NAMES[:-1]:
        params: dict[str, BaseModel] = {}
        for param, rule in spec.rules.get(layer, {}).items():
            binds = level in rule.levels if rule.levels is not None else spec.layer_is_fixed(layer, level)
            if binds or isinstance(rule, FreeRule):
                params[param] = rule
            else:
                params[param] = ReportedRule(
                    kind="reported", when=rule.when, cardinality=rule.cardinality, note=rule.note
                )
        if params:
            out[layer] = params
    out["problem"] = {
        name: FixedRule(kind="fixed", value=value, note="layer 9 never varies")
        for name, value in problem_params(spec).items()
    }
    return out


_RESOLVED: OrderedDict[tuple[int, str, Level], tuple[LoadedSpec, ResolvedSpec]] = OrderedDict()
RESOLVED_KEPT = 16


def resolve_once(loaded: LoadedSpec, profile: str, level: Level) -> ResolvedSpec:
    """`resolve(loaded, profile, level)`, kept for the last few spec objects, profiles and levels.

    For the readers that resolve one loaded spec again and again and change neither it nor the
    result (the validator, once per submission of a spec; the MLPerf importer, once per system).
    """
    key = (id(loaded), profile, level)
    kept = _RESOLVED.get(key)
    if kept is not None and kept[0] is loaded:
        _RESOLVED.move_to_end(key)
        return kept[1]
    resolved = resolve(loaded, profile, level)
    _RESOLVED[key] = (loaded, resolved)
    while len(_RESOLVED) > RESOLVED_KEPT:
        _RESOLVED.popitem(last=False)
    return resolved


def resolve(loaded: LoadedSpec, profile: str = "official", level: Level | None = None) -> ResolvedSpec:
    """Apply a profile and choose a level (default: the first the spec allows)."""
    spec = apply_profile(loaded, profile)
    chosen = level or spec.allowed_levels[0]
    if chosen not in spec.allowed_levels:
        allowed = list(spec.allowed_levels)
        raise UsageError(
            f"level {chosen!r} is not allowed by spec {spec.id!r}{did_you_mean(chosen, allowed)}; allowed: {', '.join(allowed)}"
        )
    return ResolvedSpec(
        spec=spec,
        profile=profile,
        level=chosen,
        ranked=spec.profiles[profile].ranked,
        digest=spec_digest(loaded.spec),
        rules=effective_rules(spec, chosen),
        document=loaded.document,
    )


@dataclass(frozen=True)
class Breach:
    """A parameter's value that breaks the rule binding it at a level."""

    layer: LayerName
    name: str
    value: Any
    expected: str
    note: str | None
    level: Level

    def describe(self) -> str:
        number = LAYER_NAMES.index(self.layer) + 1
        return (
            f"{self.name}={self.value!r} breaks rules.{self.layer}.{self.name} (layer {number}, {self.layer}) "
            f"at level {self.level}: expected {self.expected}" + (f" ({self.note})" if self.note else "")
        )


def first_breach(
    resolved: ResolvedSpec, layer: LayerName, params: Mapping[str, Any], stated_only: bool
) -> Breach | None:
    """The first rule of `layer` at the resolved level that `params` break; with `stated_only`, only stated ones."""
    for name, rule in resolved.rules.get(layer, {}).items():
        if (stated_only and name not in params) or not applies(rule, params):
            continue
        verdict = evaluate(rule, params.get(name), params)
        if not verdict.ok:
            note = getattr(rule, "note", None)
            return Breach(layer, name, params.get(name), verdict.expected, note, resolved.level)
    return None


def check_profile(resolved: ResolvedSpec) -> None:
    """Refuse a spec whose own layer 8 (its hyperparameters at this profile) breaks its rules at this level."""
    spec = resolved.spec
    params = {"model": spec.workload.model, **spec.hyperparameters}
    breach = first_breach(resolved, "workload", params, stated_only=True)
    if breach is None:
        return
    message = (
        f"profile {resolved.profile!r}: {breach.describe()}; "
        "the spec contradicts its own rule: change the value or the rule"
    )
    raise InputError([Problem(_where(resolved, breach.name), message)])


def _where(resolved: ResolvedSpec, name: str) -> Location:
    """Where the spec states a layer-8 value: in the profile's overrides if there, else in the spec."""
    base: JsonPath = ("workload", "model") if name == "model" else ("hyperparameters", name)
    if resolved.document is None:
        return Location(json_path=format_path(base))
    overridden: JsonPath = ("profiles", resolved.profile, "overrides", *base)
    return resolved.document.locate(overridden if overridden in resolved.document.positions else base)
