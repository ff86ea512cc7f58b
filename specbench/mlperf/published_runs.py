"""Which result files MLPerf's result summarizer counts, and a benchmark's published figures from its files.

The summarizer scores a file only if MLPerf's compliance checker passes it, MLPerf's parser reads every
MLLOG line, and run_start and run_stop are logged (RS:122-138, RS:369-378 of mlperf-logging 4.1.68's
result_summarizer.py); any other file is a dropped run. A run_stop status of "aborted" is not itself
rejected (common.yaml only asks that a status exists); a run is rejected when no evaluation ever meets
the target: the benchmark rule file's ATLEAST_ONE_CHECK, kept here as data. The checker's other rules
(hyperparameters, init time...) are the caller's `compliant` verdict. `published_benchmark` and
`published_weak` put the pieces together as `_compute_strong_score_standalone` (RS:351-430) and
`_compute_weak_score_standalone` (RS:433-495) do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from specbench.formats.mllog import ParsedLog
from specbench.mlperf.published import (
    ROUND_BENCHMARKS,
    RunWindow,
    TimeToTrain,
    WeakScaling,
    instance_scale,
    published_time_to_train,
    run_window,
    weak_scaling,
)
from specbench.mlperf.published_energy import (
    PowerEvent,
    PublishedEnergy,
    RunEnergy,
    published_energy,
    run_energy,
    weak_scaling_energy_j,
)


@dataclass(frozen=True)
class Bound:
    """One side or both of a comparison of ATLEAST_ONE_CHECK on an event's value, or on value[field]."""

    low: float | None = None
    low_closed: bool = True
    high: float | None = None
    high_closed: bool = True
    field: str | None = None

    def holds(self, value: Any) -> bool:
        if self.field is not None:
            value = value.get(self.field) if isinstance(value, dict) else None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if self.low is not None and not (value >= self.low if self.low_closed else value > self.low):
            return False
        return self.high is None or (value <= self.high if self.high_closed else value < self.high)


@dataclass(frozen=True)
class TargetCheck:
    """A rule file's ATLEAST_ONE_CHECK: some event of `key` meets every bound, or the log is rejected."""

    key: str
    bounds: tuple[Bound, ...]

    def reached(self, log: ParsedLog) -> bool:
        return any(all(b.holds(value) for b in self.bounds) for value in _values(log, self.key))


def _values(log: ParsedLog, key: str) -> list[Any]:
    """The values a check sees; stable_diffusion's rule files first merge each evaluation's FID and CLIP
    eval_accuracy lines into one `aggregated_eval_accuracy` value per samples_count (their BEGIN block)."""
    if key != AGGREGATED:
        return [event.value for event in log.all(key)]
    merged: dict[Any, dict[str, Any]] = {}
    for event in log.all("eval_accuracy"):
        if "metric" in event.metadata:
            count = event.metadata.get("samples_count")
            merged.setdefault(count, {"samples_count": count})[event.metadata["metric"]] = event.value
    return list(merged.values())


def _check(key: str, *bounds: Bound) -> TargetCheck:
    return TargetCheck(key, bounds)


