"""What the fuzzer's operators share: the copy being mutated, its verdict labels, and readers and writers of
each file that keep the rest of it as the executor wrote it (MLLOG lines, the trace CSV, JSON, YAML).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from specbench.validator.model import Report

CONTRADICTS, CONSISTENT, EITHER, UNRANKED_PER_W = "contradicts", "consistent", "either", "unranked-per-watt"
"""Labels: must be refused (it contradicts the evidence, a device fact or a rule); a fabrication consistent
throughout (may be accepted, its move is measured); cannot be told in advance; must never be ranked per watt."""


@dataclass
class Target:
    """The copy being mutated: its root, one benchmark and one run of it, the random source, the original's
    validation report (for spec facts: variants, levels, reference), every source (donors of borrowed
    evidence), the further submissions an operator built (validated together with the copy) and a note of
    what the operator did."""

    root: Path
    bench: Path
    run: Path
    rng: random.Random
    original: Report | None = None
    sources: Sequence[Path] = ()
    extra: list[Path] = field(default_factory=list)
    note: str = ""
    """What the operator did, in a few words (its factor, field and value), for the report."""

    @property
    def runs(self) -> list[Path]:
        return sorted(self.bench.glob("run_*"))

    @property
    def all_runs(self) -> list[Path]:
        """Every run of every benchmark of the copy, in order."""
        return sorted(self.root.glob("*/run_*"))

    @property
    def traced(self) -> bool:
        return (self.run / "power.csv").is_file()

    @property
    def power_jsons(self) -> list[Path]:
        """Every run's power.json."""
        return [run / "power.json" for run in self.all_runs if (run / "power.json").is_file()]

    @property
    def case_dir(self) -> Path:
        """The case's own folder (above ORG/SYSTEM): where further submissions go."""
        return self.root.parent.parent

    def spec_facts(self) -> Any:
        """The original benchmark's resolved spec (None where the original has none)."""
        if self.original is None:
            return None
        bench = next((b for b in self.original.benchmarks if b.name == self.bench.name), None)
        return bench.spec if bench is not None else None


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2) + "\n")


def read_events(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line[9:]) for line in (run / "log.txt").read_text().splitlines() if line.startswith(":::MLLOG ")]


def write_events(run: Path, events: list[dict[str, Any]]) -> None:
    (run / "log.txt").write_text("".join(f":::MLLOG {json.dumps(e)}\n" for e in events))


def read_yaml(path: Path) -> Any:
    return YAML(typ="safe", pure=True).load(path.read_text())


def write_yaml(path: Path, data: Any) -> None:
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    with path.open("w") as out:
        yaml.dump(data, out)


@dataclass
class Trace:
    """power.csv as its header and rows of cells; `column` finds a cell by name."""

    header: list[str]
    rows: list[list[str]]

    @classmethod
    def read(cls, run: Path) -> Trace:
        lines = (run / "power.csv").read_text().splitlines()
        return cls(lines[0].split(","), [line.split(",") for line in lines[1:] if line])

    def write(self, run: Path) -> None:
        (run / "power.csv").write_text("\n".join(",".join(r) for r in [self.header, *self.rows]) + "\n")

    def column(self, name: str) -> int:
        return self.header.index(name)

    def floats(self, name: str) -> list[float | None]:
        at = self.column(name)
        return [_float(r[at]) if at < len(r) else None for r in self.rows]

    def map(self, name: str, fn: Any) -> None:
        """Replace each readable number of a column by fn(row, value)."""
        at = self.column(name)
        for row in self.rows:
            value = _float(row[at]) if at < len(row) else None
            if value is not None:
                row[at] = repr(fn(row, value))

    def rescale_counter(self, anchors: dict[str, float], factor: float) -> None:
        """Each device's counter steps x `factor`, measured from its reading in `anchors`."""
        device = self.column("device")
        self.map("energy_counter_j", lambda row, v: anchors[row[device]] + (v - anchors[row[device]]) * factor)


def _float(cell: str) -> float | None:
    try:
        return float(cell)
    except ValueError:
        return None


def scale(holder: Any, key: str, factor: float) -> None:
    """holder[key] *= factor where it is a number (an int stays an int)."""
    if isinstance(holder, dict) and isinstance(holder.get(key), (int, float)) and not isinstance(holder[key], bool):
        value = holder[key] * factor
        holder[key] = round(value) if isinstance(holder[key], int) else value


def shift_iso(text: Any, fn: Any) -> Any:
    """An ISO 8601 time moved by fn(seconds since the epoch), written with the same precision; other values kept."""
    if not isinstance(text, str):
        return text
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return text
    moved = datetime.fromtimestamp(fn(when.timestamp()), tz=when.tzinfo or timezone.utc)
    fraction = text.split("T", 1)[-1].split("+", 1)[0].split("-", 1)[0]
    digits = len(fraction.split(".", 1)[1]) if "." in fraction else 0
    spec = "microseconds" if digits > 3 else "milliseconds" if digits else "seconds"
    return moved.isoformat(timespec=spec)


def set_path(data: Any, path: Sequence[str | int], value: Any) -> bool:
    """data[path[0]][path[1]]... = value where every step exists; False where one does not."""
    holder = data
    for key in path[:-1]:
        holder = get_path(holder, (key,))
        if not isinstance(holder, (dict, list)):
            return False
    last = path[-1]
    if isinstance(holder, dict) and isinstance(last, str) and last in holder:
        holder[last] = value
        return True
    if isinstance(holder, list) and isinstance(last, int) and last < len(holder):
        holder[last] = value
        return True
    return False


def get_path(data: Any, path: Sequence[str | int]) -> Any:
    holder = data
    for key in path:
        if isinstance(holder, dict) and isinstance(key, str):
            holder = holder.get(key)
        elif isinstance(holder, list) and isinstance(key, int) and key < len(holder):
            holder = holder[key]
        else:
            return None
    return holder


def rename_identity(root: Path, submitter: str, system: str, base: Path | None = None) -> Path:
    """The submission under new submitter and system names, in every file that states them and in its two
    folder names (ORG/SYSTEM, under `base`: by default where its ORG folder lies); returns the new root."""
    data = read_yaml(root / "system.yaml")
    data.update(submitter=submitter, system=system)
    write_yaml(root / "system.yaml", data)
    for path in sorted(root.glob("*/submission.yaml")):
        meta = read_yaml(path)
        meta.update(submitter=submitter, system=system)
        write_yaml(path, meta)
    for run in sorted(root.glob("*/run_*")):
        if (run / "log.txt").is_file():
            relabel_events(run, {"submission_org": submitter, "submission_platform": system})
    target = (base if base is not None else root.parent.parent) / submitter / system
    target.parent.mkdir(parents=True, exist_ok=True)
    root.rename(target)
    if not any(root.parent.iterdir()):
        root.parent.rmdir()
    return target


def relabel_events(run: Path, values: dict[str, Any]) -> None:
    """Each event keyed by one of `values` given that value."""
    events = read_events(run)
    for event in events:
        if event.get("key") in values:
            event["value"] = values[event["key"]]
    write_events(run, events)
