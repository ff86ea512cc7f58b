"""A run's power: the meters this process opens, where its trace streams, and the job's one trace.

On one node, rank 0 owns the node's meters and its sampler streams power.csv into the run folder
while it samples, so a run killed outright keeps its trace up to the kill. With several nodes,
local rank 0 of each node measures that node with device keys that carry the node (`n1:nvml:0`):
node 0 streams into the run folder, the others into a spool file on their own disk, and after the
run they send those rows to rank 0 in chunks, so no message and no memory grows with the run.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
from pathlib import Path
from typing import Any

from specbench.errors import UsageError
from specbench.power.sampler import PowerSampler, Window
from specbench.power.trace import CSV_NAME, write_metadata
from specbench.run.distributed import Dist

CHUNK_ROWS = 20000
"""Trace rows a node sends to rank 0 per message after a run."""


def open_run_meters(power: str, required: bool) -> tuple[list[Any], str | None]:
    """Meters for the runs and, when nothing measures, why (a run then says 'not measured')."""
    from specbench.power import NullMeter, open_meters

    if power == "none":
        return [], "not measured: --power none"
    meters = open_meters(power)
    real = [m for m in meters if not isinstance(m, NullMeter)]
    if real:
        return real, None
    reason = "; ".join(getattr(m, "reason", "") for m in meters) or "no meter available"
    if required:
        raise UsageError(
            f"this profile requires measured power, but no meter is available here ({reason}); "
            "run with --power none to execute unmeasured (the result is then not ranked per watt)"
        )
    return [], f"not measured: {reason}"


def run_sampler(meters: list[Any], dist: Dist, run_dir: Path, interval_ms: float) -> PowerSampler | None:
    """This process's sampler for one run (None when it measures nothing), streaming its trace to disk."""
    if not meters:
        return None
    many = dist.nnodes > 1
    trace_dir = run_dir if dist.writer else Path(tempfile.mkdtemp(prefix=f"specbench-power-n{dist.node}-"))
    return PowerSampler(
        meters,
        interval_s=interval_ms / 1000.0,
        trace_dir=trace_dir,
        key_prefix=f"n{dist.node}:" if many else "",
        metadata={"node": dist.node} if many else None,
    )


def collect_job_trace(dist: Dist, sampler: PowerSampler | None, window: Window | None, run_dir: Path) -> Window | None:
    """Several nodes: every node's rows and metadata into the run folder on rank 0; returns the job's window there.

    Every rank must call this (it is a sequence of collectives); on one node it returns `window` as is.
    """
    if dist.nnodes <= 1:
        return window
    part = None if sampler is None else {"node": dist.node, "metadata": sampler.metadata(), "window": window}
    parts = dist.gather(part)
    spool = sampler.trace_dir if sampler is not None and not dist.writer else None
    _send_rows(dist, spool, run_dir)
    if spool is not None:
        shutil.rmtree(spool, ignore_errors=True)
    if parts is None:
        return None
    owners = sorted((p for p in parts if p is not None), key=lambda p: p["node"])
    if not owners:
        return None
    write_metadata(run_dir, merge_metadata(owners))
    return merge_windows([p["window"] for p in owners if p["window"] is not None])


def _send_rows(dist: Dist, spool: Path | None, run_dir: Path) -> None:
    """Append the spooled power.csv rows of every other node to rank 0's power.csv, CHUNK_ROWS at a time."""
    handle = (spool / CSV_NAME).open(encoding="utf-8") if spool is not None else None
    try:
        if handle is not None:
            next(handle, None)  # the header
        target = (run_dir / CSV_NAME).open("a", encoding="utf-8") if dist.writer else None
        try:
            while True:
                chunk = "".join(itertools.islice(handle, CHUNK_ROWS)) if handle is not None else ""
                chunks = dist.gather(chunk)
                if target is not None and chunks is not None:
                    target.write("".join(chunks))
                if dist.broadcast(chunks is not None and not any(chunks)):
                    return
        finally:
            if target is not None:
                target.close()
    finally:
        if handle is not None:
            handle.close()


def merge_metadata(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """power.json of the job from each node owner's: meters with their node, states and windows of all nodes."""
    meters: list[dict[str, Any]] = []
    state_start: dict[str, Any] = {}
    state_end: dict[str, Any] = {}
    for part in parts:
        metadata = part["metadata"]
        for meter in metadata.get("meters", []):
            meters.append({**meter, "node": part["node"], "host": metadata.get("host")})
        state_start.update(metadata.get("state_start") or {})
        state_end.update(metadata.get("state_end") or {})
    first = parts[0]["metadata"]
    return {
        **{k: v for k, v in first.items() if k != "node"},
        "meters": meters,
        "state_start": state_start or None,
        "state_end": state_end or None,
        "nodes": [
            {"node": p["node"], "host": p["metadata"].get("host"), "sampling": p["metadata"].get("sampling")}
            for p in parts
        ],
        "windows": [w.to_dict() for w in [p["window"] for p in parts] if w is not None],
    }


def merge_windows(windows: list[Window]) -> Window | None:
    """One window over every node's devices (keys already carry the node), spanning all nodes' edges."""
    if not windows:
        return None
    return Window(
        start_mono_s=windows[0].start_mono_s,
        stop_mono_s=windows[0].stop_mono_s,
        start_wall_s=min(w.start_wall_s for w in windows),
        stop_wall_s=max(w.stop_wall_s for w in windows),
        devices=tuple(d for w in windows for d in w.devices),
    )