_ACC = "eval_accuracy"
AGGREGATED = "aggregated_eval_accuracy"
_BELOW_ONE = _check(_ACC, Bound(high=1.0, high_closed=False))
_SD_CLOSED = _check(AGGREGATED, Bound(0.0, True, 90.0, True, "FID"), Bound(0.15, True, 1.0, True, "CLIP"))
_CLOSED = {
    "bert": _check(_ACC, Bound(0.720, True, 1.0, False)),
    "dlrm_dcnv2": _check(_ACC, Bound(0.80275, True, 1.0, True)),
    "gnn": _check(_ACC, Bound(0.72, True, 1.0, False)),
    "rgat": _check(_ACC, Bound(0.72, True, 1.0, False)),
    "gpt3": _check(_ACC, Bound(2.6, False, 2.69, True)),
    "llama2_70b_lora": _check(_ACC, Bound(0.0, False, 0.925, True)),
    "llama31_405b": _check(_ACC, Bound(0.0, False, 5.6, True)),
    "llama31_8b": _check(_ACC, Bound(0.0, False, 3.3, True)),
    "flux1": _check(_ACC, Bound(0.0, False, 0.586, True)),
    "resnet": _check(_ACC, Bound(0.7590, True, 1.0, False)),
    "ssd": _check(_ACC, Bound(0.340, True, 1.0, False)),
    "retinanet": _check(_ACC, Bound(0.340, True, 1.0, False)),
    "stable_diffusion": _SD_CLOSED,
    "unet3d": _check(_ACC, Bound(0.908, True)),
}
_OPEN = {
    **dict.fromkeys(
        ("bert", "gnn", "rgat", "llama2_70b_lora", "llama31_8b", "resnet", "ssd", "retinanet", "unet3d"), _BELOW_ONE
    ),
    "dlrm_dcnv2": _check(_ACC, Bound(high=1.0)),
    "gpt3": _CLOSED["gpt3"],
    "llama31_405b": _CLOSED["llama31_405b"],
    "flux1": _check("averaged_validation_loss", Bound(0.0, False, 0.586, True)),
    "stable_diffusion": _check(AGGREGATED, Bound(0.0, True, field="FID"), Bound(high=1.0, field="CLIP")),
}
_HPC = {
    "cosmoflow": _check("eval_error", Bound(0.0, False, 0.124, True)),
    "deepcam": _check(_ACC, Bound(0.82, True, 1.0, True)),
    "oc20": _check("eval_error", Bound(0.0, False, 0.036, True)),
    "openfold": _check(_ACC, Bound(0.8, True, 1.0, True)),
}
TARGET_CHECKS: Mapping[tuple[str, str, str], TargetCheck] = MappingProxyType(
    {
        **{("training", "closed", b): c for b, c in _CLOSED.items()},
        **{("training", "open", b): c for b, c in _OPEN.items()},
        **{("hpc", division, b): c for b, c in _HPC.items() for division in ("closed", "open")},
    }
)
"""ATLEAST_ONE_CHECK of {division}_{benchmark}.yaml by (usage, division, benchmark); the same in every
ruleset that has the benchmark, training 4.0.0-5.1.0 and HPC 1.0.0-3.0.0 (open flux1: 5.1.0)."""


@dataclass(frozen=True)
class RunCount:
    """Whether the summarizer scores one result file, its run window, and why not where it does not."""

    counted: bool
    window: RunWindow | None
    reason: str | None = None


def counted_run(log: ParsedLog, usage: str, division: str, benchmark: str, compliant: bool = True) -> RunCount:
    """Whether the summarizer scores this log (RS:369-378); `compliant` is the verdict on MLPerf's other rules."""
    window = run_window(log)
    if log.problems:
        problem = log.problems[0]
        return RunCount(False, window, f"line {problem.line} does not read: {problem.message}")
    check = TARGET_CHECKS.get((usage, division, benchmark))
    if check is not None and not check.reached(log):
        return RunCount(False, window, f"no {check.key} meets the target of {division}_{benchmark}.yaml")
    for key in ("run_start", "run_stop"):
        values = [e.value for e in log.all(key)]
        if not values or any(v != values[0] for v in values):
            return RunCount(False, window, f"expected one {key} (or repeats of one value), found {len(values)}")
    if any("status" not in e.metadata for e in log.all("run_stop")):
        return RunCount(False, window, "run_stop has no status in its metadata")
    if not compliant:
        return RunCount(False, window, "MLPerf's compliance checker rejects the log")
    return RunCount(True, window)


@dataclass(frozen=True)
class ResultFile:
    """One result_*.txt as the summarizer meets it, with the logs of power/<its name>/ where the benchmark has power."""

    name: str
    log: ParsedLog
    nodes: tuple[tuple[PowerEvent, ...], ...] = ()
    switches: tuple[tuple[PowerEvent, ...], ...] = ()
    compliant: bool = True


