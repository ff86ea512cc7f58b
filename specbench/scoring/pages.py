"""What an entry's page shows: its aggregate and runs in the group's units, each run's charts, its nine layers."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from specbench.scoring.columns import aggregate_quantities, run_quantities, words
from specbench.scoring.leaderboard import Entry, Group
from specbench.scoring.svg import line_chart
from specbench.scoring.units import Scale, binary_bytes, compact
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
    for score in sorted(entry.runs, key=lambda run: natural(run.run)):
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
    metric = words(spec.quality.metric)
    return line_chart({metric: points}, x_label="epoch", y_label=metric, title=f"{run.name}: quality", hline=target)


NOT_STATED = "not stated"


def value_text(value: Any) -> str:
    """A value as a reader takes it in: 'not stated' for a missing one, yes/no, floats to four significant
    digits (3.052e-5, not 3.0517578125e-05), lists and mappings item by item."""
    if value is None:
        return NOT_STATED
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return compact(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(value_text(v) for v in value) or "none"
    if isinstance(value, dict):
        return "; ".join(f"{k}: {value_text(v)}" for k, v in value.items()) or "none"
    return str(value)


@dataclass(frozen=True)
class Layer:
    """One row of an entry's nine layers: the value as shown, and as read where the shown one rounds it."""

    layer: str
    name: str
    text: str
    exact: str = ""


def _layer(layer: str, name: str, value: Any) -> Layer:
    """Byte counts in binary units (host_memory_bytes: 23.54 GiB), the rest as `value_text` shows them."""
    if name.endswith("_bytes") and isinstance(value, int) and not isinstance(value, bool):
        return Layer(layer, name, f"{binary_bytes(value)} ({value} bytes)")
    rounded = isinstance(value, float) and math.isfinite(value) and float(compact(value)) != value
    return Layer(layer, name, value_text(value), repr(value) if rounded else "")


def layers(entry: Entry) -> list[Layer]:
    """The system's and the benchmark's parameters: the nine layers, hyperparameters, dataset."""
    rows: list[Layer] = []
    report, bench = entry.report, entry.bench
    if report and report.system:
        for layer, params in report.system.layers.items():
            rows.extend(_layer(layer, name, value) for name, value in params.items())
    if bench and bench.meta:
        for layer, params in bench.meta.layers.items():
            rows.extend(_layer(layer, name, value) for name, value in params.items())
        rows.extend(_layer("workload", name, value) for name, value in bench.meta.hyperparameters.items())
        rows.extend(_layer("problem", name, value) for name, value in bench.meta.dataset.items())
    return rows


def natural(name: str) -> tuple[Any, ...]:
    """A sort key that puts run_2 before run_10."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", name))


def run_names(names: Iterable[str]) -> str:
    """Run names in natural order (run_1, run_2, run_3), or 'none'."""
    return ", ".join(sorted(names, key=natural)) or "none"
