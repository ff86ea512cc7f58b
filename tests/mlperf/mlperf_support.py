"""Shared helpers of the MLPerf import tests: the corpus, tree hashing, and edits of MLPerf files."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from specbench.mlperf import ImportOutcome, SystemOutcome

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "mlperf-training"
SMC = "v4.0/smc-dc-power"
SMC_RESULTS = "results/1xSMC-H100-SXM-80GB/resnet"
TOKEN = ":::MLLOG "


def corpus() -> Path:
    """The corpus folder; skipped when it is absent outside CI, a failure in CI."""
    if not CORPUS.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"the MLPerf corpus is missing at {CORPUS} (CI must provide ../shared/corpus)")
        pytest.skip(f"no MLPerf corpus at {CORPUS}")
    return CORPUS


def tree_digest(root: Path) -> dict[str, str]:
    """sha256 of every file and the list of every folder under root (links included as links)."""
    out: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            out[rel] = "link:" + os.readlink(path)
        elif path.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@dataclass
class Imported:
    outcome: ImportOutcome
    out: Path
    before: dict[str, str]
    after: dict[str, str]

    def system(self, label_end: str) -> SystemOutcome:
        found = [s for s in self.outcome.systems if s.imported.label.endswith(label_end)]
        assert len(found) == 1, [s.imported.label for s in self.outcome.systems]
        return found[0]


def read_events(path: Path) -> list[dict[str, Any]]:
    """The MLLOG events of a file (other lines are dropped)."""
    return [json.loads(line.split(TOKEN, 1)[1]) for line in path.read_text().splitlines() if TOKEN in line]


def write_events(path: Path, events: list[dict[str, Any]]) -> None:
    path.write_text("".join(f"{TOKEN}{json.dumps(e)}\n" for e in events))


def edit_events(path: Path, edit: Callable[[list[dict[str, Any]]], object]) -> None:
    """Rewrite a log with only its MLLOG lines, after `edit` changed the list of events in place."""
    events = read_events(path)
    edit(events)
    write_events(path, events)


def find(events: list[dict[str, Any]], key: str, **metadata: Any) -> int:
    """Index of the first event with this key (and these metadata values)."""
    for i, event in enumerate(events):
        meta = event["metadata"] if isinstance(event["metadata"], dict) else {}
        if event["key"] == key and all(meta.get(k) == v for k, v in metadata.items()):
            return i
    raise KeyError(key)
