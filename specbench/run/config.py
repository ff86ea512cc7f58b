"""A run's configuration: spec hyperparameters and executor options, `--set` overrides, and their rule check.

Every override is checked against the level's rules before anything starts: a forbidden value
fails at once, naming the rule and the layer, and layer 9 (the problem) can never be set.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from specbench.errors import UsageError
from specbench.registry import closest, did_you_mean
from specbench.spec.models import LAYER_NAMES, LayerName
from specbench.spec.resolve import PROBLEM_NAMES, ResolvedSpec, check_profile, first_breach, problem_setting
from specbench.spec.rules import applies

Value = bool | int | float | str


@dataclass(frozen=True)
class Option:
    """An executor setting outside layer 8, recorded in the layer it belongs to."""

    name: str
    layer: LayerName
    help: str
    choices: tuple[Value, ...] | None = None
    default_cpu: Value | None = None
    default_cuda: Value | None = None
    absent: Value | None = None
    """What ran where a submission does not record this setting (one made before the option existed), if known.
    Only for options no executor's check_config drops: a dropped setting is missing from every submission."""

    def default(self, device: str) -> Value | None:
        return self.default_cuda if device == "cuda" else self.default_cpu

    def refuse(self, value: Value, device: str, settings: dict[str, Any]) -> str | None:
        """Why `value` cannot run on `device` with the other `settings`, or None; checked before a run starts."""
        return None


@dataclass
class RunConfig:
    """Layer 8 hyperparameters and per-layer settings of one result (one point of a sweep)."""

    hyperparameters: dict[str, Any]
    settings: dict[str, Any]
    option_layers: dict[str, LayerName]
    suffix: str = ""
    overrides: dict[str, Any] = field(default_factory=dict)

    def layers(self) -> dict[LayerName, dict[str, Any]]:
        """Settings grouped by layer, as written into submission.yaml."""
        out: dict[LayerName, dict[str, Any]] = {}
        for name, value in self.settings.items():
            out.setdefault(self.option_layers[name], {})[name] = value
        return out


