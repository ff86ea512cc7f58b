"""The fuzzer's consistent fabrications of scale (issue 29): every power reading and counter step scaled by one
factor, the global batch claimed larger in every record, and a run's log, trace clocks and counter compressed
together. Each edits every file that states what it changes, as a careful cheater would.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from specbench.physics import lookup
from specbench.scoring.fuzzedit import (
    CONSISTENT,
    CONTRADICTS,
    Target,
    Trace,
    get_path,
    read_events,
    read_json,
    read_yaml,
    scale,
    shift_iso,
    write_events,
    write_json,
    write_yaml,
)


def _counter_anchors(traces: dict[Path, Trace]) -> dict[str, float]:
    """Each device's lowest counter reading over the runs: counters scaled from it stay continuous across runs."""
    anchors: dict[str, float] = {}
    for trace in traces.values():
        device = trace.column("device")
        for row, value in zip(trace.rows, trace.floats("energy_counter_j"), strict=True):
            if value is not None and device < len(row):
                anchors[row[device]] = min(anchors.get(row[device], value), value)
    return anchors


def _traces(t: Target) -> dict[Path, Trace]:
    return {run: Trace.read(run) for run in t.all_runs if (run / "power.csv").is_file()}


def _scale_windows(trace: dict[str, Any], energy: float, duration: float, mono: Callable[[float], float]) -> None:
    """power.json's windows: energies x `energy`, durations x `duration`, clock readings through `mono`."""
    for window in trace.get("windows") or []:
        if not isinstance(window, dict):
            continue
        for key in ("start_mono_s", "stop_mono_s"):
            if isinstance(window.get(key), (int, float)):
                window[key] = mono(window[key])
        scale(window, "duration_s", duration)
        for device in window.get("devices") or []:
            for key in ("energy_j", "counter_energy_j", "integrated_energy_j"):
                scale(device, key, energy)
            scale(device, "duration_s", duration)
            scale(device, "mean_power_w", energy / duration)
        for scope in list((window.get("energy_j_by_scope") or {}).keys()):
            scale(window["energy_j_by_scope"], scope, energy)


def scale_power(t: Target, factor: float) -> None:
    """Every reading and every counter step x `factor` (counters re-anchored at each device's lowest reading),
    with power.json's windows and result.json's energy and mean power to match."""
    traces = _traces(t)
    anchors = _counter_anchors(traces)
    for run, trace in traces.items():
        trace.map("power_instant_w", lambda row, v: v * factor)
        trace.map("power_average_w", lambda row, v: v * factor)
        trace.rescale_counter(anchors, factor)
        trace.write(run)
        if (run / "power.json").is_file():
            meta = read_json(run / "power.json")
            _scale_windows(meta, factor, 1.0, lambda s: s)
            write_json(run / "power.json", meta)
        _scale_result(run, energy=factor)


def _scale_result(run: Path, energy: float = 1.0, time: float = 1.0, samples: float = 1.0) -> None:
    """result.json's numbers after energy x `energy`, time x `time` and samples x `samples`."""
    if not (run / "result.json").is_file():
        return
    data = read_json(run / "result.json")
    if not isinstance(data, dict):
        return
    for key in ("samples_processed", "model_flops", "epochs"):
        scale(data, key, samples)
    scale(data, "duration_s", time)
    scale(data, "flops_per_s", samples / time)
    scale(data.get("throughput"), "samples_per_s", samples / time)
    scale(data.get("throughput"), "step_time_s_median", time)
    scale(data.get("power"), "energy_j", energy)
    scale(data.get("power"), "mean_power_w", energy / time)
    write_json(run / "result.json", data)


def _mean_power_below_floor(t: Target) -> bool:
    """Any run's mean power over its window (power.json) below the idle floor of the device facts table."""
    model = get_path(read_yaml(t.root / "system.yaml"), ("layers", "hardware", "accelerator_model"))
    facts = lookup(model) if isinstance(model, str) else None
    if facts is None:
        return False
    for path in t.power_jsons:
        for window in read_json(path).get("windows") or []:
            for device in window.get("devices") or []:
                power = device.get("mean_power_w")
                if isinstance(power, (int, float)) and power < facts.idle_floor_w:
                    return True
    return False


def log_uniform(rng: random.Random, low: float, high: float) -> float:
    """A factor between `low` and `high`, as likely in each octave: cases fall near a bound as well as far off."""
    return math.exp(rng.uniform(math.log(low), math.log(high)))


POWER_FACTORS = (0.01, 0.95)
"""The range of the power factor."""


def op_uniform_power(t: Target) -> str | None:
    """Every power reading and counter step of every run scaled by one factor: a consistent fabrication, unless
    it puts a run's mean power below the device's idle floor (a fact of the device table)."""
    if not _traces(t):
        return None
    factor = log_uniform(t.rng, *POWER_FACTORS)
    scale_power(t, factor)
    t.note = f"power x{factor:.4g}"
    return CONTRADICTS if _mean_power_below_floor(t) else CONSISTENT


BATCH_FACTORS = (1.05, 20.0)
"""The range of the batch factor (the batch stays whole, so the factor applied is near it)."""


