"""Scoring formulas against hand-computed values, and the olympic mean on real MLPerf logs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from specbench.accounting.accounts import Evidence, Problem, Quality
from specbench.scoring.aggregate import aggregate, olympic_mean
from specbench.scoring.metrics import RunScore, quality_ratio, score_run, valid_flops
from specbench.validator import parse_log

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "mlperf-training"


def test_valid_flops_hpcai500_formula() -> None:
    # 0.70 / 0.763 = 0.9174311926605504; to the 5th power 0.6499313862983452
    assert quality_ratio(0.70, 0.763, "higher") == pytest.approx(0.9174311926605504, rel=1e-15)
    assert valid_flops(1e15, 0.70, 0.763, "higher", 5) == pytest.approx(0.6499313862983452e15, rel=1e-12)
    assert valid_flops(1e15, 0.80, 0.763, "higher", 5) == 1e15
    assert valid_flops(1e15, 0.80, 0.763, "higher", 5, cap=False) == pytest.approx(1e15 * (0.80 / 0.763) ** 5)
    # lower is better: target 2.5 nats, achieved 3.0 -> 2.5/3.0 = 0.8333333333333334
    assert valid_flops(2e12, 3.0, 2.5, "lower", 1) == pytest.approx(2e12 * 0.8333333333333334)
    assert quality_ratio(0.0, 0.763, "higher") == 0.0


def test_score_run_fixed_problem_and_power() -> None:
    problem = _problem("fixed_problem", quality=Quality(0.763, "higher", 5, True), train_samples=100, epochs=90)
    evidence = Evidence(duration_s=1000.0, samples=5_000, credited=0.70, energy_j=500_000.0, devices=4)
    score = score_run(run="run_1", status="success", reason=None, problem=problem, evidence=evidence,
                      peak_flops_per_device=1e12)  # fmt: skip
    assert score.model_flops == 2e9 * 9000  # the FLOPs of the 90-epoch problem, not of the 5,000 samples seen
    assert score.flops_per_s == pytest.approx(1.8e10)
    assert score.valid_flops_per_s == pytest.approx(1.8e10 * 0.6499313862983452)
    assert score.mean_power_w == 500.0
    assert score.valid_flops_per_w == pytest.approx(1.8e10 * 0.6499313862983452 / 500.0)
    assert score.tflops_per_device == pytest.approx(1.8e10 / 4 / 1e12)
    assert score.mfu == pytest.approx(1.8e10 / 4 / 1e12)
    assert score.energy_per_sample_j == 100.0


def test_unmeasured_power_stays_none() -> None:
    evidence = Evidence(duration_s=10.0, samples=100, credited=None, energy_j=None, devices=1)
    score = score_run(run="r", status="success", reason=None, problem=_problem("processed", 1.0), evidence=evidence)
    assert score.energy_j is None and score.mean_power_w is None and score.valid_flops_per_w is None
    assert score.valid_flops_per_s == score.flops_per_s == 10.0


def _score(run: str, time_s: float, status: str = "success") -> RunScore:
    evidence = Evidence(duration_s=time_s, samples=10, credited=None, energy_j=time_s * 100, devices=1)
    return score_run(run=run, status=status, reason=None, problem=_problem("processed", 1.0), evidence=evidence)


def _problem(
    accounting: str,
    per_sample: float = 2e9,
    quality: Quality | None = None,
    train_samples: int = 100,
    epochs: float | None = None,
) -> Problem:
    return Problem(kind="time_to_quality" if quality else "throughput", flops_per_sample=per_sample,
                   accounting=accounting, train_samples=train_samples, budget_epochs=epochs, budget_steps=None,
                   samples_per_step=None, timed_steps=None, quality=quality)  # fmt: skip


def test_olympic_mean_drops_fastest_and_slowest() -> None:
    assert olympic_mean([5.0, 1.0, 3.0, 4.0, 2.0]) == 3.0
    with pytest.raises(ValueError):
        olympic_mean([1.0, 2.0])
    runs = [_score("a", 10.0), _score("b", 12.0), _score("c", 11.0), _score("d", 50.0, "failed"), _score("e", 13.0)]
    agg = aggregate(runs, "olympic", "time_to_quality", max_failed=1, required=5)
    assert agg.used == ["c", "b", "e"] and agg.dropped == ["a", "d"]
    assert agg.values["time_s"] == 12.0
    assert agg.spread == (10.0, 11.5, 13.0)
    assert agg.problem is None
    too_many = aggregate(
        [*runs[:4], _score("e", 13.0, "failed")], "olympic", "time_to_quality", max_failed=1, required=5
    )
    assert too_many.problem == "2 runs failed (d: failed; e: failed), the spec allows 1"
    short = aggregate(runs[:2], "olympic", "time_to_quality", max_failed=1, required=5)
    assert short.problem == "2 completed runs, the spec requires 5"
    incomplete = aggregate([*runs[:4], _score("e", 13.0, "incomplete")], "mean", "time_to_quality", 1, 5)
    assert incomplete.problem == "4 completed runs, the spec requires 5"


def _raw_time_to_train_s(path: Path) -> float | None:
    """run_stop - run_start straight from the JSON of the log lines (independent of specbench's parser)."""
    start = stop = None
    for line in path.read_text(errors="replace").splitlines():
        if ":::MLLOG " not in line:
            continue
        event = json.loads(line.split(":::MLLOG ", 1)[1])
        if event["key"] == "run_start":
            start = event["time_ms"]
        elif event["key"] == "run_stop":
            stop = event["time_ms"]
    return None if start is None or stop is None else (stop - start) / 1000.0


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is not beside this checkout")
def test_olympic_mean_of_real_mlperf_logs() -> None:
    folder = CORPUS / "v3.1" / "Intel-HabanaLabs" / "results" / "HLS-Gaudi2-PT" / "resnet"
    scores = []
    for path in sorted(folder.glob("result_*.txt")):
        parsed = parse_log(path.read_text())
        starts = [e for e in parsed.events if e.key == "run_start"]
        stops = [e for e in parsed.events if e.key == "run_stop"]
        duration = (stops[0].time_ms - starts[0].time_ms) / 1000.0
        assert duration == _raw_time_to_train_s(path)
        status = "success" if stops[0].metadata.get("status") == "success" else "failed"
        scores.append(_score(path.stem, duration, status))
    assert len(scores) == 5
    agg = aggregate(scores, "olympic", "time_to_quality", max_failed=1, required=5)
    times = sorted(s.time_s for s in scores if s.time_s is not None)
    assert agg.values["time_s"] == pytest.approx(math.fsum(times[1:-1]) / 3)
    assert agg.problem is None
