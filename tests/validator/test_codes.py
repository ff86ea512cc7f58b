"""Every finding code: one mutation of a compliant submission that triggers it, with the exact codes found.

Mutations are re-signed (manifest rewritten) unless the case is about the manifest, so each case
shows the one rule it breaks and the findings that rule implies, nothing else.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from mutate import (
    BENCH,
    drop_hyperparameter,
    edit_json,
    edit_log,
    edit_result,
    edit_rows,
    edit_yaml,
    index,
    resign,
    run_dir,
    set_hyperparameter,
    window_rows,
)
from validator_bases import MULTI, Bases

from specbench.validator import CODES, Limits, validate_submission
from specbench.validator.files import DEFAULT_LIMITS

DOCS = Path(__file__).resolve().parents[2] / "docs" / "rules.md"


@dataclass
class Case:
    name: str
    mutate: Callable[[Path], object]
    codes: set[str]
    base: dict[str, Any] = field(default_factory=dict)
    resign: bool = True
    limits: Limits = DEFAULT_LIMITS
    target: Callable[[Path], Path] = lambda root: root


def _put(path: Path, text: str) -> None:
    path.write_text(text)


def _log_value(key: str, value: Any, run: int = 1) -> Callable[[Path], None]:
    return lambda root: edit_log(root, lambda ev: ev[index(ev, key)].__setitem__("value", value), run)


def _drop_events(key: str, **metadata: Any) -> Callable[[Path], None]:
    return lambda root: edit_log(root, lambda ev: ev.pop(index(ev, key, **metadata)))


def _move_after_run_start(root: Path) -> None:
    def edit(events: list[dict[str, Any]]) -> None:
        moved = events.pop(index(events, "momentum"))
        at = index(events, "run_start")
        moved["time_ms"] = events[at]["time_ms"]
        events.insert(at + 1, moved)

    edit_log(root, edit)


def _time_backwards(root: Path) -> None:
    edit_log(root, lambda ev: ev[index(ev, "seed")].__setitem__("time_ms", ev[0]["time_ms"] - 5))


def _drop_eval(root: Path) -> None:
    def edit(events: list[dict[str, Any]]) -> None:
        for key in ("eval_start", "eval_accuracy", "eval_stop"):
            events.pop(index(events, key, epoch_num=2))

    edit_log(root, edit)
    edit_result(root, lambda d: d["quality"]["curve"].pop(1))


def _stop_status(status: str) -> Callable[[Path], None]:
    return lambda root: edit_log(root, lambda ev: ev[index(ev, "run_stop")]["metadata"].__setitem__("status", status))


def _same_seed(root: Path) -> None:
    _log_value("seed", 1001, run=2)(root)
    edit_result(root, lambda d: d.__setitem__("seed", 1001), run=2)


def _power_json(edit: Callable[[dict[str, Any]], object], run: int = 1) -> Callable[[Path], None]:
    return lambda root: edit_json(run_dir(root, run) / "power.json", edit)


def _device_field(key: str, name: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        for meter in data["meters"]:
            for device in meter["devices"]:
                if device["key"] == key:
                    device[name] = value

    return edit


def _drop_last_eval(root: Path) -> None:
    def edit(events: list[dict[str, Any]]) -> None:
        last = max(e["metadata"]["epoch_num"] for e in events if e["key"] == "eval_accuracy")
        for key in ("eval_start", "eval_accuracy", "eval_stop", "epoch_start", "epoch_stop"):
            events.pop(index(events, key, epoch_num=last))

    edit_log(root, edit)


def _eval_samples(root: Path) -> None:
    edit_log(
        root, lambda ev: ev[index(ev, "eval_accuracy", epoch_num=1)]["metadata"].__setitem__("samples_count", 9999)
    )


def _accuracy_percent(root: Path) -> None:
    def edit(events: list[dict[str, Any]]) -> None:
        for event in events:
            if event["key"] == "eval_accuracy":
                event["value"] *= 100

    edit_log(root, edit)


def _copy_device(rows: list[list[str]]) -> None:
    """nvml:1 reports nvml:0's readings (each sweep holds nvml:0 then nvml:1)."""
    first: dict[str, list[str]] = {}
    for row in rows:
        if row[3] == "nvml:0":
            first[row[0]] = row
        elif row[3] == "nvml:1" and row[0] in first:
            row[4:7] = first[row[0]][4:7]


