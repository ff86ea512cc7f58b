"""Placing submitted runs on a roofline: achieved FLOP/s per device against FLOPs per byte of device memory.

Operational intensity needs the bytes a training step moves per sample: analytical byte models,
one per workload model (specbench.roofline.bytemodels). A run that none fits is listed as skipped
with the reason, never placed at a guessed intensity.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from specbench.accounting.accounts import computed_flops_per_s
from specbench.errors import InputError, Location, Problem, SpecbenchError
from specbench.roofline.bytemodels import ACTIVATION_BYTES, BYTE_MODELS, RunContext
from specbench.roofline.format import Precision, Roofline, Skipped, WorkloadPoint
from specbench.spec.models import first_error
from specbench.spec.result import RunResult
from specbench.validator.documents import load_json, load_yaml
from specbench.validator.files import DEFAULT_LIMITS, Tree
from specbench.validator.findings import Findings

CEILING_OF: dict[str, Precision] = {"fp32": "fp32", "tf32": "tf32", "bf16": "bf16", "fp16": "fp16"}


SYSTEM_FILE = "system.yaml"
RESULT_FILE = "result.json"


@dataclass(frozen=True)
class Found:
    """A run's result.json, and the confined listing of the submission folder it lies in (the one door)."""

    tree: Tree
    rel: str

    @property
    def path(self) -> Path:
        return self.tree.root / self.rel


def _root_of(folder: Path) -> Path | None:
    """The ORG/SYSTEM folder at or above a run, benchmark or submission folder: the nearest holding system.yaml."""
    for candidate in [folder, *folder.parents][:3]:
        if os.path.lexists(candidate / SYSTEM_FILE):
            return candidate
    return None


def _roots(path: Path) -> list[tuple[Path, str]]:
    """(confinement root, the part of it asked for) of a path: its submission, the submissions below it, or
    (a folder of runs outside any submission) the folder itself."""
    root = _root_of(path)
    if root is not None:
        return [(root, "" if root == path else path.relative_to(root).as_posix() + "/")]
    from specbench.validator.validate import discover

    below = [folder for folder in discover(path) if folder != path]
    return [(folder, "") for folder in below] or [(path, "")]


def result_files(paths: Iterable[str | Path]) -> list[Found]:
    """Every result.json at or under the given paths (a run folder, a benchmark, a whole submission, a tree of
    submissions), listed through the validator's confined tree: no link followed, regular files only."""
    found: list[Found] = []
    for raw in paths:
        path = Path(raw)
        if not os.path.lexists(path):
            raise InputError([Problem(Location(str(path)), "no such file or folder")])
        if path.is_symlink() or not (path.is_dir() or path.is_file()):
            raise InputError([Problem(Location(str(path)), "expected a regular file or folder, found a link")])
        if path.is_file():
            run = path.parent
            root = _root_of(run) or run.parent
            found.append(Found(_scan(root), path.relative_to(root).as_posix()))
            continue
        for root, below in _roots(path):
            tree = _scan(root)
            rels = sorted(r for r in tree.files if r.startswith(below) and r.rpartition("/")[2] == RESULT_FILE)
            found += [Found(tree, rel) for rel in rels]
    return list({str(f.path): f for f in found}.values())


def _scan(root: Path) -> Tree:
    findings = Findings()
    tree = Tree.scan(root, DEFAULT_LIMITS, findings)
    return tree


def _read(found: Found, rel: str, yaml: bool) -> Any:
    """A file of the run's submission through its tree; None where it is missing; InputError where unreadable."""
    if not found.tree.has(rel):
        return None
    findings = Findings()
    loaded = (load_yaml if yaml else load_json)(found.tree, rel, findings)
    if loaded is None:
        shown = "; ".join(f.message for f in findings.items) or "cannot be read"
        raise InputError(
            [Problem(Location(str(found.tree.root / rel)), f"cannot read {'YAML' if yaml else 'JSON'}: {shown}")]
        )
    return loaded.data


def _mapping(data: Any) -> dict[str, Any]:
    return data if isinstance(data, dict) else {}


def load_run(found: Found) -> RunContext:
    """The run's result.json, its benchmark's submission.yaml and its system's system.yaml (both optional)."""
    path = found.path
    try:
        result = RunResult.model_validate(_read(found, found.rel, yaml=False))
    except ValidationError as err:
        where, message = first_error(err)
        raise InputError([Problem(Location(str(path), json_path=where), f"not a run result: {message}")]) from err
    bench = found.rel.rpartition("/")[0].rpartition("/")[0]
    submission = _mapping(_read(found, f"{bench}/submission.yaml" if bench else "submission.yaml", yaml=True))
    system = _mapping(_read(found, SYSTEM_FILE, yaml=True)) if bench and "/" not in bench else {}
    hardware = _mapping(_mapping(system.get("layers")).get("hardware"))
    dataset = _mapping(submission.get("dataset"))
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
    for found in result_files(paths):
        run = load_run(found)
        try:
            points.append(place_run(roofline, run))
        except ValueError as err:
            skipped.append(Skipped(what=str(found.path), reason=str(err)))
    return roofline.model_copy(update={"workloads": points, "workloads_skipped": skipped})
