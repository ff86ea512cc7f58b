"""MLPerf's published figures of one imported benchmark folder, for import.json and the import's report.

The arithmetic is MLPerf's result_summarizer's (specbench.mlperf.published*); here the folder's
result logs, with the validator's verdict on each, and its power logs are handed to it, and a
measured switch log that the summarizer counts as zero becomes SB-MLP-020.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from specbench.errors import UsageError
from specbench.formats.mllog import ParsedLog
from specbench.formats.mlperf_import import ImportFinding, Published
from specbench.mlperf.published import runs_rule
from specbench.mlperf.published_energy import PowerEvent, published_energy, read_power_events, unmeasured_interconnect
from specbench.mlperf.published_runs import ResultFile, published_benchmark
from specbench.mlperf.source import NODE, BenchmarkSource, SourceError, natural_key, read_bytes, result_name


def _power_logs(folder: Path | None) -> tuple[tuple[tuple[PowerEvent, ...], ...], tuple[tuple[PowerEvent, ...], ...]]:
    """(node logs, switch logs) of one result's power folder, each read as MLPerf's parser reads it."""
    nodes: list[tuple[PowerEvent, ...]] = []
    switches: list[tuple[PowerEvent, ...]] = []
    if folder is None or not folder.is_dir():
        return (), ()
    for path in sorted(folder.iterdir(), key=lambda p: natural_key(p.name)):
        match = NODE.match(path.name)
        if match is None or path.is_symlink():
            continue
        try:
            events = read_power_events(read_bytes(path).decode("utf-8", errors="replace"))
        except SourceError:
            continue
        (nodes if match.group(1) == "node" else switches).append(events)
    return tuple(nodes), tuple(switches)


def published_figures(
    source: BenchmarkSource,
    logs: Sequence[tuple[Path, ParsedLog, bool]],
    usage: str,
    ruleset: str,
    division: str,
    scaling_factor: float,
) -> tuple[Published, list[ImportFinding]]:
    """MLPerf's figures for a benchmark folder; `logs` are (result file, parsed log, whether the validator passes it)."""
    files, findings = [], []
    folder = source.path.relative_to(source.path.parents[2] if source.scaling_mode else source.path.parents[1])
    for path, log, compliant in logs:
        power = source.power / result_name(path) if source.power is not None else None
        nodes, switches = _power_logs(power)
        files.append(ResultFile(result_name(path), log, nodes, switches, compliant))
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


def _required(usage: str, ruleset: str, benchmark: str) -> int:
    """Result files MLPerf's package checker wants; 1 for a benchmark its tables do not know (the summarizer
    then stops, which `crash` says)."""
    try:
        return runs_rule(usage, ruleset, benchmark).runs_required
    except UsageError:
        return 1