def _counter_reset(rows: list[list[str]]) -> None:
    for row in rows:
        if row[3] == "nvml:0":
            row[6] = repr(float(row[6]) - 5.0e6)


def _scale_energy(rows: list[list[str]]) -> None:
    for row in rows[1:]:
        row[4:7] = [repr(float(cell) * 0.01) for cell in row[4:7]]


def _model(name: str) -> Callable[[Path], None]:
    """The accelerator model changed consistently: system.yaml and every trace's device entries."""

    def edit(root: Path) -> None:
        _system(lambda d: d["layers"]["hardware"].__setitem__("accelerator_model", name))(root)
        for trace in root.glob("*/run_*/power.json"):
            edit_json(trace, lambda d: [dev.__setitem__("model", name) for m in d["meters"] for dev in m["devices"]])

    return edit


def _board(name: str, limit_w: float) -> Callable[[Path], None]:
    """Another accelerator model, consistently, with its board's power limit in system.yaml and every trace."""

    def edit(root: Path) -> None:
        _model(name)(root)
        _system(lambda d: d["layers"]["driver_firmware"].__setitem__("power_limit_w", limit_w))(root)
        for trace in root.glob("*/run_*/power.json"):
            edit_json(
                trace, lambda d: [st.__setitem__("power_limit_w", limit_w) for k in STATES for st in d[k].values()]
            )

    return edit


STATES = ("state_start", "state_end")


def _rows(edit: Callable[[list[list[str]]], object], run: int = 1) -> Callable[[Path], None]:
    return lambda root: edit_rows(root, edit, run)


def _middle(rows: list[list[str]]) -> int:
    start, stop = window_rows(rows)
    return (start + stop) // 2 // 2 * 2 + 1


def _bad_cell(rows: list[list[str]]) -> None:
    rows[_middle(rows)][4] = "abc"


def _cut_start(rows: list[list[str]]) -> None:
    start, _ = window_rows(rows)
    rows[start : start + 2 * 25] = []


def _cut_middle(rows: list[list[str]]) -> None:
    i = _middle(rows)
    rows[i : i + 2 * 30] = []


def _counter_down(rows: list[list[str]]) -> None:
    i = _middle(rows)
    rows[i][6] = repr(float(rows[i][6]) - 1000.0)


def _time_swap(rows: list[list[str]]) -> None:
    i = _middle(rows)
    rows[i][1], rows[i + 2][1] = rows[i + 2][1], rows[i][1]


def _scale_power(rows: list[list[str]]) -> None:
    start, stop = window_rows(rows)
    for row in rows[start : stop + 1]:
        if row[3] == "nvml:0":
            row[4] = row[5] = repr(float(row[4]) * 1.2)


def _drop_device(rows: list[list[str]]) -> None:
    rows[:] = [r for r in rows if r[3] != "nvml:1"]


def _repeat_row(rows: list[list[str]]) -> None:
    i = _middle(rows)
    rows.insert(i + 1, list(rows[i]))


def _power_limit(root: Path) -> None:
    def edit(data: dict[str, Any]) -> None:
        for state in ("state_start", "state_end"):
            data[state]["nvml:0"]["power_limit_w"] = 100.0

    edit_json(run_dir(root) / "power.json", edit)


def _no_trace(root: Path) -> None:
    (run_dir(root) / "power.csv").unlink()
    (run_dir(root) / "power.json").unlink()


def _rename(root: Path, old: str, new: str) -> None:
    (root / old).rename(root / new)


def _renumber(root: Path) -> None:
    _rename(root, f"{BENCH}/run_1", f"{BENCH}/run_2")
    edit_json(root / BENCH / "run_2" / "result.json", lambda d: d.__setitem__("run", 2))


def _interrupted(root: Path) -> None:
    edit_json(run_dir(root, 3) / "state.json", lambda d: d.__setitem__("status", "running"))
    edit_result(root, lambda d: d.update(status="incomplete", reason="killed by the scheduler"), run=3)


def _symlink(root: Path) -> None:
    os.symlink("/etc/passwd", run_dir(root) / "notes.txt")


def _fifo(root: Path) -> None:
    os.mkfifo(run_dir(root) / "pipe")


def _manifest_entry(path: str) -> Callable[[Path], None]:
    entry = {"sha256": "0" * 64, "bytes": 1}
    return lambda root: edit_json(root / "manifest.json", lambda d: d["files"].__setitem__(path, entry))


