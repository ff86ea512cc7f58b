"""The fuzzer's wrongly typed fields and evidence shared between two submissions (issue 29).

A typed field puts a value of another type, or a number or string at an edge, into one field the validator
reads. Shared evidence builds a second submission in the case's folder (a renamed copy, or another
submission a run or a power series was borrowed from); the harness validates both together.
"""

from __future__ import annotations

import random
import re
import shutil
from pathlib import Path
from typing import Any

from specbench.scoring.fuzzedit import (
    CONTRADICTS,
    EITHER,
    Target,
    Trace,
    get_path,
    read_events,
    read_json,
    read_yaml,
    relabel_events,
    rename_identity,
    set_path,
    shift_iso,
    write_events,
    write_json,
    write_yaml,
)

# typed fields

ANY = "*"
"""In a field's path: the first key of the mapping there."""
TYPED_FIELDS: tuple[tuple[str, tuple[str | int, ...], str], ...] = (
    ("power.json", ("meters", 0, "devices", 0, "key"), "str"),
    ("power.json", ("meters", 0, "devices", 0, "uuid"), "str"),
    ("power.json", ("meters", 0, "devices", 0, "meter"), "str"),
    ("power.json", ("meters", 0, "devices", 0, "model"), "str"),
    ("power.json", ("meters", 0, "devices", 0, "scope"), "str"),
    ("power.json", ("meters", 0, "devices", 0, "index"), "int"),
    ("power.json", ("meters", 0, "devices", 0, "energy_range_j"), "number"),
    ("power.json", ("meters", 0, "kind"), "str"),
    ("power.json", ("host",), "str"),
    ("power.json", ("sampling", "requested_period_s"), "number"),
    ("power.json", ("state_start", ANY, "power_limit_w"), "number"),
    ("power.json", ("windows", 0, "devices", 0, "energy_j"), "number"),
    ("result.json", ("duration_s",), "number"),
    ("result.json", ("samples_processed",), "int"),
    ("result.json", ("devices",), "int"),
    ("result.json", ("seed",), "int"),
    ("result.json", ("status",), "str"),
    ("result.json", ("power", "energy_j"), "number"),
    ("result.json", ("throughput", "samples_per_s"), "number"),
    ("result.json", ("hyperparameters", "global_batch_size"), "int"),
    ("state.json", ("pid",), "int"),
    ("system.yaml", ("nodes",), "int"),
    ("system.yaml", ("layers", "hardware", "accelerator_count"), "int"),
    ("system.yaml", ("layers", "hardware", "accelerator_model"), "str"),
    ("system.yaml", ("layers", "driver_firmware", "power_limit_w"), "number"),
    ("system.yaml", ("layers", "communication", "world_size"), "int"),
    ("system.yaml", ("layers", "operating_system", "hostname"), "str"),
    ("submission.yaml", ("hyperparameters", "global_batch_size"), "int"),
)
"""Fields the validator reads, with the type they hold."""


def _wrong_values(kind: str, old: Any) -> list[Any]:
    """Values of another type than `kind`: the issue's lists, mappings and strings where numbers go."""
    common: list[Any] = [[old], {"a": 1}, True]
    if kind == "str":
        return [*common, 7, 0.5]
    wrong = [*common, "abc", str(old)]
    return [*wrong, 1.5] if kind == "int" else wrong


EDGE_NUMBERS: tuple[Any, ...] = (1e-320, 1e308, 5e-324, -1.0, 0, None, 2**63, 2**53 + 1)
EDGE_STRINGS: tuple[Any, ...] = (None, "", "x" * 4096, "\x00")


def _typed_path(data: Any, path: tuple[str | int, ...]) -> tuple[str | int, ...] | None:
    if ANY not in path:
        return path
    at = path.index(ANY)
    holder = get_path(data, path[:at])
    return (*path[:at], next(iter(holder)), *path[at + 1 :]) if isinstance(holder, dict) and holder else None


