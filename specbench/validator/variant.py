"""The model variant is what the hyperparameters train, never a label of its own.

The leaderboard ranks each variant (llm-gpt 800M, 13B, 175B) in a table of its own, keyed by
submission.yaml's `variant`, while the FLOPs per sample follow `hyperparameters.model`. The
executor derives the one from the other (`variant = hyperparameters.model` where the spec has
`workload.variants`), so the validator does the same: the model must name a variant of the spec at
its profile, `variant` must be that name, a declared shape hyperparameter (`sequence_length`,
`hidden`, ...) must equal the variant's param, and a logged `model_parameters` must be the
parameter count of the variant's GPT shape. A spec without variants takes no `variant`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from specbench.accounting.flops import GptShape
from specbench.spec.resolve import ResolvedSpec
from specbench.spec.system import SubmissionMeta
from specbench.validator.documents import Loaded
from specbench.validator.findings import Findings
from specbench.validator.model import RunData
from specbench.validator.values import is_int, same, show

GPT_PARAMS = {"hidden": "hidden", "layers": "layers", "heads": "heads", "sequence_length": "sequence", "vocab": "vocab"}
"""A variant's params that make a GptShape (param name: field), as the llm-gpt executor builds its model."""


def implied_variant(spec: ResolvedSpec, hyperparameters: Mapping[str, Any]) -> str | None:
    """The variant the hyperparameters train: `model` when it names one of the spec's variants, else None."""
    model = hyperparameters.get("model")
    return model if isinstance(model, str) and model in spec.spec.workload.variants else None


def gpt_parameters(params: Mapping[str, Any]) -> int | None:
    """The parameter count of a variant whose params give a GPT shape (all integers), else None."""
    values = {field: params.get(name) for name, field in GPT_PARAMS.items()}
    sizes = {field: value for field, value in values.items() if is_int(value) and value > 0}
    if len(sizes) != len(values):
        return None
    return GptShape(**sizes).parameters()


def check_variant(
    findings: Findings, meta: SubmissionMeta, meta_file: Loaded, spec: ResolvedSpec, runs: Sequence[RunData]
) -> None:
    """submission.yaml's `variant` against the variant its hyperparameters and the runs' logs show."""
    variants = spec.spec.workload.variants
    model = meta.hyperparameters.get("model")
    if not variants:
        if meta.variant is not None:
            findings.add(
                "SB-CNS-001",
                meta_file.file,
                f"expected no variant (spec {spec.spec.id} has no model variants), found {show(meta.variant)}",
                **meta_file.locate("variant"),
            )
        return
    implied = implied_variant(spec, meta.hyperparameters)
    if implied is None:
        findings.add(
            "SB-CNS-001",
            meta_file.file,
            f"expected hyperparameters.model naming a variant of {spec.spec.id} at profile {spec.profile} "
            f"({', '.join(variants)}), found {show(model)}",
            **(meta_file.locate("hyperparameters", "model") if "model" in meta.hyperparameters else {}),
        )
        return
    if meta.variant != implied:
        findings.add(
            "SB-CNS-001",
            meta_file.file,
            f"expected variant {implied!r} (the variant hyperparameters.model trains), found {show(meta.variant)}",
            **meta_file.locate("variant"),
        )
    params = variants[implied].params
    for name, value in params.items():
        if name in meta.hyperparameters and not same(meta.hyperparameters[name], value):
            findings.add(
                "SB-CNS-001",
                meta_file.file,
                f"expected {name} {show(value)} (the shape of variant {implied}), found "
                f"{show(meta.hyperparameters[name])}",
                **meta_file.locate("hyperparameters", name),
            )
    check_logged_size(findings, implied, params, variants_sizes(spec), runs)


def variants_sizes(spec: ResolvedSpec) -> dict[int, str]:
    """The spec's variants by the parameter count of their GPT shape (those that have one)."""
    sizes: dict[int, str] = {}
    for name, variant in spec.spec.workload.variants.items():
        count = gpt_parameters(variant.params)
        if count is not None:
            sizes.setdefault(count, name)
    return sizes


def check_logged_size(
    findings: Findings, implied: str, params: Mapping[str, Any], sizes: Mapping[int, str], runs: Sequence[RunData]
) -> None:
    """Each run's logged `model_parameters` (where logged) is the parameter count of the variant trained."""
    expected = gpt_parameters(params)
    if expected is None:
        return
    for run in runs:
        event = run.log.first("model_parameters") if run.log is not None else None
        if event is None or same(event.value, expected):
            continue
        other = sizes.get(event.value) if is_int(event.value) else None
        findings.add(
            "SB-CNS-001",
            f"{run.folder}/log.txt",
            f"expected model_parameters {expected} (variant {implied}, which hyperparameters.model names), found "
            f"{show(event.value)}" + (f" (variant {other}'s)" if other else ""),
            line=event.line,
            json_path="value",
        )
