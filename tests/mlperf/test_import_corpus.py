"""The real MLPerf corpus imported end to end: layout, verbatim logs, findings, energy and scores.

Every expected number is recomputed here from the MLPerf files themselves (run_start/run_stop,
eval_accuracy, power_reading), independently of the importer and the validator.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from itertools import pairwise
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mlperf_support import CORPUS, SMC, SMC_RESULTS, Imported

from specbench.formats.mlperf_import import ImportRecord
from specbench.scoring.leaderboard import build
from specbench.validator import discover, validate_many

FLOPS_PER_IMAGE = 24299077632
TRAIN_IMAGES = 1281167
TARGET = 0.759


def events(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text().splitlines():
        if ":::MLLOG " in line:
            out.append(json.loads(line.split(":::MLLOG ", 1)[1]))
    return out


def run_facts(path: Path) -> dict[str, Any]:
    """Time to train, best accuracy and epochs of one MLPerf log, read without specbench."""
    evs = events(path)
    start = next(e["time_ms"] for e in evs if e["key"] == "run_start")
    stops = [e["time_ms"] for e in evs if e["key"] == "run_stop"]
    accuracy = [(e["metadata"]["epoch_num"], e["value"]) for e in evs if e["key"] == "eval_accuracy"]
    best = max(v for _, v in accuracy)
    epochs = max(
        [e["metadata"]["epoch_num"] for e in evs if e["key"] in ("eval_accuracy", "epoch_stop")]
        + [
            e["metadata"]["first_epoch_num"] + e["metadata"].get("epoch_count", 1) - 1
            for e in evs
            if e["key"] == "block_stop"
        ]
    )
    return {
        "start_ms": start,
        "time_s": (stops[0] - start) / 1000 if stops else None,
        "best": best,
        "epochs": epochs,
        "converged": bool(stops) and best >= TARGET,
    }


def node_energy_j(node_log: Path, start_ms: float, stop_ms: float) -> float:
    """Trapezoid of the readings between run_start and run_stop (the window specbench takes)."""
    readings = [(e["time_ms"] / 1000, e["value"]) for e in events(node_log) if e["key"] == "power_reading"]
    inside = [(t, p) for t, p in readings if start_ms / 1000 - 0.002 <= t <= stop_ms / 1000 + 0.002]
    return math.fsum(0.5 * (p0 + p1) * (t1 - t0) for (t0, p0), (t1, p1) in pairwise(inside))


def olympic(values: list[float]) -> float:
    ordered = sorted(values)[1:-1]
    return math.fsum(ordered) / len(ordered)


def results_of(org: str, system: str) -> list[Path]:
    """The result files in the order they become run_1 ... run_5 (natural order of their names)."""
    folder = CORPUS / org / "results" / system / "resnet"
    return sorted(
        folder.glob("result_*.txt"), key=lambda p: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", p.name)]
    )


def test_source_tree_is_never_modified(imported: Imported) -> None:
    assert imported.before == imported.after
    assert not any("specbench" in name or name.endswith(".tmp") for name in imported.after)


def test_layout_mirrors_rounds_and_organisations(imported: Imported) -> None:
    found = sorted(p.relative_to(imported.out).as_posix() for p in discover(imported.out))
    assert found == [
        "v3.1/Intel-HabanaLabs/HLS-Gaudi2-PT",
        "v4.0/smc-dc-power/1xSMC-H100-SXM-80GB",
        "v4.0/tinycorp/tinybox_green",
    ]
    assert imported.outcome.skipped == []


@pytest.mark.parametrize(
    ("org", "system", "label"),
    [
        ("v3.1/Intel-HabanaLabs", "HLS-Gaudi2-PT", "HLS-Gaudi2-PT"),
        (SMC, "1xSMC-H100-SXM-80GB", "1xSMC-H100-SXM-80GB"),
        ("v4.0/tinycorp", "tinybox_green", "tinybox_green"),
    ],
)
def test_logs_are_verbatim_and_recorded(imported: Imported, org: str, system: str, label: str) -> None:
    outcome = imported.system(label)
    root = outcome.imported.output
    record = json.loads((root / "import.json").read_text())
    runs = record["benchmarks"]["mlperf-resnet50"]["runs"]
    sources = results_of(org, system)
    assert len(runs) == len(sources) == 5
    for number, source in enumerate(sources, start=1):
        copy = root / "mlperf-resnet50" / f"run_{number}" / "log.txt"
        assert copy.read_bytes() == source.read_bytes()
        assert runs[f"run_{number}"]["result_file"]["path"] == source.relative_to(CORPUS / org).as_posix()
    assert record["system_json"]["content"] == json.loads((CORPUS / org / "systems" / f"{system}.json").read_text())


def test_gaudi_converges_and_is_compliant(imported: Imported) -> None:
    outcome = imported.system("HLS-Gaudi2-PT")
    report = outcome.report
    facts = [run_facts(p) for p in results_of("v3.1/Intel-HabanaLabs", "HLS-Gaudi2-PT")]
    runs = report.benchmarks[0].runs
    assert [r.status for r in runs] == ["success"] * 5 and all(f["converged"] for f in facts)
    assert [r.duration_s for r in runs] == pytest.approx([f["time_s"] for f in facts], abs=1e-9)
    assert [r.best for r in runs] == [f["best"] for f in facts]
    assert Counter(f.code for f in report.findings) == {"SB-MLP-003": 5}  # precision is free: MLPerf states none
    assert report.compliant() and not report.compliant(werror=True)


def test_smc_converges_with_node_energy_over_the_timed_run_only(imported: Imported) -> None:
    outcome = imported.system("1xSMC-H100-SXM-80GB")
    runs = outcome.report.benchmarks[0].runs
    sources = results_of(SMC, "1xSMC-H100-SXM-80GB")
    assert [r.status for r in runs] == ["success"] * 5
    for run, source in zip(runs, sources, strict=True):
        facts = run_facts(source)
        assert facts["converged"] and run.duration_s == pytest.approx(facts["time_s"], abs=1e-9)
        node = CORPUS / SMC / SMC_RESULTS / "power" / source.stem / "node_1.txt"
        expected = node_energy_j(node, facts["start_ms"], facts["start_ms"] + facts["time_s"] * 1000)
        assert run.power is not None and run.power.scope == "node" and run.power.device_scopes == ("platform",)
        assert run.power.energy_j == pytest.approx(expected, rel=1e-12)
        assert 6000 < run.power.energy_j / run.duration_s < 7500  # an 8x H100 node under load, in W


def test_smc_power_findings_name_the_rules_they_go_beyond(imported: Imported) -> None:
    report = imported.system("1xSMC-H100-SXM-80GB").report
    assert Counter(f.code for f in report.findings) == {"SB-MLP-010": 5, "SB-MLP-008": 14}
    assert report.compliant()  # MLPerf's tools accept these logs; specbench's stricter rules only warn
    power = [f.message for f in report.findings if f.code == "SB-MLP-008"]
    assert all("(stricter than MLPerf: its power rule '" in m and "do not check" in m for m in power)
    rates = [m for m in power if m.startswith("expected at least 1 Hz for mlperf:node_1")]
    assert len(rates) == 5 and all("'Report 1 Measurement per Second'" in m for m in rates)
    naming = [f.message for f in report.findings if f.code == "SB-MLP-010"]
    assert all(
        "expected node_0.txt (MLPerf's power checker numbers them from 0), found node_1.txt; MLPerf's power checker "
        "counts nodes_1_to_1.png as node logs too and so accepts this folder" in m
        for m in naming
    )
    late = {
        f.location.file.split("/")[1]
        for f in report.findings
        if f.code == "SB-MLP-008" and " sample of mlperf:node_1 within 1 s of run_" in f.message
    }
    assert late == {"run_1", "run_2", "run_3", "run_5"}  # run_4's readings lie 0.13 s and 0.02 s from the edges
    gap = next(f for f in report.findings if "gaps of at most 2 s" in f.message and "/run_1/" in f.location.file)
    assert gap.location.line == 345 and "11.032 s" in gap.message


def test_tinycorp_result_0_fails_naming_its_best_accuracy(imported: Imported) -> None:
    report = imported.system("tinybox_green").report
    runs = report.benchmarks[0].runs
    facts = run_facts(CORPUS / "v4.0/tinycorp/results/tinybox_green/resnet/result_0.txt")
    assert facts["time_s"] is None and facts["best"] == 0.75858
    assert [r.status for r in runs] == ["failed", "success", "success", "success", "success"]
    missed = [f for f in report.findings if f.code == "SB-LOG-009"]
    assert len(missed) == 1 and missed[0].location.file == "mlperf-resnet50/run_1/log.txt"
    assert "found best 0.75858 at epoch 36 (line 130) and no run_stop" in missed[0].message
    assert runs[0].reason is not None and "best 0.75858" in runs[0].reason
    counts = Counter(f.code for f in report.findings)
    assert counts == {"SB-MLP-001": 2, "SB-MLP-002": 5, "SB-LOG-009": 1}  # LARS: no model_bn_span asked
    no_stop, target = [f.message for f in report.findings if f.code == "SB-MLP-001"]
    assert no_stop.startswith("run_stop: expected exactly one line, found 0 (MLPerf training_4.0.0/common.yaml)")
    assert target.startswith("eval_accuracy: expected at least one line with a number >= 0.759 and < 1.0, found [")
    assert "(MLPerf training_4.0.0/closed_resnet.yaml); the run counts as failed" in target
    assert report.compliant()  # one failed run of five is tolerated


def scaling_factor(org: str, system: str) -> float:
    return float(
        json.loads((CORPUS / org / "results" / system / "resnet" / "scaling.json").read_text())["scaling_factor"]
    )


def test_scores_follow_the_logs(imported: Imported) -> None:
    for org, system, rank in (
        ("v3.1/Intel-HabanaLabs", "HLS-Gaudi2-PT", 2),
        (SMC, "1xSMC-H100-SXM-80GB", 1),
        ("v4.0/tinycorp", "tinybox_green", 3),
    ):
        outcome = imported.system(system)
        (entry,) = outcome.entries
        facts = [run_facts(p) for p in results_of(org, system)]
        times = [f["time_s"] if f["converged"] else math.inf for f in facts]
        factor = scaling_factor(org, system) if system != "tinybox_green" else None  # tinycorp has no scaling.json
        assert entry.value("time_s_unscaled" if factor else "time_s") == pytest.approx(olympic(times), rel=1e-12)
        assert entry.value("time_s") == pytest.approx(olympic(times) * (factor or 1.0), rel=1e-12)
        assert entry.value("mlperf_scaling_factor") == factor
        used = sorted(range(5), key=lambda i: times[i])[1:-1]
        valid = [
            FLOPS_PER_IMAGE * facts[i]["epochs"] * TRAIN_IMAGES / times[i] * min(1.0, facts[i]["best"] / TARGET) ** 5
            for i in used
        ]
        assert entry.value("valid_flops_per_s") == pytest.approx(math.fsum(valid) / 3, rel=1e-12)
        assert (entry.compliant, entry.rank) == (True, rank)


def test_smc_energy_to_train_and_valid_flops_per_watt(imported: Imported) -> None:
    (entry,) = imported.system("1xSMC-H100-SXM-80GB").entries
    runs = {r.run: r for r in entry.runs}
    used = entry.aggregate.used
    assert entry.power_measured and len(used) == 3
    assert entry.value("energy_j") == pytest.approx(math.fsum(runs[r].energy_j for r in used) / 3, rel=1e-12)  # type: ignore[misc]
    per_w = [runs[r].valid_flops_per_s / (runs[r].energy_j / runs[r].time_s) for r in used]  # type: ignore[operator]
    assert entry.value("valid_flops_per_w") == pytest.approx(math.fsum(per_w) / 3, rel=1e-12)
    assert 1e11 < entry.value("valid_flops_per_w") < 1e12  # type: ignore[operator]


def test_validate_and_score_on_the_output_agree_with_the_import(imported: Imported) -> None:
    reports = validate_many(discover(imported.out))
    by_root = {Path(r.root).resolve(): r for r in reports}
    for system in imported.outcome.systems:
        again = by_root[system.imported.output.resolve()]
        assert [f.to_dict() for f in again.findings] == [f.to_dict() for f in system.report.findings]
    board = build(reports)
    assert [len(g.entries) for g in board.groups] == [3]
    assert board.groups[0].key.scope == "node"


def test_result_json_carries_what_the_log_shows(imported: Imported) -> None:
    root = imported.system("tinybox_green").imported.output / "mlperf-resnet50"
    failed = json.loads((root / "run_1" / "result.json").read_text())
    assert failed["status"] == "failed" and failed["duration_s"] is None and failed["epochs"] == 37
    assert failed["power"] == {**failed["power"], "measured": False}
    ok = json.loads((root / "run_2" / "result.json").read_text())
    assert ok["samples_processed"] == 35 * TRAIN_IMAGES and ok["devices"] == 6
    seed = next(
        e["value"]
        for e in events(CORPUS / "v4.0/tinycorp/results/tinybox_green/resnet/result_1.txt")
        if e["key"] == "seed"
    )
    assert ok["quality"]["curve"][0]["epoch"] == 3 and ok["seed"] == seed


def test_import_records_match_their_json_schema(imported: Imported) -> None:
    schema = ImportRecord.model_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    for system in imported.outcome.systems:
        record = json.loads((system.imported.output / "import.json").read_text())
        jsonschema.validate(record, schema)
        assert record["format"] == "specbench.mlperf-import" and record["format_version"] == 1
