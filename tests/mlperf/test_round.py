"""A whole MLPerf round (v4.0 ResNet, 33 systems, 165 results) imported: what specbench says is what MLPerf says.

Expected numbers are computed here from the published files alone (run_start/run_stop,
eval_accuracy, scaling.json, power_reading), and verdicts are compared with MLPerf's own
compliance checker run on the same files.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections import Counter
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from mlperf_support import CORPUS, read_events

from specbench.mlperf import ImportOutcome, SystemOutcome, import_results

ROUND = CORPUS.parent / "mlperf-v4.0-resnet-round"
TARGET = 0.759
pytestmark = pytest.mark.skipif(not ROUND.is_dir(), reason=f"no v4.0 round at {ROUND}")


@pytest.fixture(scope="module")
def round_import(tmp_path_factory: pytest.TempPathFactory) -> ImportOutcome:
    return import_results(ROUND, tmp_path_factory.mktemp("round"), jobs=1)


def system(outcome: ImportOutcome, label: str) -> SystemOutcome:
    (found,) = [s for s in outcome.systems if s.imported.label == label]
    return found


def natural(path: Path) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path.name)]


def published(org: str, name: str) -> tuple[float | None, int]:
    """MLPerf's time to train of one system from its files: olympic mean of the converged runs x scaling.json."""
    folder = ROUND / org / "results" / name / "resnet"
    times = []
    for path in sorted(folder.glob("result_*.txt"), key=natural):
        events = read_events(path)
        start = [e["time_ms"] for e in events if e["key"] == "run_start"]
        stop = [e for e in events if e["key"] == "run_stop"]
        best = max((e["value"] for e in events if e["key"] == "eval_accuracy"), default=0.0)
        ok = stop and stop[0]["metadata"].get("status") == "success" and best >= TARGET
        times.append((stop[0]["time_ms"] - start[0]) / 1000 if ok else math.inf)
    if sum(math.isinf(t) for t in times) > 1:
        return None, len(times)
    used = sorted(times)[1:-1]
    scaling = folder / "scaling.json"
    factor = json.loads(scaling.read_text())["scaling_factor"] if scaling.is_file() else 1.0
    return math.fsum(used) / len(used) * factor, len(times)


def test_times_to_train_are_mlperfs_published_ones(round_import: ImportOutcome) -> None:
    scored = 0
    for outcome in round_import.systems:
        source = outcome.imported.source
        expected, runs = published(source.org.rel, source.name)
        (entry,) = outcome.entries
        assert runs == 5 and expected is not None
        assert entry.value("time_s") == pytest.approx(expected, rel=1e-12), outcome.imported.label
        raw, factor = entry.value("time_s_unscaled"), entry.value("mlperf_scaling_factor")
        assert (raw is None) == (factor is None)
        if factor is not None:
            assert raw * factor == pytest.approx(expected, rel=1e-12) and 1.002 < factor < 1.005  # type: ignore[operator]
        scored += entry.value("time_s") is not None
    assert scored == len(round_import.systems) == 33
    assert sum(o.entries[0].value("mlperf_scaling_factor") is not None for o in round_import.systems) == 25


@pytest.mark.slow
def test_every_run_is_judged_as_mlperfs_compliance_checker_judges_it(
    round_import: ImportOutcome, caplog: pytest.LogCaptureFixture
) -> None:
    """165 results: a run counts as successful exactly when MLPerf's checker (ruleset 4.0.0) passes its log."""
    mlp_compliance = pytest.importorskip("mlperf_logging.compliance_checker.mlp_compliance")
    disagree = []
    with caplog.at_level(logging.CRITICAL):
        for outcome in round_import.systems:
            record = json.loads((outcome.imported.output / "import.json").read_text())
            bench = record["benchmarks"]["mlperf-resnet50"]
            org = ROUND / outcome.imported.source.org.rel
            for run in outcome.report.benchmarks[0].runs:
                log = org / bench["runs"][run.name]["result_file"]["path"]
                checker = mlp_compliance.make_checker("training", "4.0.0", True, False)
                valid, *_ = mlp_compliance.main(str(log), "training_4.0.0/common.yaml", checker)
                if valid != (run.status == "success"):
                    disagree.append(f"{outcome.imported.label} {run.name}: MLPerf {valid}, specbench {run.status}")
    assert disagree == []
    failed = [r for o in round_import.systems for r in o.report.benchmarks[0].runs if r.status != "success"]
    assert len(failed) == 5


