"""What an entry page draws of a run's power: each device's readings over time, taken from the trace the
validator read, so the board never reads power.csv a second time."""

from __future__ import annotations

from specbench.power.csvread import CsvTrace
from specbench.validator.model import PowerChart

MAX_POINTS = 2000
"""Points kept per device: a chart 640 px wide shows no more; a longer series keeps every k-th reading."""


def chart_of(trace: CsvTrace) -> PowerChart:
    """Each device's power (instant where read, else the average) against seconds after the first sample."""
    starts = [series.t_wall_s[0] for series in trace.series.values() if len(series)]
    t0 = min(starts) if starts else 0.0
    drawn: list[tuple[str, tuple[tuple[float, float], ...]]] = []
    for key, series in trace.series.items():
        points = []
        for at, instant, average in zip(series.t_wall_s, series.power_instant_w, series.power_average_w, strict=True):
            value = instant if instant is not None else average
            if value is not None:
                points.append((at - t0, value))
        if points:
            step = -(-len(points) // MAX_POINTS)
            drawn.append((key, tuple(points[::step])))
    return PowerChart(t0_wall_s=t0, series=tuple(drawn))
