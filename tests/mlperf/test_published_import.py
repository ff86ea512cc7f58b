"""MLPerf's published figures in import.json, and SB-MLP-020, on the corpus' 8-node Dell system with power."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from specbench.mlperf import import_results

ROUNDS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "mlperf-rounds"
DELL = ROUNDS / "training-v4.1" / "Dell"


@pytest.fixture(scope="module")
def dell(tmp_path_factory: pytest.TempPathFactory) -> dict:
    if not DELL.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"corpus missing: {DELL}")
        pytest.skip(f"corpus missing: {DELL}")
    out = tmp_path_factory.mktemp("dell")
    outcome = import_results(DELL, out, spec="mlperf-llama2-70b-lora", jobs=1)
    (system,) = [s for s in outcome.systems if s.imported.source.name == "8xXE9680x8H100-SXM-80GB-POWER"]
    return {"system": system, "record": json.loads((system.imported.output / "import.json").read_text())}


def test_published_energy_is_the_summarizers_and_the_switch_is_shown_beside_it(dell: dict) -> None:
    published = dell["record"]["benchmarks"]["mlperf-llama2-70b-lora"]["published"]
    assert published["runs_counted"] == 10 and published["runs_required"] == 10
    assert published["energy_j"] == pytest.approx(16_384_267.9502019, rel=1e-12)
    assert published["energy_with_interconnect_j"] == pytest.approx(16_585_339.58242044, rel=1e-12)
    assert published["time_to_train_s"] == pytest.approx(published["olympic_mean_s"] * published["scaling_factor"])


def test_each_run_with_a_measured_switch_is_sb_mlp_020(dell: dict) -> None:
    findings = [f for f in dell["system"].report.findings if f.code == "SB-MLP-020"]
    assert len(findings) == 10 and all(f.severity == "warning" for f in findings)
    assert "MLPerf's result summarizer counts 0 J" in findings[0].message
    assert findings[0].location.file == "import.json"
    assert "power/result_" in findings[0].message and "/sw_0.txt with power_reading lines" in findings[0].message


def test_the_energy_is_labelled_with_its_boundary_nodes_sampling_and_meter(dell: dict) -> None:
    label = dell["record"]["benchmarks"]["mlperf-llama2-70b-lora"]["energy"]
    assert label["boundary"] == "node" and label["published_boundary"] == "node + interconnect"
    assert label["nodes_measured"] == 8 and label["nodes"] == 8
    assert label["interconnect"].startswith("measured") and label["conversion_eff"] == [0.96]
    assert 0.5 < label["min_sampling_hz"] <= 1.1


def test_a_multi_node_system_without_switch_logs_is_sb_mlp_021(tmp_path: Path) -> None:
    if not DELL.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"corpus missing: {DELL}")
        pytest.skip(f"corpus missing: {DELL}")
    system = "8xXE9680x8H100-SXM-80GB-POWER"
    tree = tmp_path / "src" / "Dell"
    shutil.copytree(DELL / "systems", tree / "systems")
    shutil.copytree(DELL / "results" / system, tree / "results" / system, ignore=shutil.ignore_patterns("sw_*.txt"))
    outcome = import_results(tree, tmp_path / "out", spec="mlperf-llama2-70b-lora", jobs=1)
    (imported,) = outcome.systems
    findings = [f for f in imported.report.findings if f.code == "SB-MLP-021"]
    assert len(findings) == 10 and all(f.severity == "warning" for f in findings)
    assert "8-node system measured or estimated" in findings[0].message
    assert not [f for f in imported.report.findings if f.code == "SB-MLP-020"]
    record = json.loads((imported.imported.output / "import.json").read_text())
    label = record["benchmarks"]["mlperf-llama2-70b-lora"]["energy"]
    assert label["interconnect"] == "none" and label["published_boundary"] == "node"
