"""Each layer the level fixes holds the values the spec's reference states, as far as no rule lets them differ.

HPC AI500's hardware level lets only the hardware vary (with the operating system, driver and
libraries it forces); communication, framework, parallelism and precision, and the workload follow
the reference. The spec's rules (checked by `equivalence.check_layers`) say what must be stated and
which values are acceptable, but a `reported` or `range` rule also accepts values the reference does
not use: a run at the system level relabelled `hardware` would pass them. So at a level without
scaling rules, each reference value (the spec's hyperparameters at the profile) whose layer the
level fixes must be stated with that value or one of its declared alternatives: another value of
the spec's throughput sweep, another model variant, or a value a rule chooses that names this level
in its own `levels`. At a level with scaling rules (system), the workload follows the reference
within the spec's rules: a reference value that no rule governs at all must hold as it is.
A `fixed` rule is left to check_layers, which reports it already.
"""

from __future__ import annotations

from typing import Any

from specbench.spec.models import LAYER_NAMES, LayerName, Spec
from specbench.spec.resolve import ResolvedSpec
from specbench.validator.equivalence import Inputs, layer_home, layer_sources
from specbench.validator.findings import Findings
from specbench.validator.values import same, show


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
    """Whether a rule governs the value instead of the reference: `free`, `fixed` (checked by check_layers), or one
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


def check_reference(findings: Findings, inputs: Inputs, resolved: ResolvedSpec) -> None:
    """Each reference value of a layer the level fixes that no rule lets differ (SB-CNS-002)."""
    spec = resolved.spec
    sources = layer_sources(inputs, resolved)
    reference = {"model": spec.workload.model, **spec.hyperparameters}
    for name, value in reference.items():
        layer = home_layer(spec, name)
        if not spec.layer_is_fixed(layer, resolved.level) or governed(resolved, layer, name):
            continue
        if layer != "workload" and inputs.system is None:
            continue
        source = sources.get(layer, {}).get(name) or sources["workload"].get(name)
        allowed = alternatives(spec, name, value)
        expected = " or ".join(show(a) for a in allowed[:6]) + (" or ..." if len(allowed) > 6 else "")
        context = f"layer {layer} at the {resolved.level} level follows the reference of {spec.id}"
        if source is None or source.value is None:
            findings.add(
                "SB-CNS-002",
                message=f"expected {name} {expected} ({context}), found it not stated",
                **layer_home(inputs, layer),
            )
        elif not any(same(source.value, a) for a in allowed):
            findings.add(
                "SB-CNS-002",
                message=f"expected {name} {expected} ({context}), found {show(source.value)}",
                **source.where(),
            )
