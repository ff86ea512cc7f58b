"""MLPerf's published figures of one imported benchmark folder, for import.json and the import's report.

A training or strong-scaling folder gets the time to train, an MLPerf HPC weak-scaling folder models per
minute. The arithmetic is MLPerf's result_summarizer's (specbench.mlperf.published*); here the folder's
result logs, with the validator's verdict on each, and its power logs are handed to it, and a
measured switch log that the summarizer counts as zero becomes SB-MLP-020.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from specbench.errors import UsageError
from specbench.formats.mllog import ParsedLog
from specbench.formats.mlperf_import import ImportFinding, Published
from specbench.mlperf.powerfiles import RunPower
from specbench.mlperf.published import runs_rule
from specbench.mlperf.published_energy import PowerEvent, published_energy, unmeasured_interconnect
from specbench.mlperf.published_runs import ResultFile, published_benchmark, published_weak
from specbench.mlperf.source import BenchmarkSource, result_name


def _power_logs(
    power: RunPower | None,
) -> tuple[tuple[tuple[PowerEvent, ...], ...], tuple[tuple[PowerEvent, ...], ...]]:
    """(node logs, switch logs) of one result's power folder, as the events the importer read from them."""
    if power is None:
        return (), ()
    return tuple(tuple(log.events) for log in power.nodes.values()), tuple(tuple(log.events) for log in power.switches)


def published_figures(
    source: BenchmarkSource,
    folder: str,
    logs: Sequence[tuple[Path, ParsedLog, bool]],
    power: Mapping[str, RunPower],
    usage: str,
    ruleset: str,
    division: str,
    scaling_factor: float,
) -> tuple[Published, list[ImportFinding]]:
    """MLPerf's figures for a benchmark folder (`folder`: its path below the organisation, for messages); `logs` are
    (result file, parsed log, whether the validator passes it); `power` the power folders the importer read."""
    files, findings = [], []
    for path, log, compliant in logs:
        nodes, switches = _power_logs(power.get(result_name(path)))
        files.append(ResultFile(result_name(path), log, nodes, switches, compliant))
    if source.scaling_mode == "weak":
        return _weak_figures(source, folder, files, ruleset, division)
    figures = published_benchmark(
        files, source.name, usage, ruleset, division, scaling_factor, has_power=source.power is not None
    )
    times = [run.window.time_ms if run.counted and run.window else None for run in figures.runs]
    joules = [e.energy_j if e is not None else None for e in figures.run_energies]
    for index, (file, time_ms) in enumerate(zip(files, times, strict=True)):
        unmeasured = unmeasured_interconnect(file.switches, time_ms) if time_ms is not None else None
        if unmeasured is None:
            continue
        names = [f"{folder}/power/{file.name}/sw_{i}.txt" for i in unmeasured.switches]
        findings.append(
            ImportFinding(code="SB-MLP-020", file=names[0], message=unmeasured.message(names, joules[index]))
        )
        if joules[index] is not None and unmeasured.measured_j is not None:
            joules[index] = joules[index] + unmeasured.measured_j - unmeasured.summarizer_j  # type: ignore[operator]
    time = figures.time
    energy = figures.energy.energy_j if figures.energy is not None else None
    extra = None
    if findings and energy is not None:
        extra = published_energy(times, joules, source.name, usage, ruleset, scaling_factor).energy_j
    published = Published(
        scaling_mode=source.scaling_mode,
        runs_required=time.runs_required if time is not None else _required(usage, ruleset, source.name),
        runs_counted=sum(r.counted for r in figures.runs),
        olympic_mean_s=time.olympic_mean_s if time is not None else None,
        scaling_factor=scaling_factor,
        time_to_train_s=time.published_s if time is not None else None,
        energy_j=energy,
        energy_with_interconnect_j=extra,
        crash=figures.crash,
    )
    return published, findings


def _weak_figures(
    source: BenchmarkSource, folder: str, files: Sequence[ResultFile], ruleset: str, division: str
) -> tuple[Published, list[ImportFinding]]:
    """MLPerf HPC's weak-scaling figures of a folder under weak/: models per minute, and the summarizer's energy
    (the mean of the models' energies without the lowest) where the folder has power logs."""
    figures = published_weak(files, source.name, ruleset, division, has_power=source.power is not None)
    findings = []
    for file, run in zip(files, figures.runs, strict=True):
        time_ms = run.window.time_ms if run.counted and run.window else None
        unmeasured = unmeasured_interconnect(file.switches, time_ms) if time_ms is not None else None
        if unmeasured is not None:
            names = [f"{folder}/power/{file.name}/sw_{i}.txt" for i in unmeasured.switches]
            findings.append(ImportFinding(code="SB-MLP-020", file=names[0], message=unmeasured.message(names)))
    scaling = figures.scaling
    published = Published(
        runs_required=scaling.models_required if scaling is not None else _required("hpc", ruleset, source.name),
        runs_counted=sum(r.counted for r in figures.runs),
        olympic_mean_s=None,
        scaling_factor=1.0,
        time_to_train_s=None,
        energy_j=figures.energy_j,
        crash=figures.crash,
        scaling_mode="weak",
        models_per_min=scaling.throughput_models_per_min if scaling is not None else None,
        number_of_models=scaling.number_of_models if scaling is not None else None,
        instance_scale=scaling.instance_scale if scaling is not None else None,
        time_to_train_all_s=scaling.time_to_train_all_s if scaling is not None else None,
        problem=scaling.problem if scaling is not None else None,
    )
    return published, findings


def _required(usage: str, ruleset: str, benchmark: str) -> int:
    """Result files MLPerf's package checker wants; 1 for a benchmark its tables do not know (the summarizer
    then stops, which `crash` says)."""
    try:
        return runs_rule(usage, ruleset, benchmark).runs_required
    except UsageError:
        return 1
