"""What a re-run executes: the submission's spec, profile, level, overrides and seeds as execute's own options.

The overrides are the submission's hyperparameters and settings where they differ from what execute
would use by itself on this device, given as `--set KEY=VALUE`: execute checks them against the
spec's rules at the level like any override, so a submission can ask for nothing a submitter could
not. A setting that today's executor drops for this configuration (a data-loader option of a run on
synthetic tensors) is noted, not set; one it does not know at all is refused.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specbench.errors import UsageError
from specbench.formats.reproduction import Seeds
from specbench.reproduce.source import Source
from specbench.run.config import build_configs
from specbench.run.executors import get_executor
from specbench.run.options import ExecuteOptions, Torchrun
from specbench.run.request import RUNS_MAX, SEED_MAX
from specbench.spec.resolve import ResolvedSpec

RENAMED_SETTINGS = {"compile": "compile_mode"}
"""Executor settings renamed since submissions recorded them, old name -> today's (docs/reproduce.md)."""


@dataclass(frozen=True)
class RerunRequest:
    """How the re-run is done here: its folder (None: reproductions/ORG/SYSTEM), its number of runs (None: the
    submission's), data and power."""

    out: Path | None = None
    runs: int | None = None
    data: Path | None = None
    power: str = "auto"
    interval_ms: float = 100.0


@dataclass(frozen=True)
class Plan:
    """The execute options of the re-run, the overrides among them, what was noted, and the seeds."""

    options: ExecuteOptions
    overrides: tuple[str, ...]
    notes: tuple[str, ...]
    seeds: Seeds


def plan_rerun(source: Source, request: RerunRequest, out: Path, device: str) -> Plan:
    """The re-run of `source` into `out` on `device` ('cuda' or 'cpu'); UsageError where execute cannot express it."""
    resolved = source.bench.spec
    assert resolved is not None  # load_source refused a benchmark without its spec
    if source.nodes > 1:
        raise UsageError(
            f"{source.given} ran on {source.nodes} nodes; reproduce re-runs jobs of one node (use execute on each node)"
        )
    overrides, notes = overrides_for(source, resolved, device)
    seeds = seeds_for(source.seeds)
    runs = request.runs or len(source.seeds)
    options = ExecuteOptions(
        spec=str(source.spec.path), out=out, profile=resolved.profile, level=resolved.level, runs=runs,
        sets=tuple(overrides), data=request.data, synthetic=_synthetic(source, resolved), device=device,
        power=request.power, interval_ms=request.interval_ms, seed=seeds.base_seed,
        torchrun=Torchrun(nproc_per_node=source.processes),
    )  # fmt: skip
    return Plan(options, tuple(overrides), tuple(notes), seeds)


def overrides_for(source: Source, resolved: ResolvedSpec, device: str) -> tuple[list[str], list[str]]:
    """`KEY=VALUE` for each submitted value that differs from execute's own on `device`, and the notes."""
    executor = get_executor(resolved.spec.workload.executor)
    base = build_configs(resolved, executor.options, [], device, executor.defaults_for(resolved))[0]
    with contextlib.suppress(UsageError):  # the defaults alone may not run; the re-run's plan checks the overrides
        executor.check_config(resolved, base)  # drops the settings that do not apply to this configuration
    overrides, notes = [], []
    for key, value in source.meta.hyperparameters.items():
        if base.hyperparameters.get(key) != value or key not in base.hyperparameters:
            overrides.append(_setting(key, value))
    for key, value in _settings(source.meta.layers).items():
        name = RENAMED_SETTINGS.get(key, key)
        if name not in executor.options:
            known = ", ".join(sorted(executor.options))
            raise UsageError(
                f"{source.given}: setting {key}={value!r} is no option of the {executor.name} executor here "
                f"(known: {known}); it cannot be re-run as submitted"
            )
        if name != key:
            notes.append(f"setting {key} is named {name} today")
        if name not in base.settings:
            notes.append(f"setting {key}={_text(value)} is not used by this configuration today; not set")
        elif base.settings[name] != value:
            overrides.append(_setting(name, value))
    submitted = {RENAMED_SETTINGS.get(key, key) for key in _settings(source.meta.layers)}
    for name, value in base.settings.items():
        before = executor.options[name].absent
        if name not in submitted and before is not None and value != before:
            overrides.append(_setting(name, before))
            notes.append(
                f"setting {name} is not in the submission (made before it existed); re-run with {name}={_text(before)}, as it ran"
            )
    return overrides, notes


def _settings(layers: Mapping[Any, Mapping[str, Any]]) -> dict[str, Any]:
    """submission.yaml's settings of every layer, by name."""
    return {name: value for params in layers.values() for name, value in params.items()}


def _setting(key: str, value: Any) -> str:
    return f"{key}={_text(value)}"


def _text(value: Any) -> str:
    """A value as `--set` reads it back to the same value (true, 256, 0.256, sgd); lists and commas cannot be."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str) and "," not in value and value.strip() == value and value:
        return value
    raise UsageError(f"a submitted value {value!r} cannot be given as --set KEY=VALUE; it cannot be re-run")


def _synthetic(source: Source, resolved: ResolvedSpec) -> bool:
    """--synthetic: a throughput run on random data where the spec names a real dataset (as execute took it)."""
    spec = resolved.spec
    return source.meta.synthetic_data and spec.kind == "throughput" and not spec.workload.dataset.synthetic


def seeds_for(seeds: list[int | None]) -> Seeds:
    """execute's --seed N gives run K the seed N + K - 1: the submission's seeds replay when they run so."""
    first = seeds[0] if seeds else None
    consecutive = first is not None and seeds == list(range(first, first + len(seeds)))
    if first is not None and consecutive and 0 <= first <= SEED_MAX - RUNS_MAX:
        return Seeds(submitted=seeds, replayed=True, base_seed=first, note=f"--seed {first}")
    note = "the submission's seeds do not run N, N+1, ... (execute drew them at random); the re-run draws its own"
    return Seeds(submitted=seeds, replayed=False, base_seed=None, note=note)
