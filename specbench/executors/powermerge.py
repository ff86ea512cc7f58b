"""One power trace per run from the traces of several nodes, each device once, keyed by node."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from specbench.power.sampler import Window
from specbench.power.trace import write_metadata, write_samples


def _prefixed(key: str, node: int, many: bool) -> str:
    return f"n{node}:{key}" if many else key


def merge_node_traces(parts: list[dict[str, Any]], run_dir: Path) -> Window | None:
    """Write power.csv/power.json of the run from each node owner's part; return the job's window.

    With one node the trace is written as that node recorded it; with several, every device key
    gets its node id ("n1:nvml:0") so no device is counted twice and energies sum across nodes.
    """
    parts = sorted(parts, key=lambda p: p["node"])
    many = len(parts) > 1
    samples: list[Any] = []
    meters: list[dict[str, Any]] = []
    state_start: dict[str, Any] = {}
    state_end: dict[str, Any] = {}
    devices: list[Any] = []
    for part in parts:
        node, metadata = part["node"], part["metadata"]
        samples.extend(dataclasses.replace(s, device=_prefixed(s.device, node, many)) for s in part["samples"])
        for meter in metadata.get("meters", []):
            renamed = [{**d, "key": _prefixed(d["key"], node, many)} for d in meter.get("devices", [])]
            meters.append({**meter, "node": node, "host": metadata.get("host"), "devices": renamed})
        for target, source in ((state_start, metadata.get("state_start")), (state_end, metadata.get("state_end"))):
            for key, value in (source or {}).items():
                target[_prefixed(key, node, many)] = value
        window = part["window"]
        if window is not None:
            devices.extend(dataclasses.replace(d, device=_prefixed(d.device, node, many)) for d in window.devices)
    first = parts[0]["metadata"]
    merged = {
        **first,
        "meters": meters,
        "state_start": state_start or None,
        "state_end": state_end or None,
        "nodes": [
            {"node": p["node"], "host": p["metadata"].get("host"), "sampling": p["metadata"].get("sampling")}
            for p in parts
        ],
        "windows": [w.to_dict() for w in [p["window"] for p in parts] if w is not None],
    }
    write_samples(run_dir, samples)
    write_metadata(run_dir, merged)
    windows = [p["window"] for p in parts if p["window"] is not None]
    if not windows:
        return None
    return Window(
        start_mono_s=windows[0].start_mono_s,
        stop_mono_s=windows[0].stop_mono_s,
        start_wall_s=min(w.start_wall_s for w in windows),
        stop_wall_s=max(w.stop_wall_s for w in windows),
        devices=tuple(devices),
    )
