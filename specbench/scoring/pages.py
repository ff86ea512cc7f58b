"""What an entry's page shows: its aggregate and runs in the group's units, each run's charts, its nine layers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from specbench.scoring.columns import aggregate_quantities, run_quantities
from specbench.scoring.leaderboard import Entry, Group
from specbench.scoring.svg import line_chart
from specbench.scoring.units import Scale, binary_bytes
from specbench.validator.model import RunData


@dataclass(frozen=True)
class RunView:
    name: str
    status: str
    cells: list[str]
    reason: str
    power_reason: str | None
    power_chart: str
    quality_chart: str


def aggregate_rows(entry: Entry, group: Group, scales: dict[str, Scale]) -> list[tuple[str, str]]:
    """(quantity and unit, value) for each aggregated number that applies to the spec's kind."""
    values = entry.aggregate.values
    rows = []
    for q in aggregate_quantities(group, values.get("mlperf_scaling_factor") is not None):
        rows.append((q.header(scales[q.key]), scales[q.key].text(q.of(values), q.missing())))
    return rows


def run_headers(group: Group, scales: dict[str, Scale], reasons: bool) -> list[str]:
    """The runs table's headers; a 'reason' column only where a run failed or is incomplete."""
    return [
        "run",
        "status",
        *(q.header(scales[q.key]) for q in run_quantities(group)),
        *(["reason"] if reasons else []),
    ]


def run_views(entry: Entry, group: Group, scales: dict[str, Scale]) -> list[RunView]:
    """Each run's numbers in the group's units, why it failed or measured no power, and its charts."""
    quantities = run_quantities(group)
    data = {run.name: run for run in entry.bench.runs} if entry.bench is not None else {}
    views = []
    for score in entry.runs:
        values = score.to_dict()
        run = data.get(score.run)
        views.append(
            RunView(
                name=score.run,
                status=score.status,
                cells=[scales[q.key].text(q.of(values), q.missing()) for q in quantities],
                reason=score.reason or "",
                power_reason=entry.run_power_reason(score.run),
                power_chart=_power_chart(run) if run is not None else "",
                quality_chart=_quality_chart(entry, run) if run is not None else "",
            )
        )
    return views


def _power_chart(run: RunData) -> str:
    """The readings validation kept from power.csv (the board reads no submission file itself)."""
    chart = run.power_chart
    if chart is None:
        return ""
    if not chart.series:
        return '<p class="empty">power trace is empty</p>'
    t0 = chart.t0_wall_s
    markers = {}
    if run.run_start_ms is not None:
        markers["run_start"] = run.run_start_ms / 1000.0 - t0
    if run.run_stop_ms is not None:
        markers["run_stop"] = run.run_stop_ms / 1000.0 - t0
    series = {device: list(points) for device, points in chart.series}
    return line_chart(series, x_label="time (s)", y_label="power (W)", title=f"{run.name}: power", markers=markers)


def _quality_chart(entry: Entry, run: RunData) -> str:
    spec = entry.bench.spec.spec if entry.bench and entry.bench.spec else None
    if not run.evaluations or spec is None or spec.quality is None:
        return ""
    points = [(e.epoch, e.value) for e in run.evaluations]
    target = (f"target {spec.quality.target:g}", spec.quality.target)
    metric = spec.quality.metric
    return line_chart({metric: points}, x_label="epoch", y_label=metric, title=f"{run.name}: quality", hline=target)


def _value(name: str, value: Any) -> str:
    """A layer's value as read: byte counts in binary units (host_memory_bytes: 23.54 GiB)."""
    if name.endswith("_bytes") and isinstance(value, int) and not isinstance(value, bool):
        return f"{binary_bytes(value)} ({value} bytes)"
    return str(value)


def layers(entry: Entry) -> list[tuple[str, str, str]]:
    """(layer, parameter, value) of the system and the benchmark: the nine layers, hyperparameters, dataset."""
    rows: list[tuple[str, str, str]] = []
    report, bench = entry.report, entry.bench
    if report and report.system:
        for layer, params in report.system.layers.items():
            rows.extend((layer, name, _value(name, value)) for name, value in params.items())
    if bench and bench.meta:
        for layer, params in bench.meta.layers.items():
            rows.extend((layer, name, _value(name, value)) for name, value in params.items())
        rows.extend(("workload", name, _value(name, value)) for name, value in bench.meta.hyperparameters.items())
        rows.extend(("problem", name, _value(name, value)) for name, value in bench.meta.dataset.items())
    return rows