def parse_value(text: str) -> Value:
    """A `--set` value where nothing gives its type: integer, number, true/false, else the text itself."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)  # type: ignore[no-any-return]
        except ValueError:
            pass
    return text.strip()


def parse_sets(items: list[str]) -> dict[str, list[str]]:
    """`KEY=VALUE[,VALUE...]` items, each value's text (typed later, against its parameter); several make a sweep."""
    parsed: dict[str, list[str]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key or raw == "":
            raise UsageError(f"--set expects KEY=VALUE (or KEY=V1,V2,... for a sweep), found {item!r}")
        if key in parsed:
            raise UsageError(f"--set {key} is given twice")
        parsed[key] = raw.split(",")
    return parsed


@dataclass(frozen=True)
class ParamType:
    """The type a `--set` value must have, what says so (the spec's value, the executor's default, a rule), and an
    example of it."""

    kind: type
    source: str
    example: Value | None = None


TYPE_WORDS = {bool: "true or false", int: "an integer", float: "a number", str: "text"}
NUMERIC_RULES = ("range", "multiple_of", "power_of_two_multiple", "scaled_with")


def _show(value: Any) -> str:
    """A value as it is written in YAML or on the command line (true, 256, 'sgd')."""
    return str(value).lower() if isinstance(value, bool) else repr(value)


def _type_of(value: Any, source: str) -> ParamType | None:
    kind = type(value)
    return ParamType(kind, source, value) if kind in TYPE_WORDS else None


def param_type(key: str, reference: dict[str, Any], rule: Any, option: Option | None, device: str) -> ParamType | None:
    """The type of `key`: its reference value's (the spec's or the executor's default), else its rule's; None where
    nothing fixes it (a list, an option with choices, an option whose default is text)."""
    if option is not None:
        default = None if option.choices is not None else option.default(device)
        return None if isinstance(default, str) else _type_of(default, f"its default is {_show(default)}")
    if key in reference:
        return _type_of(reference[key], f"the reference value is {_show(reference[key])}")
    if rule is None:
        return None
    if rule.kind in NUMERIC_RULES:
        return ParamType(float, f"rules.workload.{key} is a {rule.kind} rule")
    values = [rule.value] if rule.kind == "fixed" else list(getattr(rule, "values", []))
    if len({type(v) for v in values}) != 1:
        return None
    return _type_of(values[0], f"rules.workload.{key} allows {_show(values[0])}")


def typed_value(key: str, text: str, wanted: ParamType | None) -> Value:
    """One `--set` value parsed as its parameter's type; a UsageError names the value, the type and the fix."""
    value = parse_value(text)
    if wanted is None:
        return value
    if wanted.kind is str:
        return text.strip()
    if wanted.kind is float and type(value) is int:
        value = float(value)
    if type(value) is wanted.kind and not (isinstance(value, float) and not math.isfinite(value)):
        return value
    words = "a finite number" if wanted.kind is float else TYPE_WORDS[wanted.kind]
    example = "" if wanted.example is None else f", e.g. --set {key}={_show(wanted.example)}"
    raise UsageError(
        f"--set {key}={text}: expected {words} ({wanted.source}), found {text.strip()!r}; give {words}{example}"
    )


def _sweep_points(sets: dict[str, list[Value]]) -> list[dict[str, Value]]:
    points: list[dict[str, Value]] = [{}]
    for key, values in sets.items():
        points = [{**point, key: value} for point in points for value in values]
    return points


def build_configs(
    resolved: ResolvedSpec,
    options: dict[str, Option],
    sets: list[str],
    device: str,
    defaults: dict[str, Any] | None = None,
) -> list[RunConfig]:
    """One checked configuration per sweep point; raise UsageError naming the rule that an override breaks.

    `defaults` are hyperparameters the executor uses where the spec states none; they are recorded too.
    """
    spec = resolved.spec
    defaults = defaults or {}
    check_profile(resolved)
    hyper_keys = set(defaults) | set(spec.hyperparameters) | set(spec.rules.get("workload", {}))
    options = {name: opt for name, opt in options.items() if name not in hyper_keys}
    reference = {**defaults, **spec.hyperparameters}
    parsed: dict[str, list[Value]] = {}
    for key, texts in parse_sets(sets).items():
        _check_key(key, resolved, hyper_keys, options)
        wanted = param_type(key, reference, spec.rules.get("workload", {}).get(key), options.get(key), device)
        parsed[key] = [typed_value(key, text, wanted) for text in texts]
        if key in options:
            _check_choices(key, parsed[key], options[key])
    configs = []
    for point in _sweep_points(parsed):
        hyperparameters = {**defaults, **spec.hyperparameters}
        settings = {name: opt.default(device) for name, opt in options.items()}
        for key, value in point.items():
            if key in hyper_keys:
                hyperparameters[key] = value
            else:
                settings[key] = value
        _drop_conditional(resolved, hyperparameters, point)
        _check_settings(settings, options, device, point)
        config = RunConfig(
            hyperparameters=hyperparameters,
            settings=settings,
            option_layers={name: opt.layer for name, opt in options.items()},
            suffix="--" + ",".join(f"{k}={v}" for k, v in point.items()) if len(_sweep_points(parsed)) > 1 else "",
            overrides=point,
        )
        check_rules(resolved, config)
        configs.append(config)
    return configs


def _check_key(key: str, resolved: ResolvedSpec, hyper_keys: set[str], options: dict[str, Option]) -> None:
    """A `--set` key names a parameter of layers 1 to 8 that this executor knows; a parameter of layer 9 (the
    problem), under any of its usual names or one close to them, is never set."""
    known = sorted(hyper_keys | set(options))
    meant = key if key in PROBLEM_NAMES else closest(key, [*known, *PROBLEM_NAMES])
    if key not in known and meant in PROBLEM_NAMES:
        fix = ""
        if PROBLEM_NAMES[meant][1].startswith("budget.") and resolved.profile != "smoke":
            fix = "; a shorter run is the smoke profile (--profile smoke), never ranked"
        raise UsageError(f"--set {key}: {problem_setting(meant, resolved)}{fix}")
    if key not in known:
        raise UsageError(f"--set {key}: unknown parameter{did_you_mean(key, known)}; known: {', '.join(known)}")


def _check_choices(key: str, values: list[Value], option: Option) -> None:
    if option.choices is None:
        return
    for value in values:
        if value not in option.choices:
            raise UsageError(f"--set {key}={value}: expected one of {', '.join(map(str, option.choices))}")


def _check_settings(settings: dict[str, Any], options: dict[str, Option], device: str, given: dict[str, Any]) -> None:
    """Each option's own refusal (`Option.refuse`) of its value on this device with the other settings."""
    for name, option in options.items():
        problem = option.refuse(settings[name], device, settings)
        if problem is not None:
            shown = (
                f"--set {name}={settings[name]}"
                if name in given
                else f"{name}={settings[name]} (the default on {device})"
            )
            raise UsageError(f"{shown}: {problem}")


def _drop_conditional(resolved: ResolvedSpec, hyperparameters: dict[str, Any], point: dict[str, Value]) -> None:
    """Leave out hyperparameters whose rule's `when` does not hold (lars_* when opt_name is sgd); refuse them in --set."""
    rules = resolved.rules.get("workload", {})
    for key in [k for k in hyperparameters if k in rules and not applies(rules[k], hyperparameters)]:
        if key in point:
            when = ", ".join(f"{k}={v}" for k, v in rules[key].when.items())  # type: ignore[attr-defined]
            raise UsageError(f"--set {key}: rules.workload.{key} applies only when {when}; it would not be used")
        del hyperparameters[key]


def check_rules(resolved: ResolvedSpec, config: RunConfig) -> None:
    """Every rule of the level on the parameters this run controls (layer 8 and the executor's settings)."""
    controlled: dict[LayerName, dict[str, Any]] = {
        "workload": {"model": resolved.spec.workload.model, **config.hyperparameters}
    }
    for layer, params in config.layers().items():
        controlled.setdefault(layer, {}).update(params)
    for layer in LAYER_NAMES[:-1]:
        if layer not in controlled:
            continue
        breach = first_breach(resolved, layer, controlled[layer], stated_only=layer != "workload")
        if breach is not None:
            origin = "--set" if breach.name in config.overrides else "the configuration"
            raise UsageError(f"{origin} {breach.describe()}")