@dataclass(frozen=True)
class PublishedBenchmark:
    """What the summarizer publishes for one benchmark folder: time to train, energy where power was logged."""

    benchmark: str
    runs: tuple[RunCount, ...]
    time: TimeToTrain | None
    run_energies: tuple[RunEnergy | None, ...] = ()
    energy: PublishedEnergy | None = None
    crash: str | None = None
    """Why the summarizer stops with a traceback here (and so publishes nothing for the whole organisation)."""


def _unknown(usage: str, ruleset: str, benchmark: str) -> str | None:
    known = ROUND_BENCHMARKS.get((usage, ruleset), ())
    return None if benchmark in known else f"AssertionError (RS:246): {benchmark} is no {usage} {ruleset} benchmark"


def published_benchmark(
    files: Sequence[ResultFile],
    benchmark: str,
    usage: str,
    ruleset: str,
    division: str,
    scaling_factor: float = 1.0,
    has_power: bool = False,
) -> PublishedBenchmark:
    """The summarizer's figures for a (strong-scaling) benchmark folder; `has_power`: it has a power/ folder (RS:689)."""
    runs = tuple(counted_run(f.log, usage, division, benchmark, f.compliant) for f in files)
    crash = _unknown(usage, ruleset, benchmark)
    if crash:
        return PublishedBenchmark(benchmark, runs, None, crash=crash)
    times = [run.window.time_ms if run.counted and run.window else None for run in runs]
    energies: list[RunEnergy | None] = []
    for file, time_ms in zip(files, times, strict=True):
        energy = run_energy(file.nodes, file.switches, time_ms) if has_power and time_ms is not None else None
        if energy is not None and energy.crash:
            return PublishedBenchmark(benchmark, runs, None, crash=f"{file.name}: {energy.crash}")
        energies.append(energy)
    time = published_time_to_train(times, benchmark, usage, ruleset, scaling_factor)
    if not has_power:
        return PublishedBenchmark(benchmark, runs, time)
    joules = [e.energy_j if e is not None else None for e in energies]
    published = published_energy(times, joules, benchmark, usage, ruleset, scaling_factor)
    return PublishedBenchmark(benchmark, runs, time, tuple(energies), published)


@dataclass(frozen=True)
class PublishedWeak:
    """What the summarizer publishes for one HPC weak-scaling benchmark folder."""

    benchmark: str
    runs: tuple[RunCount, ...]
    scaling: WeakScaling | None
    energy_j: float | None = None
    crash: str | None = None


def published_weak(
    files: Sequence[ResultFile], benchmark: str, ruleset: str, division: str, has_power: bool = False
) -> PublishedWeak:
    """The summarizer's weak-scaling tuple (and energy) for a benchmark folder under weak/ (RS:433-495)."""
    runs = tuple(counted_run(f.log, "hpc", division, benchmark, f.compliant) for f in files)
    crash = _unknown("hpc", ruleset, benchmark)
    if crash:
        return PublishedWeak(benchmark, runs, None, crash=crash)
    scales = [instance_scale(f.log) for f in files]
    scaling = weak_scaling(
        [(run.window if run.counted else None, scale) for run, scale in zip(runs, scales, strict=True)],
        benchmark,
        ruleset,
    )
    if scaling.crash:
        return PublishedWeak(benchmark, runs, scaling, crash=scaling.crash)
    energies = []
    for file, run, scale in zip(files, runs, scales, strict=True):
        if has_power and run.counted and run.window is not None and scale is not None:
            energy = run_energy(file.nodes, file.switches, run.window.time_ms)
            if energy.energy_j is None:
                return PublishedWeak(benchmark, runs, scaling, crash=f"{file.name}: {energy.crash}")
            energies.append(energy.energy_j)
    return PublishedWeak(benchmark, runs, scaling, weak_scaling_energy_j(energies) if has_power else None)
