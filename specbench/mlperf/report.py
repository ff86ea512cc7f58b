"""What `specbench import mlperf` prints: per system, where it went, its runs, its scores and its findings.

The findings are summarised by code (validate's `render_summary`: counts, the first of each, the verdict), or
listed one by one (`full`); either way a finding that may explain others (a log line that cannot be parsed)
comes first.

Findings in an imported log or trace also name the MLPerf file and line they come from: a log is
verbatim (its lines are the source's lines), and each power.csv row maps to one node log line.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

from specbench.formats.mlperf_import import ImportedBenchmark, Published
from specbench.mlperf.convert import BenchmarkImport, RunImport, SystemImport
from specbench.mlperf.importer import ImportOutcome, SystemOutcome
from specbench.mlperf.source import natural_key
from specbench.textsafe import visible
from specbench.validator.findings import Finding
from specbench.validator.model import Report
from specbench.validator.render import cause_first, consequence_notes, render_summary

REPORT_FORMAT_VERSION = 1


def source_of(imported: SystemImport, finding: Finding) -> str | None:
    """The MLPerf file (and line) behind a finding in a run's log.txt or power.csv, relative to the org folder."""
    file, line = finding.location.file or "", finding.location.line
    parts = file.split("/")
    if len(parts) != 3:
        return None
    run = _run(imported, parts[0], parts[1])
    if run is None:
        return None
    if parts[2] == "log.txt":
        return run.source.path + (f":{line}" if line is not None else "")
    if parts[2] == "power.csv" and run.power is not None:
        if line is None or not 2 <= line < len(run.csv_rows) + 2:
            return run.power.folder
        device, source_line = run.csv_rows[line - 2]
        return f"{run.power.nodes[device].path}:{source_line}"
    return None


def verdict(report: Report, werror: bool = False) -> str:
    """'compliant', or 'non-compliant' with the counts of errors and warnings."""
    state = "compliant" if report.compliant(werror) else "non-compliant"
    return f"{state}: {len(report.errors)} error(s), {len(report.warnings)} warning(s)"


def _run(imported: SystemImport, bench: str, folder: str) -> RunImport | None:
    for benchmark in imported.benchmarks:
        if benchmark.name == bench:
            return next((r for r in benchmark.runs if r.folder == folder), None)
    return None


def _energy(run: RunImport) -> tuple[str, str]:
    power = run.result.power
    if not power.measured or power.energy_j is None:
        return "-", "-"
    return f"{power.energy_j / 1e6:.3f}", f"{power.mean_power_w:,.0f}" if power.mean_power_w else "-"


def _coverage(run: RunImport) -> str:
    if run.power is None or not run.power.coverage:
        return "-"
    parts = []
    for item in run.power.coverage:
        if item.uncovered_start_s is None or item.uncovered_stop_s is None:
            parts.append(f"{item.device}: no reading in the run")
        else:
            parts.append(f"{item.uncovered_start_s:.2f} s / {item.uncovered_stop_s:.2f} s")
    return "; ".join(parts)


def _runs_table(bench: BenchmarkImport) -> str:
    rows = []
    for run in bench.runs:
        result = run.result
        energy, mean = _energy(run)
        rows.append(
            [
                run.folder,
                run.source.path.rsplit("/", 1)[-1],
                result.status,
                f"{result.duration_s:,.1f}" if result.duration_s is not None else "-",
                f"{result.quality.best:.5g}" if result.quality and result.quality.best is not None else "-",
                f"{run.epochs:g}" if run.epochs is not None else "-",
                energy,
                mean,
                _coverage(run),
            ]
        )
    headers = ["run", "MLPerf log", "status", "time s", "best", "epochs", "energy MJ", "mean W", "uncovered edges"]
    return plain_table(rows, headers)


def plain_table(rows: list[list[str]], headers: list[str]) -> str:
    """`tabulate(rows, headers, tablefmt="plain", disable_numparse=True)`, without importing tabulate for it.

    Each column as wide as its widest cell, and at least its header and two; columns two spaces
    apart; cells left-aligned; each line without trailing spaces. Cells other than printable ASCII
    without leading or trailing spaces (wide characters, line breaks) and rows of another length
    than the headers are left to tabulate.
    """
    cells = [*headers, *(cell for row in rows for cell in row)]
    plain = all(cell.isascii() and cell.isprintable() and cell == cell.strip() for cell in cells)
    if not plain or any(len(row) != len(headers) for row in rows):
        from tabulate import tabulate

        return tabulate(rows, headers=headers, tablefmt="plain", disable_numparse=True)
    widths = [max([len(header) + 2, *(len(row[i]) for row in rows)]) for i, header in enumerate(headers)]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in [headers, *rows]
    )