def _unlist(root: Path) -> None:
    edit_json(root / "manifest.json", lambda d: d["files"].pop(f"{BENCH}/run_1/state.json"))


def _typo_beside(key: str, typo: str) -> Callable[[Path], None]:
    """A misspelt copy of a hyperparameter declared, logged and recorded beside it, as a spec with the typo runs."""

    def mutate(root: Path) -> None:
        value: Any = None

        def declare(data: dict[str, Any]) -> None:
            nonlocal value
            value = data["hyperparameters"][key]
            data["hyperparameters"][typo] = value

        edit_yaml(root / BENCH / "submission.yaml", declare)
        edit_log(root, lambda ev: ev.insert(index(ev, key) + 1, {**ev[index(ev, key)], "key": typo}))
        edit_result(root, lambda d: d["hyperparameters"].__setitem__(typo, value))

    return mutate


def _meta_layer(layer: str, key: str, value: Any) -> Callable[[Path], None]:
    return lambda root: edit_yaml(
        root / BENCH / "submission.yaml",
        lambda d: d.setdefault("layers", {}).setdefault(layer, {}).__setitem__(key, value),
    )


def _meta(key: str, value: Any) -> Callable[[Path], None]:
    return lambda root: edit_yaml(root / BENCH / "submission.yaml", lambda d: d.__setitem__(key, value))


def _system(edit: Callable[[dict[str, Any]], object]) -> Callable[[Path], None]:
    return lambda root: edit_yaml(root / "system.yaml", edit)


def _precision(name: str | None) -> Callable[[Path], None]:
    """submission.yaml's layer-7 precision set to `name`, or removed (None); result.json keeps bf16."""

    def edit(data: dict[str, Any]) -> None:
        layer = data["layers"]["parallelism_precision"]
        layer.pop("precision") if name is None else layer.__setitem__("precision", name)

    return lambda root: edit_yaml(root / BENCH / "submission.yaml", edit)


def _log_precision(name: str) -> Callable[[Path], None]:
    """A `precision` event logged before run_start (resnet50 declares precision as a layer-7 setting)."""

    def edit(events: list[dict[str, Any]]) -> None:
        event = dict(events[index(events, "seed")], key="precision", value=name)
        events.insert(index(events, "seed") + 1, event)

    return lambda root: edit_log(root, edit)


def _vendor(name: str) -> Callable[[Path], None]:
    return _system(lambda d: d["layers"]["hardware"].__setitem__("accelerator_vendor", name))


def _profile(root: Path) -> None:
    _meta("profile", "tiny")(root)
    edit_result(root, lambda d: d.__setitem__("profile", "tiny"))


def _not_synthetic(root: Path) -> None:
    _meta("synthetic_data", False)(root)
    edit_result(root, lambda d: d.__setitem__("synthetic_data", False))


def _unsafe_manifest(root: Path) -> None:
    _manifest_entry("../outside.txt")(root)
    _manifest_entry("/etc/passwd")(root)


