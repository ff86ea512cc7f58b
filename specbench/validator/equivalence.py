"""Equivalence: the captured system and the declared hyperparameters against the level's per-layer rules.

A parameter of layers 1 to 7 is looked up in the run's recorded settings (result.json, layers 6
and 7 only), then in submission.yaml's `layers` (this benchmark's choices), then in system.yaml's
layer, then among the declared hyperparameters. Layer 8 is the declared hyperparameters, with the
spec's model where they name none (as the executor checks it). Layer 9 (the problem) never
differs from the spec.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from specbench.spec.models import LAYER_NAMES
from specbench.spec.resolve import ResolvedSpec
from specbench.spec.rules import applies, evaluate
from specbench.spec.system import SubmissionMeta, SystemDescription
from specbench.validator.documents import Loaded
from specbench.validator.findings import Findings
from specbench.validator.values import same, show

SETTINGS_LAYERS = ("framework", "parallelism_precision")
MUST_BE_STATED = ("exactly_one", "at_least_one")


@dataclass(frozen=True)
class Source:
    """Where a parameter's value was read."""

    value: Any
    loaded: Loaded
    path: tuple[str | int, ...]

    def where(self) -> dict[str, Any]:
        return {"file": self.loaded.file, **self.loaded.locate(*self.path)}


@dataclass
class Inputs:
    system: SystemDescription | None
    system_file: Loaded | None
    meta: SubmissionMeta
    meta_file: Loaded
    settings: dict[str, Any]
    settings_file: Loaded | None


def layer_sources(inputs: Inputs, spec: ResolvedSpec) -> dict[str, dict[str, Source]]:
    """Every parameter of layers 1 to 8 with where it was read."""
    out: dict[str, dict[str, Source]] = {layer: {} for layer in LAYER_NAMES[:-1]}
    declared = inputs.meta.hyperparameters
    for layer in LAYER_NAMES[:-2]:
        params = out[layer]
        ruled = spec.rules.get(layer, {})
        for name in ruled:
            if name in declared:
                params[name] = Source(declared[name], inputs.meta_file, ("hyperparameters", name))
        if inputs.system is not None and inputs.system_file is not None:
            for name, value in inputs.system.layers.get(layer, {}).items():
                params[name] = Source(value, inputs.system_file, ("layers", layer, name))
        for name, value in meta_layers(inputs.meta).get(layer, {}).items():
            params[name] = Source(value, inputs.meta_file, ("layers", layer, name))
        if layer in SETTINGS_LAYERS and inputs.settings_file is not None:
            for name, value in inputs.settings.items():
                if name in ruled or name in params:
                    params[name] = Source(value, inputs.settings_file, ("settings", name))
    out["workload"] = {"model": Source(spec.spec.workload.model, inputs.meta_file, ("hyperparameters",))}
    out["workload"].update(
        (name, Source(value, inputs.meta_file, ("hyperparameters", name))) for name, value in declared.items()
    )
    return out


def meta_layers(meta: SubmissionMeta) -> dict[str, dict[str, Any]]:
    """submission.yaml's per-benchmark layer choices (absent from older submission formats)."""
    layers = getattr(meta, "layers", None)
    return layers if isinstance(layers, dict) else {}


def meta_dataset(meta: SubmissionMeta) -> dict[str, Any]:
    """submission.yaml's facts about the data actually used (absent from older submission formats)."""
    dataset = getattr(meta, "dataset", None)
    return dataset if isinstance(dataset, dict) else {}


def check_layers(findings: Findings, inputs: Inputs, spec: ResolvedSpec) -> None:
    """Every rule of layers 1 to 8 that binds at the level (layers 1 to 7 only when system.yaml was read)."""
    sources = layer_sources(inputs, spec)
    for layer, rules in spec.rules.items():
        if layer == "problem" or (layer != "workload" and inputs.system is None):
            continue
        params = sources.get(layer, {})
        plain = {name: source.value for name, source in params.items()}
        for name, rule in rules.items():
            if rule.kind == "free" or not applies(rule, plain):  # type: ignore[attr-defined]
                continue
            source = params.get(name)
            stated = source is not None and source.value is not None and source.value != ""
            if not stated:
                if rule.cardinality in MUST_BE_STATED:  # type: ignore[attr-defined]
                    where = layer_home(inputs, layer)
                    findings.add(
                        "SB-EQV-002",
                        message=f"expected layer {layer} parameter {name!r} to be stated "
                        f"({spec.level} level of {spec.spec.id}), found it missing",
                        **where,
                    )
                continue
            assert source is not None
            verdict = evaluate(rule, source.value, plain)
            if not verdict.ok:
                note = getattr(rule, "note", None)
                findings.add(
                    "SB-EQV-001",
                    message=f"layer {layer} parameter {name!r} at the {spec.level} level: expected {verdict.expected}, "
                    f"found {show(source.value)}" + (f" ({note})" if note else ""),
                    **source.where(),
                )