def _score_line(system: SystemOutcome, bench: str) -> str:
    entry = next((e for e in system.entries if e.benchmark == bench), None)
    if entry is None:
        return "score: not scored"
    if entry.key.scaling == "weak":
        return "score: none by specbench (models per minute: MLPerf's figure below)\n    " + "; ".join(entry.unranked)
    values = entry.aggregate.values

    def fmt(metric: str, scale: float, unit: str, spec: str = "{:,.4g}") -> str:
        value = values.get(metric)
        return "n/a" if value is None else f"{spec.format(value * scale)} {unit}"

    used = ", ".join(sorted(entry.aggregate.used, key=natural_key)) or "none"
    factor, raw = values.get("mlperf_scaling_factor"), values.get("time_s_unscaled")
    scaled = f" (olympic mean {raw:,.1f} s x scaling factor {factor:.6g})" if factor and raw is not None else ""
    line = (
        f"score ({entry.key.profile}, {'olympic mean of ' if len(entry.aggregate.used) > 1 else ''}{used}): "
        f"time to train {fmt('time_s', 1, 's', '{:,.1f}')}{scaled}, "
        f"Valid FLOPS {fmt('valid_flops_per_s', 1e-12, 'TFLOP/s')}, "
        f"energy to train {fmt('energy_j', 1e-6, 'MJ', '{:,.3f}')}, Valid FLOPS/W {fmt('valid_flops_per_w', 1e-9, 'GFLOP/s/W')}"
    )
    status = "; ".join(entry.unranked) if entry.unranked else "rankable"
    return f"{line}\n    {status}"


def _published_lines(record: ImportedBenchmark) -> list[str]:
    """MLPerf's published figures of the benchmark (as its result summarizer computes them) and the energy's label."""
    lines = []
    published = record.published
    if published is not None:
        if published.crash is not None:
            figures = f"none: MLPerf's result summarizer stops here ({published.crash})"
        elif published.scaling_mode == "weak":
            figures = _weak_figures(published)
        else:
            time = "n/a" if published.time_to_train_s is None else f"{published.time_to_train_s:,.1f} s"
            figures = f"time to train {time} ({published.runs_counted} of {published.runs_required} runs counted)"
            if published.energy_j is not None:
                figures += f", energy {published.energy_j / 1e6:,.3f} MJ"
            if published.energy_with_interconnect_j is not None:
                figures += f" ({published.energy_with_interconnect_j / 1e6:,.3f} MJ with the measured switches)"
        lines.append(f"MLPerf's published figures: {figures}")
    label = record.energy
    if label is not None:
        rate = "n/a" if label.min_sampling_hz is None else f">= {label.min_sampling_hz:.2f} Hz"
        eff = ", ".join(f"{e:g}" for e in label.conversion_eff) or "none declared"
        lines.append(
            f"energy: boundary {label.boundary} (MLPerf's: {label.published_boundary}); nodes measured "
            f"{label.nodes_measured} of {label.nodes}; sampling {rate}; interconnect {label.interconnect}; "
            f"conversion_eff {eff}; meter: {label.meter}"
        )
    return lines


def _weak_figures(published: Published) -> str:
    """MLPerf HPC's weak-scaling figures: models per minute, the models and the time they took, energy."""
    counted = f"{published.runs_counted} models counted, at least {published.runs_required} required"
    if published.models_per_min is None or published.time_to_train_all_s is None:
        return f"weak scaling, none ({published.problem or counted})"
    scale = f" of {published.instance_scale} accelerators each" if published.instance_scale is not None else ""
    figures = (
        f"weak scaling {published.models_per_min:,.4g} models per minute ({published.number_of_models} models"
        f"{scale} in {published.time_to_train_all_s:,.1f} s; {counted})"
    )
    if published.energy_j is not None:
        figures += f", energy per model {published.energy_j / 1e6:,.3f} MJ"
    return figures


