"""HPC AI500's Valid FLOPS end to end on the CPU: a run below its target is scored with its penalty.

A CPU run on a ranked profile is not ranked (no device facts bound its rate or power: SB-PHY-004, and no
best-known result: SB-BND-006); its numbers are computed all the same, and they are what this checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from specbench.cli import main
from specbench.scoring.leaderboard import build
from specbench.validator import validate_submission

pytestmark = pytest.mark.needs("torch", "torchvision", "mlperf_logging")

SPEC = """\
format_version: 1
extends: resnet50
id: resnet50-cpu-penalty
version: "0.1.0"
title: resnet50 2.0.0 with a ranked CPU profile whose target a 1-epoch run cannot reach
profiles:
  cpu:
    description: the smoke scale cut to 64 training images (2 steps), ranked, one epoch, a target of 0.99
    ranked: true
    overrides:
      workload:
        dataset: {name: specbench-shapes-10, train_samples: 64, eval_samples: 256, sample_shape: [3, 32, 32],
                  num_classes: 10, synthetic: true}
        flops_per_sample: 495771648
      quality: {target: 0.99}
      budget: {epochs: 1}
      hyperparameters: {global_batch_size: 32, base_learning_rate: 0.032, warmup_epochs: 0}
      measurement:
        power: {required: false, min_sampling_hz: 1, min_samples: 1, scope: accelerator}
        runs: {count: 1, aggregation: mean, max_failed: 0}
"""


def test_cpu_run_below_its_target_is_scored_with_its_penalty(tmp_path: Path) -> None:
    spec = tmp_path / "resnet50-cpu-penalty.yaml"
    spec.write_text(SPEC)
    out = tmp_path / "acme" / "cpu"
    argv = [
        "execute",
        str(spec),
        "--profile",
        "cpu",
        "--seed",
        "1",
        "--power",
        "none",
        "--device",
        "cpu",
        "--out",
        str(out),
    ]
    assert main(argv) == 0  # a completed budget is a success, whatever the quality
    report = validate_submission(out, spec=spec)
    # below the target: a warning (the penalty applies); a CPU on a ranked profile: an error, never ranked
    assert report.codes() == {"SB-LOG-013", "SB-PHY-004", "SB-BND-006"}, [f.to_dict() for f in report.findings]
    assert [f.code for f in report.errors] == ["SB-PHY-004"]
    (group,) = build([report]).groups
    (entry,) = group.entries
    achieved = entry.value("achieved")
    assert achieved is not None and achieved < 0.99
    assert entry.rank is None and any("SB-PHY-004" in reason for reason in entry.unranked), entry.unranked
    assert entry.value("penalty_factor") == pytest.approx((achieved / 0.99) ** 5)
    assert entry.value("valid_flops_per_s") == pytest.approx(entry.value("flops_per_s") * (achieved / 0.99) ** 5)
    (run,) = entry.runs
    assert run.flops_per_s == pytest.approx(495771648 * 64 / run.time_s)  # FLOPs processed over the run's time
    from specbench.scoring.render import columns, render_table
    from specbench.scoring.units import si_scale

    assert entry.aggregate.spread_metric == "valid_flops_per_s"
    headers = [c.header for c in columns(group)]
    assert "time (s)" in headers and "time to quality (s)" not in headers
    spread = next(c for c in columns(group) if c.key == "spread")
    scale = si_scale([entry.value("valid_flops_per_s")], "FLOP/s")  # the prefix that suits a CPU's rate
    assert spread.header == f"Valid FLOPS min / median / max ({scale.unit})"
    assert spread.text(entry) == " / ".join([scale.text(entry.value("valid_flops_per_s"))] * 3)
    assert spread.header in render_table(build([report]), "github")
