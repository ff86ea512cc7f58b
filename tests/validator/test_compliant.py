"""Compliant submissions give no finding at all, and the report carries what the scorer needs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from support.committed import committed_submissions
from validator_bases import MULTI, Bases

from specbench.validator import discover, render_json, validate_submission

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "submissions" / "compliant"
COMMITTED = [*discover(DATA), *committed_submissions()]


@pytest.mark.skipif(not COMMITTED, reason="no submission from a real run committed yet")
@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.relative_to(REPO).as_posix())
def test_committed_compliant_submission_has_no_findings(path: Path) -> None:
    """Real runs: tests/data/submissions/compliant/** and the example submissions/** of the repository."""
    report = validate_submission(path)
    assert [f"{f.code} {f.location} {f.message}" for f in report.findings] == []
    assert report.compliant(werror=True)


LARS = {
    "model_bn_span": 32,
    "lars_opt_base_learning_rate": 2.9,
    "lars_opt_learning_rate_decay_steps": 1000,
    "lars_opt_learning_rate_warmup_epochs": 2,
    "lars_opt_momentum": 0.9,
}
GENERATED = {
    "resnet50 smoke": {},
    "resnet50 official, 5 runs, one failed": {**MULTI, "failed_runs": (4,), "devices": 1},
    "resnet50 hardware level": {"level": "hardware"},
    "resnet50 free level": {"level": "free"},
    "mlperf-resnet50 smoke (LARS)": {"spec": "mlperf-resnet50", "extra": LARS},
    "extreme-weather smoke": {"spec": "extreme-weather"},
    "caraml-resnet50 smoke (throughput)": {"spec": "caraml-resnet50"},
    "caraml-resnet50 official (throughput, 3 runs)": {"spec": "caraml-resnet50", "profile": "official"},
    "llm-gpt smoke at the free level (a model variant)": {"spec": "llm-gpt", "level": "free"},
    "caraml-resnet50 sweep point folder": {"spec": "caraml-resnet50", "sweep_point": {"global_batch_size": 64}},
    "power not measured": {"power": False},
}


@pytest.mark.parametrize("options", GENERATED.values(), ids=GENERATED.keys())
def test_generated_compliant_submission_has_no_findings(
    options: dict[str, object], bases: Bases, tmp_path: Path
) -> None:
    root = bases.copy(tmp_path, **options)
    report = validate_submission(root)
    findings = [f"{f.code} {f.location} {f.message}" for f in report.findings]
    if "failed_runs" in options:
        assert [f.code for f in report.findings] == ["SB-LOG-009"], findings
        assert report.compliant() and not report.compliant(werror=True)
    else:
        assert findings == []
        assert report.exit_code(werror=True) == 0


def test_a_benchmark_folder_is_validated_with_its_system(smoke: Path) -> None:
    report = validate_submission(smoke / "resnet50")
    assert report.findings == [] and report.usable
    assert Path(report.root) == smoke
    assert [b.name for b in report.benchmarks] == ["resnet50"]
    assert report.system is not None and report.system.system == "box1"


def test_only_the_named_benchmark_is_read(smoke: Path) -> None:
    other = smoke / "other-bench"
    other.mkdir()
    (other / "junk.bin").write_bytes(b"\0" * 10)
    assert validate_submission(smoke / "resnet50").findings == []
    assert "SB-STR-002" in validate_submission(smoke).codes()


def test_report_carries_the_parsed_and_recomputed_run_data(multi: Path) -> None:
    report = validate_submission(multi)
    (bench,) = report.benchmarks
    assert bench.spec is not None and bench.spec.profile == "official" and bench.meta is not None
    assert [run.name for run in bench.runs] == [f"run_{n}" for n in range(1, 6)]
    for run in bench.runs:
        result = json.loads((multi / run.folder / "result.json").read_text())
        window = json.loads((multi / run.folder / "power.json").read_text())["windows"][0]
        assert run.status == "success" and run.reached is True
        assert run.seed == result["seed"]
        assert run.duration_s == pytest.approx(result["duration_s"], abs=1e-9)
        assert [e.value for e in run.evaluations] == [p["value"] for p in result["quality"]["curve"]]
        assert run.best == result["quality"]["best"]
        assert run.log is not None and run.log.first("run_start") is not None
        assert run.power is not None and run.power.method == "counter"
        assert run.power.energy_j == pytest.approx(window["energy_j_by_scope"]["accelerator"], rel=1e-12)
        assert run.power.energy_j == pytest.approx(result["power"]["energy_j"], rel=1e-12)
        assert run.power.mean_power_w == pytest.approx(result["power"]["mean_power_w"], rel=1e-9)
        by_device = {e.device: e for e in run.power.devices}
        for recorded in window["devices"]:
            mine = by_device[recorded["device"]]
            assert mine.energy_j == pytest.approx(recorded["energy_j"], rel=1e-12)
            assert mine.integrated_energy_j == pytest.approx(recorded["integrated_energy_j"], rel=1e-12)
            assert mine.samples == recorded["samples"]
        assert all(math.isclose(hz, 10.0, rel_tol=0.05) for hz in run.power.achieved_hz.values())


def test_json_report_is_complete(smoke: Path) -> None:
    data = json.loads(render_json([validate_submission(smoke)]))
    assert data["exit_code"] == 0 and data["format_version"] == 1
    (entry,) = data["submissions"]
    assert entry["compliant"] and entry["findings"] == []
    (run,) = entry["benchmarks"][0]["runs"]
    assert run["status"] == "success" and run["energy_j"] > 0