CASES = [
    # structure
    Case("STR-002 missing state.json", lambda r: (run_dir(r) / "state.json").unlink(), {"SB-STR-002"}),
    Case(
        "STR-002 no run log",
        lambda r: (run_dir(r) / "log.txt").unlink(),
        {"SB-STR-002", "SB-RUN-005", "SB-RUN-002", "SB-RES-002"},
    ),
    Case("STR-003 yaml over limit", lambda r: None, {"SB-STR-003"}, limits=Limits(yaml_bytes=300)),
    Case("STR-003 too many entries", lambda r: None, {"SB-STR-003"}, limits=Limits(entries=6)),
    Case("STR-003 too deep", lambda r: (run_dir(r) / "a/b/c/d/e").mkdir(parents=True), {"SB-STR-003", "SB-STR-009"}),
    Case("STR-004 symlink", _symlink, {"SB-STR-004"}),
    Case("STR-004 fifo", _fifo, {"SB-STR-004"}),
    Case("STR-005 unsafe manifest paths", _unsafe_manifest, {"SB-STR-005"}, resign=False),
    Case("STR-006 result not JSON", lambda r: _put(run_dir(r) / "result.json", "{"), {"SB-STR-006"}),
    Case("STR-006 NaN in result", lambda r: _put(run_dir(r) / "result.json", '{"a": NaN}'), {"SB-STR-006"}),
    Case("STR-006 submission.yaml syntax", lambda r: _put(r / BENCH / "submission.yaml", "a: [1,\n"), {"SB-STR-006"}),
    Case("STR-007 unknown key", lambda r: edit_result(r, lambda d: d.__setitem__("bonus", 1)), {"SB-STR-007"}),
    Case(
        "STR-008 result version", lambda r: edit_result(r, lambda d: d.__setitem__("format_version", 2)), {"SB-STR-008"}
    ),
    Case(
        "STR-008 power.json version",
        lambda r: edit_json(run_dir(r) / "power.json", lambda d: d.__setitem__("format_version", 9)),
        {"SB-STR-008"},
    ),
    Case("STR-009 extra file", lambda r: _put(run_dir(r) / "notes.txt", "hi"), {"SB-STR-009"}),
    Case("STR-012 line break in a file name", lambda r: _put(run_dir(r) / "x\nALL CLEAR\x1b[2J", "hi"), {"SB-STR-012"}),
    Case("STR-012 bidi control in a folder name", lambda r: (r / BENCH / "run\u202e_9").mkdir(), {"SB-STR-012"}),
    Case("STR-010 executable", lambda r: os.chmod(run_dir(r) / "log.txt", 0o755), {"SB-STR-010"}),
    Case("STR-011 benchmark folder name", lambda r: _rename(r, BENCH, "resnet-50"), {"SB-STR-011"}),
    Case("STR-011 submitter", _meta("submitter", "other"), {"SB-STR-011", "SB-LOG-011"}),
    Case("STR-011 sweep value", lambda r: _rename(r, BENCH, f"{BENCH}--global_batch_size=64"), {"SB-STR-011"}),
    Case("STR-011 sweep key", lambda r: _rename(r, BENCH, f"{BENCH}--colour=red"), {"SB-STR-011"}),
    # integrity
    Case(
        "INT-001 changed after signing",
        lambda r: _put(run_dir(r) / "log.txt", (run_dir(r) / "log.txt").read_text() + "note\n"),
        {"SB-INT-001"},
        resign=False,
    ),
    Case("INT-002 not listed", _unlist, {"SB-INT-002"}, resign=False),
    Case("INT-003 listed, missing", _manifest_entry(f"{BENCH}/run_1/extra.txt"), {"SB-INT-003"}, resign=False),
    Case("INT-004 unknown digest", _meta("spec_sha256", "0" * 64), {"SB-INT-004", "SB-RES-001"}),
    Case("INT-005 wrong version", _meta("spec_version", "9.9.9"), {"SB-INT-005", "SB-RES-001"}),
    # equivalence
    Case("EQV-001 optimizer", lambda r: set_hyperparameter(r, "optimizer", "adam"), {"SB-EQV-001"}),
    Case("EQV-001 learning rate", lambda r: set_hyperparameter(r, "base_learning_rate", 0.1), {"SB-EQV-001"}),
    Case(
        "EQV-001 precision setting",
        lambda r: edit_result(r, lambda d: d["settings"].__setitem__("precision", "int4")),
        {"SB-EQV-001", "SB-PHY-008"},
    ),
    Case(
        "EQV-002 framework_version",
        _system(lambda d: d["layers"]["framework"].pop("framework_version")),
        {"SB-EQV-002"},
    ),
    Case("EQV-002 momentum", lambda r: drop_hyperparameter(r, "momentum"), {"SB-EQV-002"}),
    Case("EQV-003 train_samples", _log_value("train_samples", 4096), {"SB-EQV-003"}),
    Case("EQV-003 synthetic data", _not_synthetic, {"SB-EQV-003"}),
    Case(
        "EQV-003 dataset",
        _system(lambda d: d["layers"].__setitem__("problem", {"dataset": "imagenet-1k"})),
        {"SB-EQV-003"},
    ),
    Case("EQV-004 logged value", _log_value("momentum", 0.9), {"SB-EQV-004"}),
    Case("EQV-004 not logged", _drop_events("momentum"), {"SB-EQV-004"}),
    Case("EQV-005 profile", _profile, {"SB-EQV-005"}),
    Case("EQV-006 typo beside its hyperparameter", _typo_beside("momentum", "momentun"), {"SB-EQV-006"}),
    Case(
        "EQV-006 setting",
        _meta_layer("framework", "compile_mod", "none"),
        {"SB-EQV-006"},
    ),
    # log
    Case(
        "LOG-001 broken line",
        lambda r: _put(run_dir(r) / "log.txt", ':::MLLOG {"key": \n' + (run_dir(r) / "log.txt").read_text()),
        {"SB-LOG-001"},
    ),
    Case("LOG-002 cache_clear", _drop_events("cache_clear"), {"SB-LOG-002"}),
    Case(
        "LOG-003 seed twice",
        lambda r: edit_log(r, lambda ev: ev.insert(index(ev, "seed"), dict(ev[index(ev, "seed")]))),
        {"SB-LOG-003"},
    ),
    Case("LOG-004 epoch_stop missing", _drop_events("epoch_stop", epoch_num=2), {"SB-LOG-004"}),
    Case(
        "LOG-004 event type",
        lambda r: edit_log(r, lambda ev: ev[index(ev, "cache_clear")].__setitem__("event_type", "INTERVAL_START")),
        {"SB-LOG-004"},
    ),
    Case("LOG-005 hyperparameter after run_start", _move_after_run_start, {"SB-LOG-005"}),
    Case("LOG-006 time backwards", _time_backwards, {"SB-LOG-006"}),
    Case("LOG-007 unknown status", _stop_status("crashed"), {"SB-LOG-007", "SB-RES-002", "SB-RUN-002"}),
    Case("LOG-008 evaluation skipped", _drop_eval, {"SB-LOG-008"}),
    Case("LOG-009 target missed", lambda r: None, {"SB-LOG-009"}, base={**MULTI, "failed_runs": (2,)}),
    Case("LOG-010 same seed", _same_seed, {"SB-LOG-010"}, base=MULTI),
    Case("LOG-011 org", _log_value("submission_org", "other"), {"SB-LOG-011"}),
    Case(
        "LOG-012 seed type",
        lambda r: (_log_value("seed", "abc")(r), edit_result(r, lambda d: d.__setitem__("seed", 0))),
        {"SB-LOG-012"},
    ),
    Case(
        "LOG-012 epoch_num missing",
        lambda r: edit_log(r, lambda ev: ev[index(ev, "epoch_start", epoch_num=2)]["metadata"].pop("epoch_num")),
        {"SB-LOG-012", "SB-LOG-004"},
    ),
    Case(
        "LOG-012 samples_count missing",
        lambda r: edit_log(
            r,
            lambda ev: ev[index(ev, "block_start")]["metadata"].pop("samples_count"),
            bench="caraml-resnet50",
        ),
        {"SB-LOG-012"},
        base={"spec": "caraml-resnet50"},
    ),
    # power
    Case("PWR-001 trace missing", _no_trace, {"SB-PWR-001"}),
    Case("PWR-002 bad cell", _rows(_bad_cell), {"SB-PWR-002"}),
    Case(
        "PWR-002 csv name",
        lambda r: edit_json(run_dir(r) / "power.json", lambda d: d.__setitem__("csv", "../../x.csv")),
        {"SB-PWR-002"},
    ),
    Case("PWR-003 late first sample", _rows(_cut_start), {"SB-PWR-003", "SB-RES-002"}),
    Case("PWR-004 slow sampling", lambda r: None, {"SB-PWR-004"}, base={"power_hz": 0.5}),
    Case("PWR-005 gap", _rows(_cut_middle), {"SB-PWR-005"}),
    Case("PWR-006 counter down", _rows(_counter_down), {"SB-PWR-006", "SB-RES-002"}),
    Case("PWR-007 time backwards", _rows(_time_swap), {"SB-PWR-007"}),
    Case("PWR-008 counter vs integral", _rows(_scale_power), {"SB-PWR-008"}),
    Case("PWR-009 over the limit", _power_limit, {"SB-PWR-009"}),
    Case("PWR-009 under idle", _system(lambda d: d["declared"].__setitem__("idle_power_w", 400.0)), {"SB-PWR-009"}),
    Case("PWR-010 device without samples", _rows(_drop_device), {"SB-PWR-010"}),
    Case("PWR-010 device twice in a sweep", _rows(_repeat_row), {"SB-PWR-010"}),
    Case("PWR-011 scope", lambda r: edit_result(r, lambda d: d["power"].__setitem__("scope", "node")), {"SB-PWR-011"}),
    # runs
    Case("RUN-001 two runs", lambda r: None, {"SB-RUN-001"}, base={"runs": 2}),
    Case("RUN-002 failed", lambda r: None, {"SB-RUN-002", "SB-LOG-009"}, base={"failed_runs": (1,)}),
    Case("RUN-003 numbering", _renumber, {"SB-RUN-003"}),
    Case(
        "RUN-004 settings differ",
        lambda r: edit_result(r, lambda d: d["settings"].__setitem__("precision", "fp16"), run=2),
        {"SB-RUN-004", "SB-PHY-008"},
        base=MULTI,
    ),
    Case("RUN-005 interrupted", _interrupted, {"SB-RUN-005"}, base=MULTI),
    # result
    Case("RES-001 run number", lambda r: edit_result(r, lambda d: d.__setitem__("run", 3)), {"SB-RES-001"}),
    Case(
        "RES-002 duration",
        lambda r: edit_result(r, lambda d: d.__setitem__("duration_s", d["duration_s"] + 10)),
        {"SB-RES-002"},
    ),
    Case(
        "RES-003 not measured with energy",
        lambda r: edit_result(r, lambda d: d["power"].update(measured=False, reason="off")),
        {"SB-RES-003"},
    ),
    # HPC AI500 scoring (resnet50 2.0.0: the whole budget is trained)
    Case("LOG-013 below the target", lambda r: None, {"SB-LOG-013"}, base={"spec": "resnet50", "failed_runs": (1,)}),
    Case(
        "LOG-014 budget not trained",
        _drop_last_eval,
        {"SB-LOG-014", "SB-RES-002", "SB-RUN-002"},
        base={"spec": "resnet50"},
    ),
    # accounting, provenance and numbers
    Case("ACC-001 evaluation samples", _eval_samples, {"SB-ACC-001"}),
    Case(
        "ACC-002 devices",
        lambda r: edit_result(r, lambda d: d.__setitem__("devices", 1)),
        {"SB-ACC-002", "SB-PWR-010"},
    ),
    Case(
        "ACC-002 world size",
        _system(lambda d: d["layers"]["communication"].__setitem__("world_size", 1)),
        {"SB-ACC-002"},
    ),
    Case("ACC-003 percent accuracy", _accuracy_percent, {"SB-ACC-003", "SB-RES-002"}),
    Case(
        "ACC-004 event type",
        lambda r: edit_log(r, lambda ev: ev[index(ev, "momentum")].__setitem__("event_type", "INTERVAL_START")),
        {"SB-ACC-004"},
    ),
    Case(
        "ACC-005 hidden accelerator",
        _power_json(_device_field("nvml:1", "scope", "none")),
        {"SB-ACC-005", "SB-PWR-010"},
    ),
    Case(  # llm-gpt: the generated power spends the H200's best-known energy per token at 204 TFLOP/s per device
        "PHY-001 above the peak",
        _board("AMD Radeon RX 7900 XTX", 355.0),
        {"SB-PHY-001", "SB-BND-001", "SB-BND-006", "SB-BND-008"},
        base={"spec": "llm-gpt", "profile": "official"},
    ),
    Case(
        "PHY-002 below the idle floor",
        _rows(_scale_energy),
        {"SB-PHY-002", "SB-PWR-009", "SB-RES-002", "SB-BND-001", "SB-BND-003"},
    ),
    Case("PHY-003 unknown device", _model("Acme Tensor X1"), {"SB-PHY-003"}),
    # fail closed: bounds that cannot apply on a ranked profile, identity strings
    Case(
        "PHY-004 unknown device, ranked",
        _model("Acme Tensor X1"),
        {"SB-PHY-004", "SB-PHY-005", "SB-BND-006", "SB-BND-008"},
        base=MULTI,
    ),
    Case(
        "PHY-005 unknown trace device",
        _power_json(_device_field("nvml:0", "model", "Acme Tensor X1")),
        {"SB-PHY-005", "SB-ACC-002"},
        base=MULTI,
    ),
    Case("PHY-006 precision missing, ranked", _precision(None), {"SB-PHY-006"}, base=MULTI),
    Case("PHY-007 precision unknown, smoke", _precision("bf16x"), {"SB-PHY-007"}),
    Case("PHY-008 declared fp8, ran bf16", _precision("fp8"), {"SB-PHY-008"}),
    Case("PHY-008 logged precision", _log_precision("fp16"), {"SB-PHY-008"}),
    Case("IDN-001 zero-width space", _vendor("NVIDIA\u200b"), {"SB-IDN-001"}),
    Case("IDN-002 trailing space", _vendor("NVIDIA "), {"SB-IDN-002"}),
    Case("IDN-003 fullwidth letter", _vendor("\uff2eVIDIA"), {"SB-IDN-003"}),
    Case("IDN-004 Cyrillic look-alike", _model("NVIDIA \u041d200"), {"SB-IDN-004", "SB-PHY-003"}),
    Case(
        "ACC-002 trace model",
        _system(lambda d: d["layers"]["hardware"].__setitem__("accelerator_model", "NVIDIA H100 80GB HBM3")),
        {"SB-ACC-002"},
    ),
    Case("PRV-001 replayed trace", _power_json(_device_field("nvml:0", "meter", "replay")), {"SB-PRV-001"}),
    Case("PRV-002 copied device", _rows(_copy_device), {"SB-PRV-002", "SB-RES-002"}),
    Case("PRV-003 counter back", _rows(_counter_reset, run=2), {"SB-PRV-003"}, base=MULTI),
    Case(
        "PRV-004 compressed trace clock",
        _power_json(lambda d: d.__setitem__("sampling", {"requested_period_s": 0.2})),
        {"SB-PRV-004"},
    ),
    # consistency across fields and files (more cases: tests/validator/test_consistency.py)
    Case("CNS-001 variant of a spec without variants", _meta("variant", "13B"), {"SB-CNS-001"}),
    Case(
        "CNS-002 hardware level off the reference",
        lambda r: set_hyperparameter(r, "warmup_epochs", 4),
        {"SB-CNS-002"},
        base={"level": "hardware"},
    ),
    Case(
        "CNS-003 run from another host",
        _power_json(lambda d: d.__setitem__("host", "other-node"), run=2),
        {"SB-CNS-003"},
        base=MULTI,
    ),
    Case(
        "CNS-004 vanishing sampling period",
        _power_json(lambda d: d["sampling"].__setitem__("requested_period_s", 1e-320)),
        {"SB-CNS-004"},
    ),
    Case(
        "NUM-001 huge integer",
        lambda r: edit_result(r, lambda d: d.__setitem__("samples_processed", 10**400)),
        {"SB-NUM-001"},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_mutation_gives_exact_codes(case: Case, bases: Bases, tmp_path: Path) -> None:
    root = bases.copy(tmp_path, **case.base)
    case.mutate(root)
    if case.resign:
        resign(root)
    report = validate_submission(case.target(root), limits=case.limits)
    assert report.codes() == case.codes, [f"{f.code} {f.location} {f.message}" for f in report.findings]
    assert report.usable
    assert report.compliant() is not any(CODES[c].severity == "error" for c in case.codes)
    for finding in report.findings:
        said = finding.message
        assert "expected" in said or "found" in said or said.startswith(("unknown key", "missing required key")), said
        assert finding.hint


def test_every_code_has_a_case() -> None:
    covered = {code for case in CASES for code in case.codes} | {"SB-STR-001"}
    imported = {code for code in CODES if code.startswith("SB-MLP-")}  # cases in tests/mlperf/test_codes.py
    signed = {code for code in CODES if code.startswith("SB-SIG-")}  # cases in tests/validator/test_signature.py
    across = {code for code in CODES if code.startswith("SB-DUP-")}  # cases in tests/validator/test_across.py
    bounds = {code for code in CODES if code.startswith("SB-BND-")}  # cases in tests/validator/test_bounds.py
    assert covered | imported | signed | across | bounds == set(CODES)


def test_not_a_submission_is_unusable(tmp_path: Path) -> None:
    for path in (tmp_path / "missing", tmp_path):
        report = validate_submission(path)
        assert report.codes() == {"SB-STR-001"}
        assert not report.usable and report.exit_code() == 2


def _documented() -> dict[str, tuple[str, str]]:
    pattern = re.compile(r"^### (SB-[A-Z]{3}-\d{3}): (.+)\n\n\*\*(error|warning)\*\*", re.MULTILINE)
    return {code: (title, severity) for code, title, severity in pattern.findall(DOCS.read_text())}


def test_docs_list_every_code_with_its_title_and_severity() -> None:
    documented = _documented()
    assert set(documented) == set(CODES)
    for code, info in CODES.items():
        assert documented[code] == (info.title, info.severity), code