def render_system(system: SystemOutcome, werror: bool = False, full: bool = False) -> str:
    """One system: where it went, its runs, scores and published figures, then its findings by code (or each)."""
    imported, report = system.imported, system.report
    lines = [f"{imported.label} -> {imported.output}: {verdict(report, werror)}"]
    lines.extend(f"  note: {visible(note)}" for note in imported.notes)
    for bench in imported.benchmarks:
        lines.append(f"  {bench.name} (MLPerf {bench.mlperf}, {bench.record.folder}, level {bench.level})")
        lines.extend("    " + row for row in _runs_table(bench).splitlines())
        lines.append("  " + _score_line(system, bench.name))
        lines.extend("  " + line for line in _published_lines(bench.record))
        lines.extend(f"  ignored: {visible(str(item))}" for item in bench.record.ignored)
    if full:
        lines.extend(_every_finding(imported, report))
    else:
        source = partial(source_of, imported)
        lines.extend(
            render_summary(report.findings, verdict(report, werror), indent="  ", werror=werror, source=source)
        )
    return "\n".join(lines) + "\n"


def _every_finding(imported: SystemImport, report: Report) -> list[str]:
    lines = []
    findings = cause_first(report.findings)
    notes = consequence_notes(findings)
    for index, finding in enumerate(findings):
        where = visible(finding.location.file or "(the submission)")
        if finding.location.line is not None:
            where += f":{finding.location.line}"
        origin = source_of(imported, finding)
        lines.append(f"  {finding.severity} {finding.code} {where}: {visible(finding.message)}")
        if origin is not None:
            lines.append(f"      MLPerf source: {visible(str(origin))}")
        if index in notes:
            lines.append(f"      note: {notes[index]}")
    return lines


def render_text(outcome: ImportOutcome, werror: bool = False, full: bool = False) -> str:
    """Every system in turn (findings by code, or each with `full`), what was skipped, and a one-line tally."""
    parts = [render_system(s, werror, full) for s in outcome.systems]
    tail = [f"skipped: {visible(str(item))}" for item in outcome.skipped]
    compliant = sum(s.report.compliant(werror) for s in outcome.systems)
    tail.append(
        f"{len(outcome.systems)} system(s) imported from {outcome.root} into {outcome.out} "
        f"({'specs' if ',' in outcome.spec else 'spec'} {outcome.spec}): {compliant} compliant, {len(outcome.systems) - compliant} non-compliant"
    )
    return "\n".join(parts) + "\n" + "\n".join(tail) + "\n"


def _run_dict(run: RunImport) -> dict[str, Any]:
    result = run.result
    return {
        "run": run.folder,
        "source": run.source.path,
        "sha256": run.source.sha256,
        "status": result.status,
        "reason": result.reason,
        "duration_s": result.duration_s,
        "best": result.quality.best if result.quality else None,
        "epochs": run.epochs,
        "energy_j": result.power.energy_j,
        "mean_power_w": result.power.mean_power_w,
        "power": run.power.model_dump(mode="json") if run.power else None,
    }


def _system_dict(system: SystemOutcome, werror: bool) -> dict[str, Any]:
    imported = system.imported
    findings = []
    for finding in system.report.findings:
        data = finding.to_dict()
        data["mlperf_source"] = source_of(imported, finding)
        findings.append(data)
    validation = system.report.to_dict(werror) | {"findings": findings}
    return {
        "source": imported.label,
        "output": str(imported.output),
        "notes": imported.notes,
        "benchmarks": [
            {
                "benchmark": b.name,
                "mlperf_benchmark": b.mlperf,
                "level": b.level,
                "scaling_mode": b.record.scaling_mode,
                "published": b.record.published.model_dump(mode="json") if b.record.published else None,
                "runs": [_run_dict(r) for r in b.runs],
                "ignored": b.record.ignored,
            }
            for b in imported.benchmarks
        ],
        "validation": validation,
        "scores": [{k: v for k, v in e.to_dict().items() if k != "findings"} for e in system.entries],
    }


def render_json(outcome: ImportOutcome, werror: bool = False) -> str:
    data = {
        "format_version": REPORT_FORMAT_VERSION,
        "root": str(outcome.root),
        "out": str(outcome.out),
        "spec": outcome.spec,
        "exit_code": outcome.exit_code(werror),
        "systems": [_system_dict(s, werror) for s in outcome.systems],
        "skipped": outcome.skipped,
    }
    return json.dumps(data, indent=2, allow_nan=False) + "\n"