def relabel_batch(t: Target, factor: float) -> float | None:
    """The global batch about x `factor` in submission.yaml, each log (with its sample counts) and result.json,
    the micro-batch with it (the accumulation and data-parallel ways stay whole); the trace is left as it was.
    Returns the factor applied (new batch / old), None where no batch is stated."""
    meta = read_yaml(t.bench / "submission.yaml")
    hyper = meta.get("hyperparameters") or {}
    old, micro = hyper.get("global_batch_size"), hyper.get("micro_batch_size")
    if not isinstance(old, int) or old < 1:
        return None
    if isinstance(micro, int) and micro > 0 and old % micro == 0:
        batches = {"micro_batch_size": max(micro + 1, round(micro * factor))}
        batches["global_batch_size"] = batches["micro_batch_size"] * (old // micro)
    else:
        batches = {"global_batch_size": max(old + 1, round(old * factor))}
    new = batches["global_batch_size"]
    hyper.update(batches)
    write_yaml(t.bench / "submission.yaml", meta)
    for run in t.runs:
        if (run / "log.txt").is_file():
            events = read_events(run)
            for event in events:
                if event.get("key") in batches:
                    event["value"] = batches[event["key"]]
                counts = event.get("metadata")
                if isinstance(counts, dict) and isinstance(counts.get("samples_count"), int):
                    counts["samples_count"] = counts["samples_count"] * new // old
            write_events(run, events)
        if (run / "result.json").is_file():
            data = read_json(run / "result.json")
            stated = data.get("hyperparameters") if isinstance(data, dict) else None
            if isinstance(stated, dict):
                stated.update({k: v for k, v in batches.items() if k in stated})
            write_json(run / "result.json", data)
        _scale_result(run, samples=new / old)
    return new / old


def op_batch_relabel(t: Target) -> str | None:
    """The global batch claimed x k everywhere it is stated, the trace untouched: nothing inside the
    submission counts the images."""
    factor = relabel_batch(t, log_uniform(t.rng, *BATCH_FACTORS))
    t.note = f"batch x{factor:.4g}" if factor else ""
    return CONSISTENT if factor else None


TIME_FACTORS = (1.02, 5.0)
"""The range of the time factor."""


def compress_time(t: Target, factor: float) -> bool:
    """Each run's clock / `factor` about its first moment: log times, trace clocks, counter steps, power.json's
    period, gaps and windows, result.json's times and rates. Power readings stay."""
    traces = _traces(t)
    anchors = _counter_anchors(traces)
    runs = [run for run in t.all_runs if (run / "log.txt").is_file()]
    if not runs:
        return False
    for run in runs:
        events = read_events(run)
        times = [e["time_ms"] / 1000 for e in events if isinstance(e.get("time_ms"), (int, float))]
        trace = traces.get(run)
        walls = [w for w in trace.floats("t_wall_s") if w is not None] if trace else []
        if not times:
            continue
        start = min(times + walls[:1])

        def wall(s: float, start: float = start) -> float:
            return start + (s - start) / factor

        for event in events:
            if isinstance(event.get("time_ms"), (int, float)):
                event["time_ms"] = round(wall(event["time_ms"] / 1000) * 1000)
        write_events(run, events)
        if trace is not None:
            _compress_trace(run, trace, anchors, wall, factor)
        _scale_result(run, energy=1 / factor, time=1 / factor)
        data = read_json(run / "result.json") if (run / "result.json").is_file() else None
        if isinstance(data, dict):
            data["started_at"] = shift_iso(data.get("started_at"), wall)
            write_json(run / "result.json", data)
    return True


def _compress_trace(run: Path, trace: Trace, anchors: dict[str, float], wall: Any, factor: float) -> None:
    first = trace.rows[0]
    offset = float(first[trace.column("t_wall_s")]) - float(first[trace.column("t_mono_s")])

    def mono(s: float) -> float:
        return float(wall(s + offset) - offset)

    trace.map("t_wall_s", lambda row, v: wall(v))
    trace.map("t_mono_s", lambda row, v: mono(v))
    trace.rescale_counter(anchors, 1 / factor)
    trace.write(run)
    if not (run / "power.json").is_file():
        return
    meta = read_json(run / "power.json")
    meta["started_wall"] = shift_iso(meta.get("started_wall"), wall)
    sampling = meta.get("sampling") or {}
    scale(sampling, "requested_period_s", 1 / factor)
    for key in ("achieved_period_s", "start_lateness_s"):
        for stat in ("mean", "median", "p95", "min", "max"):
            scale(sampling.get(key), stat, 1 / factor)
    for gap in sampling.get("gaps") or []:
        if isinstance(gap, dict) and isinstance(gap.get("t_mono_s"), (int, float)):
            gap["t_mono_s"] = mono(gap["t_mono_s"])
    _scale_windows(meta, 1 / factor, 1 / factor, mono)
    for window in meta.get("windows") or []:
        for key in ("start_wall", "stop_wall"):
            window[key] = shift_iso(window.get(key), wall)
    write_json(run / "power.json", meta)


def op_time_compressed(t: Target) -> str | None:
    """Log, trace clocks and counter compressed together, the sampler's requested period with them."""
    factor = log_uniform(t.rng, *TIME_FACTORS)
    t.note = f"time /{factor:.4g}"
    return CONSISTENT if compress_time(t, factor) else None
