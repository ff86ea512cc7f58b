"""Placing submitted runs on a roofline: achieved FLOP/s per device against FLOPs per byte of device memory.

Operational intensity needs the bytes a training step moves per sample: analytical byte models,
one per workload model (specbench.roofline.bytemodels). A run that none fits is listed as skipped
with the reason, never placed at a guessed intensity.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from specbench.accounting.accounts import computed_flops_per_s
from specbench.errors import InputError, Location, Problem, SpecbenchError
from specbench.roofline.bytemodels import ACTIVATION_BYTES, BYTE_MODELS, RunContext
from specbench.roofline.format import Precision, Roofline, Skipped, WorkloadPoint
from specbench.spec.result import RunResult

CEILING_OF: dict[str, Precision] = {"fp32": "fp32", "tf32": "tf32", "bf16": "bf16", "fp16": "fp16"}


def result_files(paths: Iterable[str | Path]) -> list[Path]:
    """Every result.json at or under the given paths (a run folder, a benchmark, a whole submission)."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            found += sorted(path.rglob("result.json"))
        else:
            raise InputError([Problem(Location(str(path)), "no such file or folder")])
    return list(dict.fromkeys(found))


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise InputError([Problem(Location(str(path)), f"cannot read JSON: {err}")]) from err


def _load_yaml(path: Path) -> dict[str, Any]:
    from specbench.spec.yamlio import load_yaml

    if not path.is_file():
        return {}
    data = load_yaml(path).data
    return data if isinstance(data, dict) else {}


def load_run(path: Path) -> RunContext:
    """The run's result.json, its benchmark's submission.yaml and its system's system.yaml (both optional)."""
    try:
        result = RunResult.model_validate(_load_json(path))
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InputError([Problem(Location(str(path), json_path=where), f"not a run result: {first['msg']}")]) from err
    submission = _load_yaml(path.parent.parent / "submission.yaml")
    system = _load_yaml(path.parent.parent.parent / "system.yaml")
    hardware = (system.get("layers") or {}).get("hardware") or {}
    dataset = submission.get("dataset") or {}
    spec = _spec_workload(result)
    shape = dataset.get("sample_shape") or (spec.dataset.sample_shape if spec else None)
    classes = dataset.get("num_classes") or (spec.dataset.num_classes if spec else None)
    return RunContext(
        path=path,
        result=result,
        model=spec.model if spec else None,
        sample_shape=list(shape) if shape else None,
        num_classes=classes,
        accelerator_model=hardware.get("accelerator_model"),
        cpu_model=hardware.get("cpu_model"),
        precision=recorded_precision(result, submission),
        variant=_variant_params(spec, result, submission),
    )


def recorded_precision(result: RunResult, submission: dict[str, Any]) -> str | None:
    """The precision where the submission records it: result.json's settings or hyperparameters, else
    submission.yaml's parallelism_precision layer or hyperparameters."""
    layer = ((submission.get("layers") or {}).get("parallelism_precision")) or {}
    for where in (result.settings, result.hyperparameters, layer, submission.get("hyperparameters") or {}):
        value = where.get("precision")
        if value:
            return str(value)
    return None


def _variant_params(spec: Any, result: RunResult, submission: dict[str, Any]) -> dict[str, Any]:
    """The params of the spec variant the run used (its `model` hyperparameter, else submission.yaml's variant)."""
    if spec is None or not spec.variants:
        return {}
    name = result.hyperparameters.get("model") or submission.get("variant")
    variant = spec.variants.get(str(name))
    return dict(variant.params) if variant is not None else {}


def _spec_workload(result: RunResult) -> Any:
    """The workload of the run's spec at its profile, from the built-in specs; None for a spec not built in."""
    from specbench.spec.builtin import find_spec, spec_ids
    from specbench.spec.loader import apply_profile, load_spec

    if result.spec_id not in spec_ids():
        return None
    try:
        return apply_profile(load_spec(find_spec(result.spec_id)), result.profile).workload
    except SpecbenchError:
        return None