def test_systems_mlperf_accepts_are_compliant_but_where_specbench_is_stricter_on_the_score(
    round_import: ImportOutcome,
) -> None:
    rejected = {s.imported.label: s.report for s in round_import.systems if not s.report.compliant()}
    assert list(rejected) == ["Dell/XE9640x4H100-SXM-80GB", "smc-dc-power/8xSMC-H100-SXM-80GB"]
    copies = rejected["smc-dc-power/8xSMC-H100-SXM-80GB"].errors  # two node logs identical in every run
    assert {f.code for f in copies} == {"SB-PRV-002"} and len(copies) == 5
    errors = rejected["Dell/XE9640x4H100-SXM-80GB"].errors
    assert Counter(f.code for f in errors) == {"SB-MLP-013": 6}  # 5 logs and submission.yaml: eval_samples 49999
    assert all("found 49999 (stricter than MLPerf: training_4.0.0/common.yaml asks only" in f.message for f in errors)
    for outcome in round_import.systems:
        for finding in outcome.report.warnings:
            if finding.code.startswith("SB-MLP-") and finding.code >= "SB-MLP-007":
                assert "MLPerf" in finding.message, finding


def test_tinybox_red_reached_the_target_at_extra_evaluations(round_import: ImportOutcome) -> None:
    outcome = system(round_import, "tinycorp/tinybox_red")
    runs = outcome.report.benchmarks[0].runs
    assert [r.status for r in runs] == ["success"] * 5 and outcome.report.compliant()
    extra = {f.location.file.split("/")[1]: f.message for f in outcome.report.findings if f.code == "SB-MLP-007"}
    assert sorted(extra) == ["run_2", "run_3", "run_4", "run_5"]
    assert "found: reached the target at an extra evaluation, epoch 34 (0.75932)" in extra["run_4"]
    assert "failed to reach" not in " ".join(outcome.entries[0].unranked + outcome.entries[0].notes)
    assert outcome.entries[0].rank is not None


def test_smc_8_nodes_gets_its_energy_with_readings_in_time_order(round_import: ImportOutcome) -> None:
    outcome = system(round_import, "smc-dc-power/8xSMC-H100-SXM-80GB")
    runs = outcome.report.benchmarks[0].runs
    assert all(r.power is not None and r.power.energy_j is not None for r in runs)
    power = ROUND / "smc-dc-power/results/8xSMC-H100-SXM-80GB/resnet/power/result_4960-240510001147906047118_1"
    log = read_events(ROUND / "smc-dc-power/results/8xSMC-H100-SXM-80GB/resnet/result_4960-240510001147906047118_1.txt")
    start = next(e["time_ms"] for e in log if e["key"] == "run_start") / 1000
    stop = next(e["time_ms"] for e in log if e["key"] == "run_stop") / 1000
    energy = 0.0
    for node in sorted(power.glob("node_*.txt")):
        readings = sorted((e["time_ms"] / 1000, e["value"]) for e in read_events(node) if e["key"] == "power_reading")
        inside = [(t, p) for t, p in readings if start - 0.002 <= t <= stop + 0.002]
        energy += math.fsum(0.5 * (p0 + p1) * (t1 - t0) for (t0, p0), (t1, p1) in pairwise(inside))
    assert runs[0].power.energy_j == pytest.approx(energy, rel=1e-12)  # type: ignore[union-attr]
    assert round(energy, 1) == 6962496.8
    backs = [f.message for f in outcome.report.findings if f.code == "SB-MLP-009"]
    assert len(backs) == 8
    assert any("node_6.txt:100 " in m and "18.466 s after run_stop, outside the timed run" in m for m in backs)
    assert any("node_7.txt:65 " in m and "2 ms before that of line 64" in m for m in backs)
    identical = [f for f in outcome.report.findings if f.code == "SB-MLP-011"]
    assert len(identical) == 5
    copies = [f for f in outcome.report.findings if f.code == "SB-PRV-002"]  # the same copies, as evidence
    assert len(copies) == 5 and not outcome.report.compliant()


def test_frameworks_without_a_version_are_told_alike(round_import: ImportOutcome) -> None:
    vague = {s.imported.label for s in round_import.systems if "SB-MLP-012" in s.report.codes()}
    assert vague == {
        "GigaComputing/G593-SD1_mxnet",
        "Quanta_Cloud_Technology/D54U-3U",
        "Quanta_Cloud_Technology/D74H-7U",
    }
    for label in vague:
        assert system(round_import, label).report.compliant()


def test_one_node_smc_logs_at_half_a_hertz_are_accepted_with_warnings(round_import: ImportOutcome) -> None:
    for label in ("smc-ac-power/1xSMC-H100-SXM-80GB", "smc-dc-power/1xSMC-H100-SXM-80GB"):
        report = system(round_import, label).report
        assert report.compliant() and Counter(f.code for f in report.findings) == {"SB-MLP-008": 14, "SB-MLP-010": 5}