def layer_home(inputs: Inputs, layer: str) -> dict[str, Any]:
    """Where a parameter of `layer` that is not stated belongs: the layer in system.yaml, else the hyperparameters."""
    if layer == "workload" or inputs.system_file is None:
        return {"file": inputs.meta_file.file, **inputs.meta_file.locate("hyperparameters")}
    return {"file": inputs.system_file.file, **inputs.system_file.locate("layers", layer)}


def check_problem(findings: Findings, inputs: Inputs, spec: ResolvedSpec) -> None:
    """Layer 9 as stated in system.yaml and submission.yaml against the spec at its profile."""
    rules = spec.rules.get("problem", {})
    if inputs.system is not None and inputs.system_file is not None:
        for name, value in inputs.system.layers.get("problem", {}).items():
            rule = rules.get(name)
            if rule is None:
                continue
            verdict = evaluate(rule, value, {})
            if not verdict.ok:
                findings.add(
                    "SB-EQV-003",
                    inputs.system_file.file,
                    f"expected problem parameter {name!r} {verdict.expected} (layer 9 never varies), found {show(value)}",
                    **inputs.system_file.locate("layers", "problem", name),
                )
    dataset = spec.spec.workload.dataset
    check_dataset(findings, inputs, spec)
    if inputs.meta.synthetic_data != dataset.synthetic:
        findings.add(
            "SB-EQV-003",
            inputs.meta_file.file,
            f"expected synthetic_data {show(dataset.synthetic)} (dataset {dataset.name} of {spec.spec.id} "
            f"at profile {spec.profile}), found {show(inputs.meta.synthetic_data)}",
            **inputs.meta_file.locate("synthetic_data"),
        )


def check_dataset(findings: Findings, inputs: Inputs, spec: ResolvedSpec) -> None:
    """The data submission.yaml says was used: sample counts, and for real data its name and checksum."""
    used, dataset = meta_dataset(inputs.meta), spec.spec.workload.dataset
    expected: dict[str, Any] = {"synthetic": dataset.synthetic}
    if dataset.counts_checked:
        expected |= {"train_samples": dataset.train_samples, "eval_samples": dataset.eval_samples}
    if not dataset.synthetic:
        expected["name"] = dataset.name
        if dataset.checksum_sha256 is not None:
            expected["sha256"] = dataset.checksum_sha256
    for name, value in expected.items():
        if name in used and not same(used[name], value):
            findings.add(
                "SB-EQV-003",
                inputs.meta_file.file,
                f"expected dataset {name} {show(value)} (layer 9 of {spec.spec.id} at profile {spec.profile}), "
                f"found {show(used[name])}",
                **inputs.meta_file.locate("dataset", name),
            )


def check_level_and_profile(findings: Findings, meta: SubmissionMeta, meta_file: Loaded, spec: Any) -> bool:
    """False (with findings) when the spec does not allow the submission's level or profile."""
    ok = True
    if meta.level not in spec.allowed_levels:
        findings.add(
            "SB-EQV-005",
            meta_file.file,
            f"expected a level {spec.id} allows ({', '.join(spec.allowed_levels)}), found {meta.level!r}",
            **meta_file.locate("level"),
        )
        ok = False
    if meta.profile not in spec.profiles:
        findings.add(
            "SB-EQV-005",
            meta_file.file,
            f"expected a profile of {spec.id} ({', '.join(spec.profiles)}), found {meta.profile!r}",
            **meta_file.locate("profile"),
        )
        ok = False
    return ok


def same_hyperparameters(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