def _batch_per_device(result: RunResult) -> int:
    """micro_batch_size where the run has one, else the global batch over the devices."""
    hp = result.hyperparameters
    micro, global_batch = hp.get("micro_batch_size"), hp.get("global_batch_size")
    if isinstance(micro, int) and micro >= 1:
        return micro
    if isinstance(global_batch, int) and global_batch >= 1:
        return max(1, global_batch // result.devices)
    raise ValueError(f"no usable batch size in the run's hyperparameters (global_batch_size {global_batch!r})")


def _same_device(roofline: Roofline, run: RunContext) -> bool | None:
    device = roofline.device
    if run.result.device_kind != device.kind:
        return False
    if device.kind == "cpu":
        return None if run.cpu_model is None else run.cpu_model == device.cpu_model
    return None if run.accelerator_model is None else run.accelerator_model == device.name


def place_run(roofline: Roofline, run: RunContext) -> WorkloadPoint:
    """The run's point; raises ValueError with the reason when it cannot be placed."""
    result = run.result
    if result.flops_per_sample is None:
        raise ValueError("the run states no FLOPs per sample (its spec has none): nothing to place")
    achieved = computed_flops_per_s(
        result.flops_per_sample, result.samples_processed, result.duration_s, result.devices
    )
    if result.status != "success" or not achieved:
        raise ValueError(
            f"run status {result.status!r} with {result.samples_processed} samples in {result.duration_s} s: nothing to place"
        )
    precision = run.precision
    if precision is None:
        raise ValueError(
            "no precision recorded: neither result.json (settings, hyperparameters) nor submission.yaml "
            "(layers.parallelism_precision, hyperparameters) names one"
        )
    if precision not in ACTIVATION_BYTES:
        raise ValueError(f"precision {precision!r} has no byte width here (known: {', '.join(ACTIVATION_BYTES)})")
    if run.model is None:
        raise ValueError(f"spec {result.spec_id!r} is not built in: its workload model, and so its bytes, are unknown")
    if run.model not in BYTE_MODELS:
        raise ValueError(f"no byte model for workload model {run.model!r} (known: {', '.join(BYTE_MODELS.names())})")
    batch = _batch_per_device(result)
    counted = BYTE_MODELS.get(run.model)(run, batch, precision)
    intensity = result.flops_per_sample / counted.bytes_per_sample
    fused = result.flops_per_sample / counted.bytes_per_sample_fused
    ceiling = roofline.compute_ceiling(CEILING_OF[precision])
    memory = roofline.ceilings.memory.bytes_per_s
    notes = [n for n in (counted.note,) if n]
    same = _same_device(roofline, run)
    if same is False:
        used = (run.cpu_model if result.device_kind == "cpu" else run.accelerator_model) or result.device_kind
        notes.append(f"ran on {used}, not on {roofline.device.name}: not compared with these ceilings")
        ceiling = None
    elif ceiling is None:
        notes.append(f"no {precision} compute ceiling was measured")
    attainable = min(ceiling.flops_per_s, memory * intensity) if ceiling else None
    bound: Literal["memory", "compute"] | None = None
    if ceiling is not None:
        bound = "memory" if memory * intensity < ceiling.flops_per_s else "compute"
    return WorkloadPoint(
        label=f"{result.spec_id} run {result.run} ({precision}, batch {batch})",
        source=str(run.path),
        spec_id=result.spec_id,
        run=result.run,
        model=run.model,
        precision=precision,
        device_kind=result.device_kind,
        accelerator_model=run.accelerator_model,
        same_device=same,
        batch_per_device=batch,
        flops_per_s=achieved,
        flops_per_sample=result.flops_per_sample,
        bytes_per_sample=counted.bytes_per_sample,
        bytes_per_sample_fused=counted.bytes_per_sample_fused,
        intensity_flop_per_byte=intensity,
        intensity_fused_flop_per_byte=fused,
        bytes_method=counted.method,
        bytes_model=counted.description,
        ceiling_precision=ceiling.precision if ceiling else None,
        attainable_flops_per_s=attainable,
        bound=bound,
        fraction_of_attainable=achieved / attainable if attainable else None,
        note="; ".join(notes) or None,
    )


def place(roofline: Roofline, paths: Iterable[str | Path]) -> Roofline:
    """A copy of `roofline` with every run under `paths` placed (or listed as skipped, with the reason)."""
    points: list[WorkloadPoint] = []
    skipped: list[Skipped] = []
    for path in result_files(paths):
        run = load_run(path)
        try:
            points.append(place_run(roofline, run))
        except ValueError as err:
            skipped.append(Skipped(what=str(path), reason=str(err)))
    return roofline.model_copy(update={"workloads": points, "workloads_skipped": skipped})