def op_typed_field(t: Target) -> str | None:
    """One field the validator reads given a value of another type (refused), or a number or string at an
    edge (tiny, huge, subnormal, negative, null, beyond 64 bits; must not crash)."""
    name, raw_path, kind = t.rng.choice(TYPED_FIELDS)
    path_of = {"system.yaml": t.root, "submission.yaml": t.bench}.get(name, t.run) / name
    if not path_of.is_file():
        return None
    load, dump = (read_yaml, write_yaml) if name.endswith(".yaml") else (read_json, write_json)
    data = load(path_of)
    path = _typed_path(data, raw_path)
    if path is None or (get_path(data, path) is None and kind != "number"):
        return None
    old = get_path(data, path)
    wrong = t.rng.random() < 0.6
    value = t.rng.choice(_wrong_values(kind, old) if wrong else EDGE_STRINGS if kind == "str" else EDGE_NUMBERS)
    if not set_path(data, path, value):
        return None
    dump(path_of, data)
    t.note = f"{name} {'.'.join(map(str, path))} := {value!r}"[:160]
    if path[-1] == "energy_range_j" and wrong:
        _lower_one_counter(t)
        t.note += ", a counter reading lowered"
    return CONTRADICTS if wrong else EITHER


def _lower_one_counter(t: Target) -> None:
    """One counter reading of the run lowered (the issue's crash: a wrong-typed range meets a counter drop)."""
    if not t.traced:
        return
    trace = Trace.read(t.run)
    at = trace.column("energy_counter_j")
    row = trace.rows[t.rng.randrange(1, len(trace.rows))] if len(trace.rows) > 1 else None
    if row is not None and at < len(row) and row[at]:
        row[at] = repr(float(row[at]) - 1000.0)
        trace.write(t.run)


# shared evidence: two submissions validated together


def _donor(t: Target, differ: bool) -> Path | None:
    """A copy, in this case's folder, of another source with a benchmark of the same spec (None: there is none)."""
    spec_id = _spec_id(t.bench)
    here = (t.root.parent.name, t.root.name)
    choices = [
        s
        for s in t.sources
        if (s.parent.name, s.name) != here
        and _spec_id(s / t.bench.name) == spec_id
        and (not differ or any((s / t.bench.name).glob("run_*/power.csv")))
    ]
    if not choices:
        return None
    source = t.rng.choice(sorted(choices))
    root = t.case_dir / source.parent.name / source.name
    shutil.copytree(source, root)
    return root


def _spec_id(bench: Path) -> str | None:
    """The spec a benchmark folder names (its submission.yaml's spec_id line), None where there is none."""
    path = bench / "submission.yaml"
    found = re.search(r"^spec_id: *(\S+)", path.read_text(), re.MULTILINE) if path.is_file() else None
    return found.group(1) if found else None


def op_shared_copy(t: Target) -> str | None:
    """The whole submission again under another submitter and system (renamed in every file), as it is or with
    its clocks shifted and its seeds changed: both copies must be refused."""
    system = read_yaml(t.root / "system.yaml")
    copy = t.case_dir / "_copy" / t.root.name
    shutil.copytree(t.root, copy)
    renamed = rename_identity(copy, "acme", f"{system.get('system', 'box')}-b", base=t.case_dir)
    t.note = "renamed copy"
    if t.rng.random() < 0.5:
        _disguise(renamed, t.rng.uniform(3600.0, 30 * 86400.0), t.rng)
        t.note += ", clocks shifted, seeds changed"
    t.extra.append(renamed)
    return CONTRADICTS


def _disguise(root: Path, shift_s: float, rng: random.Random) -> None:
    """Every run's log and trace moved `shift_s` later (counters offset alike) and given a new seed."""
    for run in sorted(root.glob("*/run_*")):
        if (run / "log.txt").is_file():
            seed = rng.randrange(1, 2**31)
            events = read_events(run)
            for event in events:
                if isinstance(event.get("time_ms"), int):
                    event["time_ms"] += round(shift_s * 1000)
                if event.get("key") == "seed":
                    event["value"] = seed
            write_events(run, events)
            if (run / "result.json").is_file():
                data = read_json(run / "result.json")
                data["seed"] = seed
                data["started_at"] = shift_iso(data.get("started_at"), lambda s: s + shift_s)
                write_json(run / "result.json", data)
        if (run / "power.csv").is_file():
            _shift_trace(run, shift_s, shift_s, 0.0)


