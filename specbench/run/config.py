"""A run's configuration: spec hyperparameters and executor options, `--set` overrides, and their rule check.

Every override is checked against the level's rules before anything starts: a forbidden value
fails at once, naming the rule and the layer, and layer 9 (the problem) can never be set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from specbench.errors import UsageError
from specbench.registry import did_you_mean
from specbench.spec.models import LAYER_NAMES, LayerName
from specbench.spec.resolve import ResolvedSpec, problem_params
from specbench.spec.rules import applies, evaluate

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

    def default(self, device: str) -> Value | None:
        return self.default_cuda if device == "cuda" else self.default_cpu


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
    """A `--set` value: integer, number, true/false, else the text itself."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)  # type: ignore[no-any-return]
        except ValueError:
            pass
    return text.strip()


def parse_sets(items: list[str]) -> dict[str, list[Value]]:
    """`KEY=VALUE[,VALUE...]` items; several values make a sweep."""
    parsed: dict[str, list[Value]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key or raw == "":
            raise UsageError(f"--set expects KEY=VALUE (or KEY=V1,V2,... for a sweep), found {item!r}")
        if key in parsed:
            raise UsageError(f"--set {key} is given twice")
        parsed[key] = [parse_value(part) for part in raw.split(",")]
    return parsed


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
    parsed = parse_sets(sets)
    problem = problem_params(spec)
    hyper_keys = set(defaults) | set(spec.hyperparameters) | set(spec.rules.get("workload", {}))
    options = {name: opt for name, opt in options.items() if name not in hyper_keys}
    for key in parsed:
        if key in problem:
            raise UsageError(f"--set {key}: layer 9 (problem: dataset, target quality, budget) never varies")
        if key not in hyper_keys and key not in options:
            known = sorted(hyper_keys | set(options))
            raise UsageError(f"--set {key}: unknown parameter{did_you_mean(key, known)}; known: {', '.join(known)}")
        if key in options and options[key].choices is not None:
            for value in parsed[key]:
                if value not in options[key].choices:  # type: ignore[operator]
                    choices = ", ".join(map(str, options[key].choices or ()))
                    raise UsageError(f"--set {key}={value}: expected one of {choices}")
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
        params = controlled[layer]
        for name, rule in resolved.rules.get(layer, {}).items():
            if name not in params and layer != "workload":
                continue
            if not applies(rule, params):
                continue
            value = params.get(name)
            verdict = evaluate(rule, value, params)
            if not verdict.ok:
                number = LAYER_NAMES.index(layer) + 1
                origin = "--set" if name in config.overrides else "the configuration"
                raise UsageError(
                    f"{origin} {name}={value!r} breaks rules.{layer}.{name} (layer {number}, {layer}) "
                    f"at level {resolved.level}: expected {verdict.expected}"
                    + (f" ({note})" if (note := getattr(rule, "note", None)) else "")
                )
