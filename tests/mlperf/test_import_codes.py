"""Every SB-MLP finding code: one edit of a real MLPerf result that triggers it, with the exact codes found.

The Gaudi2 submission imports with one SB-MLP-003 per run (its logs carry no seed) and nothing
else; the SMC one with the power warnings of test_import_corpus.py (a node_1.txt for its one node,
SB-MLP-010; readings every 2 s, gaps and edges beyond MLPerf's power rules, SB-MLP-008). Each case
names the codes it adds to its baseline and those it removes.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from mlperf_support import SMC_RESULTS, edit_events, find

from specbench.files import write_manifest
from specbench.mlperf import import_results
from specbench.mlperf.check import check_log
from specbench.validator import CODES, validate_submission
from specbench.validator.model import Report

GAUDI_RESULTS = "results/HLS-Gaudi2-PT/resnet"
GAUDI = Counter({"SB-MLP-003": 5})
SMC = Counter({"SB-MLP-010": 5, "SB-MLP-008": 14})
RUN_4 = "result_5800-240517143744812449396_1"


def _drop(result: str, key: str) -> Callable[[Path], None]:
    return lambda tree: edit_events(tree / GAUDI_RESULTS / result, lambda ev: ev.pop(find(ev, key)))


def _late_init_stop(tree: Path) -> None:
    def edit(events: list[dict[str, Any]]) -> None:
        start = events[find(events, "init_start")]["time_ms"]
        events[find(events, "init_stop")]["time_ms"] = start + 31 * 60_000

    edit_events(tree / GAUDI_RESULTS / "result_1.txt", edit)


def _block_before_run(tree: Path) -> None:
    def edit(events: list[dict[str, Any]]) -> None:
        block = events.pop(find(events, "block_start"))
        events.insert(find(events, "run_start"), block)

    edit_events(tree / GAUDI_RESULTS / "result_1.txt", edit)


def _reach_off_schedule(tree: Path) -> None:
    def edit(events: list[dict[str, Any]]) -> None:
        for key in ("eval_start", "eval_stop", "eval_accuracy"):
            events[find(events, key, epoch_num=35)]["metadata"]["epoch_num"] = 34

    edit_events(tree / GAUDI_RESULTS / "result_0.txt", edit)


def _first_eval_late(tree: Path) -> None:
    def edit(events: list[dict[str, Any]]) -> None:
        for key in ("eval_start", "eval_stop", "eval_accuracy"):
            events.pop(find(events, key, epoch_num=3))

    edit_events(tree / GAUDI_RESULTS / "result_2.txt", edit)


def _stop_with_start(tree: Path) -> None:
    node = tree / SMC_RESULTS / "power" / "result_5800-240517143744812449396_1" / "node_1.txt"

    def edit(events: list[dict[str, Any]]) -> None:
        events[find(events, "power_measurement_stop")]["time_ms"] = events[0]["time_ms"]

    edit_events(node, edit)


def _step_back(tree: Path) -> None:
    node = tree / SMC_RESULTS / "power" / RUN_4 / "node_1.txt"

    def edit(events: list[dict[str, Any]]) -> None:
        readings = [i for i, e in enumerate(events) if e["key"] == "power_reading"]
        events[readings[40]]["time_ms"] = events[readings[39]]["time_ms"] - 5

    edit_events(node, edit)


def _two_identical_nodes(tree: Path) -> None:
    system_json = tree / "systems" / "1xSMC-H100-SXM-80GB.json"
    system_json.write_text(json.dumps({**json.loads(system_json.read_text()), "number_of_nodes": "2"}))
    for folder in (tree / SMC_RESULTS / "power").iterdir():
        (folder / "node_0.txt").write_bytes((folder / "node_1.txt").read_bytes())


def _no_power_folder(tree: Path) -> None:
    shutil.rmtree(tree / SMC_RESULTS / "power" / RUN_4)


def _vague_framework(tree: Path) -> None:
    system_json = tree / "systems" / "HLS-Gaudi2-PT.json"
    system_json.write_text(json.dumps({**json.loads(system_json.read_text()), "framework": "Mxnet"}))


def _eval_samples(tree: Path) -> None:
    def edit(events: list[dict[str, Any]]) -> None:
        events[find(events, "eval_samples")]["value"] = 49999

    edit_events(tree / GAUDI_RESULTS / "result_1.txt", edit)


def _open_division(tree: Path) -> None:
    def edit(events: list[dict[str, Any]]) -> None:
        events[find(events, "submission_division")]["value"] = "open"

    edit_events(tree / GAUDI_RESULTS / "result_1.txt", edit)


def _scaling_below_one(tree: Path) -> None:
    (tree / GAUDI_RESULTS / "scaling.json").write_text('{"scaling_factor": 0.5}')


def _changed_log(root: Path) -> None:
    log = root / "mlperf-resnet50" / "run_2" / "log.txt"
    log.write_bytes(log.read_bytes() + b"edited after the import\n")
    write_manifest(root)


def _unlisted_run(root: Path) -> None:
    path = root / "import.json"
    record = json.loads(path.read_text())
    record["benchmarks"]["mlperf-resnet50"]["runs"].pop("run_5")
    path.write_text(json.dumps(record))
    write_manifest(root)


@dataclass
class Case:
    name: str
    org: str
    source_edit: Callable[[Path], None] | None
    added: Counter[str]
    output_edit: Callable[[Path], None] | None = None
    failed_run: int | None = None
    removed: Counter[str] = field(default_factory=Counter)


CASES = [
    Case(
        "MLP-001 cache_clear missing",
        "gaudi",
        _drop("result_2.txt", "cache_clear"),
        Counter({"SB-MLP-001": 1}),
        failed_run=3,
    ),
    Case("MLP-001 init over 30 min", "gaudi", _late_init_stop, Counter({"SB-MLP-001": 1}), failed_run=2),
    Case("MLP-001 block before run_start", "gaudi", _block_before_run, Counter({"SB-MLP-001": 1}), failed_run=2),
    Case(
        "MLP-001 run_stop status", "gaudi", _drop("result_4.txt", "run_stop"), Counter({"SB-MLP-001": 1}), failed_run=5
    ),
    Case("MLP-002 first evaluation late", "gaudi", _first_eval_late, Counter({"SB-MLP-002": 1})),
    Case("MLP-003 no seed (baseline)", "gaudi", None, Counter()),
    Case("MLP-004 log not verbatim", "gaudi", None, Counter({"SB-MLP-004": 1}), output_edit=_changed_log),
    Case("MLP-004 run not recorded", "gaudi", None, Counter({"SB-MLP-004": 1}), output_edit=_unlisted_run),
    Case("MLP-005 result without its power folder", "smc", _no_power_folder,
         Counter({"SB-MLP-005": 1, "SB-RUN-004": 2}),  # run_4 measured no node: power.scope and devices differ
         removed=Counter({"SB-MLP-010": 1, "SB-MLP-008": 2})),
    Case("MLP-006 stop at the start", "smc", _stop_with_start, Counter({"SB-MLP-006": 1})),
    Case("MLP-007 target reached at an extra evaluation", "gaudi", _reach_off_schedule,
         Counter({"SB-MLP-002": 1, "SB-MLP-007": 1})),
    Case("MLP-008 and MLP-010: SMC's node_1.txt sampled every 2 s (baseline)", "smc", None, Counter()),
    Case("MLP-009 reading out of time order", "smc", _step_back, Counter({"SB-MLP-009": 1})),
    Case("MLP-011 two identical node logs", "smc", _two_identical_nodes, Counter({"SB-MLP-011": 5, "SB-MLP-008": 14, "SB-PRV-002": 5, "SB-MLP-021": 5}),
         removed=Counter({"SB-MLP-010": 5})),
    Case("MLP-012 framework without a version", "gaudi", _vague_framework, Counter({"SB-MLP-012": 1})),
    Case("MLP-013 eval_samples off ImageNet's", "gaudi", _eval_samples, Counter({"SB-MLP-013": 1})),
    Case("MLP-014 scaling factor below 1", "gaudi", _scaling_below_one, Counter({"SB-MLP-014": 1})),
    Case("LOG-011 a log of the open division in a closed submission", "gaudi", _open_division,
         Counter({"SB-LOG-011": 1})),  # MLPerf's open rules pass the log: the run succeeds, the submission does not
]  # fmt: skip


def _run_case(case: Case, tree: Path, out: Path) -> Report:
    if case.source_edit is not None:
        case.source_edit(tree)
    (system,) = import_results(tree.parent, out).systems
    if case.output_edit is None:
        return system.report
    case.output_edit(system.imported.output)
    return validate_submission(system.imported.output)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_case_adds_exactly_its_codes(case: Case, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    tree = request.getfixturevalue("gaudi_tree" if case.org == "gaudi" else "smc_tree")
    report = _run_case(case, tree, tmp_path / "out")
    base = GAUDI if case.org == "gaudi" else SMC
    found = Counter(f.code for f in report.findings)
    assert found == base + case.added - case.removed, [f"{f.code} {f.location} {f.message}" for f in report.findings]
    runs = report.benchmarks[0].runs
    failed = [run.number for run in runs if run.status != "success"]
    assert failed == ([case.failed_run] if case.failed_run else [])
    for finding in report.findings:
        assert "expected" in finding.message and finding.hint


def test_every_mlperf_code_has_a_case() -> None:
    elsewhere = {"SB-MLP-020", "SB-MLP-021"}  # switch logs of Dell's v4.1 system: tests/mlperf/test_published_import.py
    elsewhere |= {"SB-MLP-030"}  # HPC weak scaling: tests/mlperf/test_import_weak.py
    covered = {code for case in CASES for code in case.added} | set(GAUDI) | set(SMC) | elsewhere
    assert {code for code in covered if code.startswith("SB-MLP-")} == {c for c in CODES if c.startswith("SB-MLP-")}


def test_a_failed_run_names_the_broken_rule(gaudi_tree: Path, tmp_path: Path) -> None:
    _drop("result_2.txt", "cache_clear")(gaudi_tree)
    (system,) = import_results(gaudi_tree.parent, tmp_path / "out").systems
    (finding,) = [f for f in system.report.findings if f.code == "SB-MLP-001"]
    assert finding.message == (
        "cache_clear: expected at least one line, found 0 (MLPerf training_3.1.0/common.yaml); the run counts as failed"
    )
    run = system.report.benchmarks[0].runs[2]
    assert run.reason == "MLPerf log rule broken: cache_clear: expected at least one line, found 0"
    assert (
        system.entries[0].aggregate.dropped[-1] == "run_3"
    )  # a failed run is the slowest, dropped by the olympic mean


def test_two_failed_runs_make_the_submission_non_compliant(gaudi_tree: Path, tmp_path: Path) -> None:
    _drop("result_2.txt", "cache_clear")(gaudi_tree)
    _drop("result_4.txt", "run_stop")(gaudi_tree)
    (system,) = import_results(gaudi_tree.parent, tmp_path / "out").systems
    assert Counter(f.code for f in system.report.findings) == GAUDI + Counter({"SB-MLP-001": 2, "SB-RUN-002": 1})


def bert_log(*extra: tuple[str, Any]) -> str:
    """A short BERT log without a seed, with `extra` lines after init_start."""
    lines: list[tuple[str, Any, dict[str, Any]]] = [
        ("submission_benchmark", "bert", {}),
        ("submission_division", "closed", {}),
        ("submission_org", "Lab", {}),
        ("submission_platform", "8xGPU", {}),
        ("submission_status", "onprem", {}),
        ("cache_clear", True, {}),
        ("init_start", None, {}),
        *((key, value, {}) for key, value in extra),
        ("init_stop", None, {}),
        ("run_start", None, {}),
        ("eval_accuracy", 0.73, {"epoch_num": 1}),
        ("run_stop", None, {"status": "success"}),
    ]
    events = [
        {"namespace": "", "time_ms": 1000.0 * i, "event_type": "POINT_IN_TIME", "key": k, "value": v, "metadata": m}
        for i, (k, v, m) in enumerate(lines)
    ]
    return "".join(":::MLLOG " + json.dumps(e) + "\n" for e in events)


def test_seed_and_identity_are_checked_on_the_log_of_every_mlperf_benchmark() -> None:
    """specbench's own checks of an imported log beside MLPerf's rules (SB-MLP-003, SB-LOG-011), not ResNet's only."""
    _, findings = check_log(bert_log(), "mlperf-bert", "4.0.0")
    assert [f.code for f in findings if f.code in ("SB-MLP-003", "SB-LOG-011")] == ["SB-MLP-003"]
    _, findings = check_log(bert_log(("seed", 7)), "mlperf-bert", "4.0.0", division="open")
    (identity,) = [f for f in findings if f.code in ("SB-MLP-003", "SB-LOG-011")]
    assert identity.code == "SB-LOG-011" and identity.location.line == 2
    assert (
        identity.message
        == 'expected submission_division "open" (the MLPerf division of this submission), found "closed"'
    )