def _shift_trace(run: Path, wall_s: float, mono_s: float, counter_j: float) -> None:
    """power.csv's clocks and counter moved by the given amounts, power.json's times alike."""
    trace = Trace.read(run)
    trace.map("t_wall_s", lambda row, v: v + wall_s)
    trace.map("t_mono_s", lambda row, v: v + mono_s)
    trace.map("energy_counter_j", lambda row, v: v + counter_j)
    trace.write(run)
    if not (run / "power.json").is_file():
        return
    meta = read_json(run / "power.json")
    meta["started_wall"] = shift_iso(meta.get("started_wall"), lambda s: s + wall_s)
    for gap in get_path(meta, ("sampling", "gaps")) or []:
        if isinstance(gap, dict) and isinstance(gap.get("t_mono_s"), (int, float)):
            gap["t_mono_s"] += mono_s
    for window in meta.get("windows") or []:
        for key in ("start_mono_s", "stop_mono_s"):
            if isinstance(window.get(key), (int, float)):
                window[key] += mono_s
        for key in ("start_wall", "stop_wall"):
            window[key] = shift_iso(window.get(key), lambda s: s + wall_s)
    write_json(run / "power.json", meta)


def op_shared_run(t: Target) -> str | None:
    """One run of another submission of the same spec (another host or GPU) spliced in over one of this copy's
    runs, its identity lines renamed; validated with that submission: both must be refused."""
    donor = _donor(t, differ=False)
    if donor is None:
        return None
    run = t.rng.choice(sorted((donor / t.bench.name).glob("run_*")))
    for name in ("log.txt", "power.csv", "power.json", "result.json", "state.json"):
        (t.run / name).unlink(missing_ok=True)
        if (run / name).is_file():
            shutil.copy(run / name, t.run / name)
    system = read_yaml(t.root / "system.yaml")
    relabel_events(t.run, {"submission_org": system.get("submitter"), "submission_platform": system.get("system")})
    data = read_json(t.run / "result.json")
    data["run"] = int(t.run.name.split("_")[-1])
    write_json(t.run / "result.json", data)
    t.note = f"{t.run.name} from {donor.name}/{run.name}"
    t.extra.append(donor)
    return CONTRADICTS


def op_shared_power(t: Target) -> str | None:
    """Another submission's power series (power.csv and power.json) moved onto this run's timed window;
    validated with that submission: both must be refused."""
    if not t.traced:
        return None
    donor = _donor(t, differ=True)
    if donor is None:
        return None
    runs = [r for r in sorted((donor / t.bench.name).glob("run_*")) if (r / "power.csv").is_file()]
    source = t.rng.choice(runs)
    mine, theirs = read_json(t.run / "power.json"), read_json(source / "power.json")
    mono = _first_window(mine, "start_mono_s") - _first_window(theirs, "start_mono_s")
    wall = _run_start(t.run) - _run_start(source)
    for name in ("power.csv", "power.json"):
        shutil.copy(source / name, t.run / name)
    _shift_trace(t.run, wall, mono, 0.0)
    t.note = f"{t.run.name} power from {donor.name}/{source.name}"
    t.extra.append(donor)
    return CONTRADICTS


def _first_window(meta: Any, key: str) -> float:
    value = get_path(meta, ("windows", 0, key))
    return float(value) if isinstance(value, (int, float)) else 0.0


def _run_start(run: Path) -> float:
    starts = [e["time_ms"] / 1000 for e in read_events(run) if e.get("key") == "run_start"]
    return starts[0] if starts else 0.0
