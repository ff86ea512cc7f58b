"""A dishonest submitter's edits of the committed H200 submissions, each re-signed, each refused.

Every case edits a copy of a real submission as a cheater would (result.json made consistent with
the edit, the manifest recomputed: anyone can recompute sha256 sums) and must not be ranked where
the edit would have moved it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mutate import edit_json, edit_yaml, resign
from support.committed import committed

from specbench.scoring.leaderboard import build
from specbench.validator import validate_submission

SUBMISSIONS = committed()


def _copy(tmp_path: Path, name: str) -> Path:
    target = tmp_path / "specbench" / name
    shutil.copytree(SUBMISSIONS / name, target)
    return target


def _runs(root: Path, bench: str) -> list[Path]:
    return sorted((root / bench).glob("run_*"))


def _edit_log(run: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    lines = []
    for line in (run / "log.txt").read_text().splitlines():
        if line.startswith(":::MLLOG "):
            event = json.loads(line[len(":::MLLOG ") :])
            edit(event)
            line = ":::MLLOG " + json.dumps(event)
        lines.append(line)
    (run / "log.txt").write_text("\n".join(lines) + "\n")


def _edit_csv(run: Path, edit: Callable[[list[str]], None]) -> None:
    lines = (run / "power.csv").read_text().splitlines()
    out = [lines[0]]
    for line in lines[1:]:
        cells = line.split(",")
        edit(cells)
        out.append(",".join(cells))
    (run / "power.csv").write_text("\n".join(out) + "\n")


def _double_result_samples(run: Path) -> None:
    def edit(d: dict[str, Any]) -> None:
        d["samples_processed"] *= 2
        d["model_flops"] *= 2
        d["flops_per_s"] *= 2
        d["throughput"]["samples_per_s"] *= 2

    edit_json(run / "result.json", edit)


def _double_log_samples(run: Path) -> None:
    def edit(event: dict[str, Any]) -> None:
        if event["key"] in ("block_start", "block_stop"):
            event["metadata"]["samples_count"] *= 2

    _edit_log(run, edit)
    _double_result_samples(run)


def _scale_power(factor: float) -> Callable[[Path], None]:
    def attack(run: Path) -> None:
        def edit(cells: list[str]) -> None:
            cells[4:7] = [repr(float(c) * factor) if c else c for c in cells[4:7]]

        _edit_csv(run, edit)

        def result(d: dict[str, Any]) -> None:
            d["power"]["energy_j"] *= factor
            d["power"]["mean_power_w"] *= factor

        edit_json(run / "result.json", result)

    return attack


def _replay_meter(run: Path) -> None:
    def edit(d: dict[str, Any]) -> None:
        for meter in d["meters"]:
            meter["kind"] = "replay"
            for device in meter["devices"]:
                device["meter"] = "replay"

    edit_json(run / "power.json", edit)


def _hide_gpu(run: Path) -> None:
    edit_json(run / "power.json", lambda d: d["meters"][0]["devices"].pop(1))

    def result(d: dict[str, Any]) -> None:
        d["devices"] = 1
        d["power"]["devices"] = ["nvml:0"]
        window = json.loads((run / "power.json").read_text())["windows"][0]["devices"][0]
        d["power"]["energy_j"] = window["energy_j"]
        d["power"]["mean_power_w"] = window["mean_power_w"]
        d["flops_per_s"] *= 1.0

    edit_json(run / "result.json", result)


def _compress(factor: float) -> Callable[[Path], None]:
    """Log and trace compressed around run_start, energy counter increments scaled to match."""

    def attack(run: Path) -> None:
        events = [
            json.loads(line[9:]) for line in (run / "log.txt").read_text().splitlines() if line.startswith(":::MLLOG")
        ]
        origin = next(e["time_ms"] for e in events if e["key"] == "run_start")
        _edit_log(run, lambda e: e.__setitem__("time_ms", round(origin + (e["time_ms"] - origin) * factor)))
        lines = (run / "power.csv").read_text().splitlines()
        first = lines[1].split(",")
        mono0, wall0, counter0 = float(first[1]), float(first[2]), {}

        def edit(cells: list[str]) -> None:
            cells[1] = repr(mono0 + (float(cells[1]) - mono0) * factor)
            cells[2] = repr(wall0 + (float(cells[2]) - wall0) * factor)
            if cells[6]:
                base = counter0.setdefault(cells[3], float(cells[6]))
                cells[6] = repr(base + (float(cells[6]) - base) * factor)

        _edit_csv(run, edit)

        def result(d: dict[str, Any]) -> None:
            d["duration_s"] *= factor
            d["flops_per_s"] /= factor
            d["throughput"]["samples_per_s"] /= factor

        edit_json(run / "result.json", result)

    return attack


def _percent_accuracy(run: Path) -> None:
    def edit(event: dict[str, Any]) -> None:
        if event["key"] == "eval_accuracy":
            event["value"] *= 100

    _edit_log(run, edit)

    def result(d: dict[str, Any]) -> None:
        q = d["quality"]
        q["achieved"] *= 100
        q["best"] *= 100
        for point in q["curve"]:
            point["value"] *= 100

    edit_json(run / "result.json", result)


ATTACKS: list[tuple[str, str, str, Callable[[Path], None], set[str]]] = [
    ("result samples x2", "h200-llm", "llm-gpt", _double_result_samples, {"SB-RES-002"}),
    ("log and result samples x2", "h200-llm", "llm-gpt", _double_log_samples, {"SB-ACC-001"}),
    ("power and counter x0.01", "h200-llm", "llm-gpt", _scale_power(0.01), {"SB-PHY-002"}),
    ("meter relabelled replay", "h200-llm", "llm-gpt", _replay_meter, {"SB-PRV-001"}),
    ("log and trace compressed x0.7", "h200-llm", "llm-gpt", _compress(0.7), {"SB-PRV-004"}),
    ("one of two GPUs hidden", "h200x2-llm", "llm-gpt", _hide_gpu, {"SB-ACC-002"}),
    ("accuracy in percent", "h200-extreme-weather", "extreme-weather", _percent_accuracy, {"SB-ACC-003"}),
]


@pytest.mark.parametrize(("name", "system", "bench", "attack", "codes"), ATTACKS, ids=[a[0] for a in ATTACKS])
def test_attack_on_every_run_is_refused(
    name: str, system: str, bench: str, attack: Callable[[Path], None], codes: set[str], tmp_path: Path
) -> None:
    root = _copy(tmp_path, system)
    for run in _runs(root, bench):
        attack(run)
    resign(root)
    report = validate_submission(root)
    found = report.codes()
    assert codes <= found, [f"{f.code} {f.location} {f.message}" for f in report.findings]
    entry = build([report]).groups[0].entries[0]
    assert entry.rank_per_w is None
    if any(f.severity == "error" for f in report.findings):
        assert entry.rank is None and not report.compliant()


def test_system_yaml_accelerator_count_alone(tmp_path: Path) -> None:
    root = _copy(tmp_path, "h200x2-llm")
    edit_yaml(root / "system.yaml", lambda d: d["layers"]["hardware"].__setitem__("accelerator_count", 1))
    resign(root)
    assert "SB-ACC-002" in validate_submission(root).codes()


def test_best_run_copied_over_the_worst_with_a_new_seed(tmp_path: Path) -> None:
    root = _copy(tmp_path, "h200-llm")
    runs = _runs(root, "llm-gpt")
    for name in ("log.txt", "power.csv", "power.json"):
        shutil.copy(runs[0] / name, runs[-1] / name)
    _edit_log(runs[-1], lambda e: e.__setitem__("value", 12345) if e["key"] == "seed" else None)
    result = json.loads((runs[0] / "result.json").read_text())
    result.update(run=len(runs), seed=12345)
    (runs[-1] / "result.json").write_text(json.dumps(result))
    resign(root)
    report = validate_submission(root)
    assert "SB-PRV-002" in report.codes(), [f"{f.code} {f.message}" for f in report.findings]
    assert not report.compliant()


def test_scorer_ranks_recomputed_numbers_not_result_json(tmp_path: Path) -> None:
    """A result.json edit is refused, and even then the board shows the log's samples, never result.json's."""
    root = _copy(tmp_path, "h200-llm")
    honest = build([validate_submission(root)]).groups[0].entries[0].value("samples_per_s")
    for run in _runs(root, "llm-gpt"):
        _double_result_samples(run)
    resign(root)
    entry = build([validate_submission(root)]).groups[0].entries[0]
    assert entry.rank is None
    assert entry.value("samples_per_s") == pytest.approx(honest)
