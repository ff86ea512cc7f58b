"""Edits of a generated submission for tests: logs, JSON, YAML and CSV files, and re-signing the manifest."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from make_submission import write_manifest
from ruamel.yaml import YAML

from specbench.spec.yamlio import load_yaml

BENCH = "resnet50"
Event = dict[str, Any]


def run_dir(root: Path, run: int = 1, bench: str = BENCH) -> Path:
    return root / bench / f"run_{run}"


def read_events(root: Path, run: int = 1, bench: str = BENCH) -> list[Event]:
    text = (run_dir(root, run, bench) / "log.txt").read_text()
    return [json.loads(line.removeprefix(":::MLLOG ")) for line in text.splitlines()]


def write_events(root: Path, events: list[Event], run: int = 1, bench: str = BENCH) -> None:
    lines = [":::MLLOG " + json.dumps(e) for e in events]
    (run_dir(root, run, bench) / "log.txt").write_text("\n".join(lines) + "\n")


def edit_log(root: Path, edit: Callable[[list[Event]], object], run: int = 1, bench: str = BENCH) -> None:
    """Apply `edit` to the list of events in place (its return value is ignored) and write the log back."""
    events = read_events(root, run, bench)
    edit(events)
    write_events(root, events, run, bench)


def index(events: list[Event], key: str, **metadata: Any) -> int:
    """Position of the first event with this key (and metadata values)."""
    for i, event in enumerate(events):
        if event["key"] == key and all(event["metadata"].get(k) == v for k, v in metadata.items()):
            return i
    raise KeyError(key)


def line_of(root: Path, key: str, run: int = 1, **metadata: Any) -> int:
    return index(read_events(root, run), key, **metadata) + 1


def edit_json(path: Path, edit: Callable[[Any], object]) -> None:
    """Apply `edit` to the data in place (its return value is ignored) and write it back."""
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data, indent=2) + "\n")


def edit_result(root: Path, edit: Callable[[Any], object], run: int = 1) -> None:
    edit_json(run_dir(root, run) / "result.json", edit)


def edit_yaml(path: Path, edit: Callable[[Any], object]) -> None:
    data = load_yaml(path).data
    edit(data)
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    out = io.StringIO()
    yaml.dump(data, out)
    path.write_text(out.getvalue())


def read_rows(root: Path, run: int = 1) -> list[list[str]]:
    return list(csv.reader(io.StringIO((run_dir(root, run) / "power.csv").read_text())))


def write_rows(root: Path, rows: list[list[str]], run: int = 1) -> None:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    (run_dir(root, run) / "power.csv").write_text(out.getvalue())


def edit_rows(root: Path, edit: Callable[[list[list[str]]], object], run: int = 1) -> None:
    rows = read_rows(root, run)
    edit(rows)
    write_rows(root, rows, run)


def window_rows(rows: list[list[str]]) -> tuple[int, int]:
    """Indices (into rows, header included) of the first 'start' and the last 'stop' row."""
    starts = [i for i, r in enumerate(rows) if r[-1] == "start"]
    stops = [i for i, r in enumerate(rows) if r[-1] == "stop"]
    return starts[0], stops[-1]


def set_hyperparameter(root: Path, key: str, value: Any, runs: int = 1) -> None:
    """Change a declared hyperparameter everywhere it appears: submission.yaml, every log and result.json."""
    edit_yaml(root / BENCH / "submission.yaml", lambda d: d["hyperparameters"].__setitem__(key, value))
    for run in range(1, runs + 1):
        edit_log(root, lambda events: events[index(events, key)].__setitem__("value", value), run)
        edit_result(root, lambda d: d["hyperparameters"].__setitem__(key, value), run)


def drop_hyperparameter(root: Path, key: str, runs: int = 1) -> None:
    edit_yaml(root / BENCH / "submission.yaml", lambda d: d["hyperparameters"].pop(key))
    for run in range(1, runs + 1):
        edit_log(root, lambda events: events.pop(index(events, key)), run)
        edit_result(root, lambda d: d["hyperparameters"].pop(key), run)


def resign(root: Path) -> None:
    write_manifest(root)
