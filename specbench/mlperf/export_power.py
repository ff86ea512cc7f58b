"""A run's node-scope power trace as MLPerf's node power logs (`power/<result>/node_N.txt`, `sw_N.txt`).

A node log is MLLOG, as MLPerf's submissions write it: `power_measurement_start`
(INTERVAL_START), one `power_reading` per row in W (POINT_IN_TIME), `power_measurement_stop`
(INTERVAL_END), and `conversion_eff` where the trace records one. The markers are the trace's own:
an imported log's, when they were consistent (start before stop), else the trace's window marks,
else its first and last readings. Only devices of scope `platform` (whole nodes) are written:
MLPerf's node logs hold node power, so an accelerator-board trace is not one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from specbench.power.base import Device
from specbench.power.csvread import Series, read_csv

NODE_SCOPE = "platform"


@dataclass
class NodeLog:
    """One node log to write: its name, its text, and what it came from."""

    name: str
    text: str
    device: str
    readings: int


def _line(time_ms: float, event_type: str, key: str, value: Any) -> str:
    event = {"namespace": "", "time_ms": time_ms, "event_type": event_type, "key": key, "value": value, "metadata": {}}
    return ":::MLLOG " + json.dumps(event, allow_nan=False) + "\n"


def _ms(seconds: float) -> int | float:
    """Wall seconds as MLPerf's time_ms: a whole number where the trace holds whole milliseconds."""
    ms = seconds * 1000.0
    return round(ms) if abs(ms - round(ms)) < 1e-3 else ms


def _markers(series: Series, source: dict[str, Any], notes: list[str]) -> tuple[int | float, int | float]:
    markers = source.get("markers")
    if isinstance(markers, dict) and markers.get("stop_ms", 0) > markers.get("start_ms", 0):
        return markers["start_ms"], markers["stop_ms"]
    if isinstance(markers, dict):
        notes.append(
            f"{source.get('path', series.device)}: its power_measurement_stop is not after its start (MLPerf's result "
            "summarizer divides by stop - start): the markers are written at the first and last reading"
        )
    marks = {mark: i for i, mark in enumerate(series.mark) if mark in ("start", "stop")}
    if "start" in marks and "stop" in marks and marks["start"] < marks["stop"]:
        return _ms(series.t_wall_s[marks["start"]]), _ms(series.t_wall_s[marks["stop"]])
    return _ms(series.t_wall_s[0]), _ms(series.t_wall_s[-1])


def node_logs(csv_text: str, metadata: dict[str, Any], notes: list[str]) -> list[NodeLog]:
    """MLPerf node logs for the whole-node devices of one trace, numbered from 0 in the trace's order."""
    devices = [Device.from_dict(d) for meter in metadata.get("meters", []) for d in meter.get("devices", [])]
    nodes = [d for d in devices if d.scope == NODE_SCOPE]
    if not nodes:
        scopes = sorted({d.scope for d in devices}) or ["none"]
        notes.append(f"power.csv measures scope {', '.join(scopes)}, not whole nodes: MLPerf's node logs not written")
        return []
    trace = read_csv(csv_text, [d.key for d in devices])
    source = metadata.get("source", {})
    files, efficiency = source.get("files", {}), source.get("conversion_eff", {})
    out = []
    for number, device in enumerate(nodes):
        series = trace.series.get(device.key)
        if series is None or not len(series):
            notes.append(f"{device.key} has no readings in power.csv: node_{number}.txt not written")
            continue
        start, stop = _markers(series, files.get(device.key, {}), notes)
        lines = [_line(start, "INTERVAL_START", "power_measurement_start", None)]
        for when, instant, average in zip(series.t_wall_s, series.power_instant_w, series.power_average_w, strict=True):
            value = instant if instant is not None else average
            if value is not None:
                lines.append(_line(_ms(when), "POINT_IN_TIME", "power_reading", value))
        lines.append(_line(stop, "INTERVAL_END", "power_measurement_stop", None))
        if device.key in efficiency:
            lines.append(_line(stop, "POINT_IN_TIME", "conversion_eff", efficiency[device.key]))
        out.append(NodeLog(f"node_{number}.txt", "".join(lines), device.key, len(lines) - 2))
    return out


def switch_logs(interconnect: list[dict[str, Any]], time_ms: float) -> list[tuple[str, str]]:
    """sw_N.txt for an imported run's interconnect estimates (kept apart from the node energy at import)."""
    out = []
    for number, entry in enumerate(interconnect):
        lines = []
        if entry.get("interconnect_power_est_w") is not None:
            lines.append(_line(time_ms, "POINT_IN_TIME", "interconnect_power_est", entry["interconnect_power_est_w"]))
        if entry.get("conversion_eff") is not None:
            lines.append(_line(time_ms, "POINT_IN_TIME", "conversion_eff", entry["conversion_eff"]))
        out.append((f"sw_{number}.txt", "".join(lines)))
    return out
