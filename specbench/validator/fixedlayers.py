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

from specbench.spec.resolve import ResolvedSpec, reference_bindings
from specbench.validator.equivalence import Inputs, layer_home, layer_sources
from specbench.validator.findings import Findings
from specbench.validator.values import same, show


def check_reference(findings: Findings, inputs: Inputs, resolved: ResolvedSpec) -> None:
    """Each reference value of a layer the level fixes that no rule lets differ (SB-CNS-002)."""
    spec = resolved.spec
    sources = layer_sources(inputs, resolved)
    for name, binding in reference_bindings(resolved).items():
        layer, allowed = binding.layer, binding.allowed
        if layer != "workload" and inputs.system is None:
            continue
        source = sources.get(layer, {}).get(name) or sources["workload"].get(name)
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
