"""Grouping, ranking and every output format of `specbench score`."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from types import ModuleType

import pytest

from specbench.cli import main
from specbench.scoring.leaderboard import build
from specbench.validator import discover, validate_many


def board_of(root: Path):  # type: ignore[no-untyped-def]
    return build(validate_many(discover(root)))


def test_groups_never_mix_profiles_and_rank_within(submissions: Path) -> None:
    board = board_of(submissions)
    titles = [g.key.title() for g in board.groups]
    assert titles == [
        "caraml-resnet50 1.1.0 · throughput · level system · profile official · power scope accelerator",
        "resnet50 1.0.0 · time_to_quality · level system · profile official · power scope accelerator",
        "resnet50 1.0.0 · time_to_quality · level system · profile smoke · power scope accelerator",
    ]
    throughput = board.groups[0]
    assert [(e.system, e.rank, e.rank_per_w) for e in throughput.entries] == [
        ("fast", 1, 1),
        ("slow", 2, 2),
        ("dark", None, None),
    ]
    dark = throughput.entries[2]
    assert not dark.compliant and dark.unranked[0].startswith("non-compliant: SB-PWR-001")
    fast, slow = throughput.entries[:2]
    assert fast.value("samples_per_s") > 1.9 * slow.value("samples_per_s")  # timed windows of 10 s against 20 s
    for entry in (fast, slow):
        for run in entry.runs:
            assert run.samples_per_s == pytest.approx(run.samples / run.time_s)
    smoke = board.groups[2].entries[0]
    assert smoke.rank is None and smoke.unranked == ["profile 'smoke' is never ranked"]
    official = board.groups[1].entries[0]
    assert official.rank == 1 and official.value("valid_flops_per_s") is not None


def test_valid_flops_of_a_run_follows_the_spec(submissions: Path) -> None:
    official = board_of(submissions).groups[1].entries[0]
    assert official.bench is not None and official.bench.spec is not None
    spec = official.bench.spec.spec
    for score, run in zip(official.runs, official.bench.runs, strict=True):
        assert score.time_s == run.duration_s
        problem_flops = spec.workload.flops_per_sample * spec.workload.dataset.train_samples * spec.budget.epochs
        assert score.model_flops == pytest.approx(problem_flops)
        assert score.valid_flops_per_s == pytest.approx(problem_flops / run.duration_s)  # target reached: no penalty
        assert score.energy_j == pytest.approx(run.power.energy_j)


def test_output_formats(submissions: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", str(submissions)]) == 0
    table = capsys.readouterr().out
    assert "kimage/s" in table and "Valid FLOPS" in table and "PFLOP/s" in table and "energy" in table
    assert main(["score", str(submissions), "--format", "markdown"]) == 0
    assert capsys.readouterr().out.startswith("## caraml-resnet50 1.1.0")
    assert main(["score", str(submissions), "--format", "csv", "--out", str(tmp_path / "board.csv")]) == 0
    rows = list(csv.DictReader(io.StringIO((tmp_path / "board.csv").read_text())))
    assert [r["system"] for r in rows] == ["fast", "slow", "dark", "official", "box"]
    assert float(rows[0]["samples_per_s"]) > float(rows[1]["samples_per_s"])
    assert main(["score", str(submissions), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["format_version"] == 1 and len(data["groups"]) == 3
    assert data["groups"][0]["entries"][0]["aggregate"]["values"]["samples_per_s"] == float(rows[0]["samples_per_s"])


def test_no_submission_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", str(tmp_path)]) == 2
    assert "no submission folder" in capsys.readouterr().err


def test_model_variants_are_never_ranked_together(tmp_path: Path, maker: ModuleType) -> None:
    """llm-gpt 800M and 13B are different problems: one table each. The 800M ranks first; no best-known 13B
    rate is on record, so the 13B entry is unconfirmed and not ranked until reproduced (SB-BND-006)."""
    make = maker.make_submission
    for system, model, seconds in (("small", "800M", 20.0), ("large", "13B", 300.0)):  # 13B: below the H200s' peak
        make(tmp_path, spec="llm-gpt", profile="official", org="acme", system=system, extra={"model": model},
             throughput_s=seconds)  # fmt: skip
    board = board_of(tmp_path)
    assert [g.key.variant for g in board.groups] == ["13B", "800M"]
    assert all("· model " in g.key.title() for g in board.groups)
    assert [[(e.system, e.rank) for e in g.entries] for g in board.groups] == [[("large", None)], [("small", 1)]]
    large = board.groups[0].entries[0]
    assert large.compliant and any("SB-BND-006" in reason for reason in large.unranked), large.unranked


def test_mfu_comes_from_the_device_facts(submissions: Path) -> None:
    """The generated systems declare NVIDIA H200s: MFU = FLOP/s per device / its dense peak (bf16 where declared)."""
    from specbench.physics import lookup, peak_flops
    from specbench.validator.physics import declared_precision

    fast = board_of(submissions).groups[0].entries[0]
    assert fast.bench is not None
    peak = peak_flops(lookup("NVIDIA H200"), declared_precision(fast.bench.meta))  # type: ignore[arg-type]
    assert peak is not None
    for run in fast.runs:
        assert run.mfu == pytest.approx(run.tflops_per_device * 1e12 / peak)
