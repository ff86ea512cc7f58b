"""`specbench execute mlperf-resnet50` writes logs that MLPerf's own compliance checker accepts (ruleset 4.0.0).

The checker is mlperf_logging's, run as the package checker runs it (`mlp_compliance.main` with the
round's common.yaml, which enqueues closed_common, closed_resnet and the SGD or LARS rules). A log
at the smoke scale can miss only what that scale cannot meet, listed in SMOKE_SCALE.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from mlperf_logging.compliance_checker import mlp_compliance
from mlperf_support import read_events

from specbench.cli import main
from specbench.validator import validate_submission
from specbench.workloads.mlperf_resnet50 import optim as mlperf_optim

pytestmark = pytest.mark.needs("torch", "torchvision", "mlperf_logging")

CORPUS_LOG = (
    Path(__file__).resolve().parents[3]
    / "shared/corpus/mlperf-v4.0-resnet-round/NVIDIA/results/eos_n8_ngc24.04_mxnet/resnet/result_0.txt"
)
SMOKE_SCALE = {
    "Failed checks for eval_accuracy : v['value'] >= 0.7590 and v['value'] < 1.0": (
        "the smoke profile's generated set is learned to an accuracy of 1.0, which closed_resnet.yaml excludes"
    ),
}
SGD_KEYS = (
    "sgd_opt_base_learning_rate",
    "sgd_opt_end_learning_rate",
    "sgd_opt_learning_rate_decay_poly_power",
    "sgd_opt_learning_rate_decay_steps",
    "sgd_opt_weight_decay",
    "sgd_opt_momentum",
    "model_bn_span",
    "opt_learning_rate_warmup_epochs",
)
LARS_KEYS = (
    "lars_opt_base_learning_rate",
    "lars_opt_end_learning_rate",
    "lars_opt_learning_rate_decay_poly_power",
    "lars_opt_learning_rate_decay_steps",
    "lars_epsilon",
    "lars_opt_learning_rate_warmup_epochs",
    "lars_opt_momentum",
    "lars_opt_weight_decay",
)


def mlperf_check(log: Path, caplog: pytest.LogCaptureFixture) -> tuple[bool, list[str], list[str]]:
    """(valid, every message, the rule files run) of MLPerf's compliance checker on one log."""
    checker = mlp_compliance.make_checker("training", "4.0.0", False, False)
    with caplog.at_level(logging.INFO):
        caplog.clear()
        valid, *_ = mlp_compliance.main(str(log), "training_4.0.0/common.yaml", checker)
    files = [r.args[0] for r in caplog.records if r.msg == " Compliance checks: %s"]
    messages = [*checker.warnings.values(), *checker.overwritable.values(), *checker.not_overwritable]
    return valid, messages, files


def execute(out: Path, *sets: str, runs: int | None = None) -> list[Path]:
    args = ["execute", "mlperf-resnet50", "--profile", "smoke", "--power", "none", "--device", "cpu"]
    args += ["--out", str(out), *(["--runs", str(runs)] if runs else [])]
    for item in sets:
        args += ["--set", item]
    assert main(args) == 0
    return sorted(out.glob("mlperf-resnet50*/run_*/log.txt"))


@pytest.fixture
def fast_training(monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness, executor, optimizer and schedule as they are, with the training step and evaluation stubbed."""
    import specbench.workloads.mlperf_resnet50.executor as executor

    monkeypatch.setattr(executor, "_step", lambda *args, **kwargs: None)
    monkeypatch.setattr(executor, "_evaluate", lambda *args, **kwargs: 0.95)


@pytest.mark.slow
def test_a_fresh_smoke_run_passes_mlperfs_checker(
    mlperf_resnet50_smoke: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Real training on the smoke set (one run, shared with tests/test_execute.py through tests/conftest.py); only
    the failures the smoke scale cannot avoid may appear."""
    (log,) = sorted(mlperf_resnet50_smoke.glob("mlperf-resnet50*/run_*/log.txt"))
    valid, messages, files = mlperf_check(log, caplog)
    assert files == [
        "training_4.0.0/common.yaml",
        "training_4.0.0/closed_common.yaml",
        "training_4.0.0/closed_resnet.yaml",
        "training_3.1.0/closed_resnet_lars.yaml",
    ]
    assert set(messages) <= set(SMOKE_SCALE), messages
    assert valid == (not messages)
    report = validate_submission(mlperf_resnet50_smoke)
    assert [f.code for f in report.findings] == ["SB-RUN-001"]  # one run of the smoke profile's five


@pytest.mark.parametrize(("opt_name", "keys"), [("lars", LARS_KEYS), ("sgd", SGD_KEYS)])
def test_every_key_of_the_sgd_and_lars_rules_is_logged(
    opt_name: str, keys: tuple[str, ...], fast_training: None, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    logs = execute(tmp_path / "acme" / "box1", f"opt_name={opt_name}")
    assert len(logs) == 5  # the smoke profile's five runs, as MLPerf's package checker counts them
    log = logs[0]
    valid, messages, files = mlperf_check(log, caplog)
    assert (valid, messages) == (True, [])
    assert files[-1] == f"training_3.1.0/closed_resnet_{opt_name}.yaml"
    events = read_events(log)
    logged = {e["key"]: e["value"] for e in events}
    assert logged["submission_benchmark"] == "resnet" and logged["specbench_spec_id"] == "mlperf-resnet50"
    assert logged["opt_name"] == opt_name and "optimizer" not in logged
    assert set(keys) <= set(logged)
    other = LARS_KEYS if opt_name == "sgd" else SGD_KEYS
    assert not {k for k in other if k != "model_bn_span"} & set(logged)  # the other optimizer's keys are left out
    assert main(["validate", str(tmp_path / "acme" / "box1")]) == 0


def test_event_types_are_those_mllog_writes(fast_training: None, tmp_path: Path) -> None:
    """Each key common to our log and a real NVIDIA log carries the same event_type (both written by mllog)."""
    if not CORPUS_LOG.is_file():
        pytest.skip(f"no corpus log at {CORPUS_LOG}")
    log = execute(tmp_path / "acme" / "box1", runs=1)[0]
    theirs: dict[str, set[str]] = {}
    for event in read_events(CORPUS_LOG):
        theirs.setdefault(event["key"], set()).add(event["event_type"])
    ours = {e["key"]: e["event_type"] for e in read_events(log)}
    shared = set(ours) & set(theirs)
    assert {"run_start", "run_stop", "init_start", "init_stop", "eval_accuracy", "opt_name", "seed"} <= shared
    assert {key: ours[key] for key in shared} == {key: next(iter(theirs[key])) for key in shared}


def test_sgd_with_a_batch_norm_span_it_cannot_split_is_refused(tmp_path: Path, capsys: Any) -> None:
    args = ["execute", "mlperf-resnet50", "--profile", "smoke", "--power", "none", "--out", str(tmp_path / "a" / "b")]
    assert main([*args, "--set", "opt_name=sgd", "--set", "model_bn_span=12"]) == 2
    assert "model_bn_span 12 must divide the per-process batch of 32 images" in capsys.readouterr().err
    assert main([*args, "--set", "lars_opt_momentum=0.8", "--set", "opt_name=sgd"]) == 2
    assert "lars_opt_momentum applies only when opt_name=lars" in capsys.readouterr().err
    assert not (tmp_path / "a").exists()


def test_schedule_warms_up_linearly_then_decays_to_the_end_rate() -> None:
    schedule = mlperf_optim.Schedule(base=2.0, end=0.0001, power=2, warmup_steps=4, decay_steps=10)
    assert [schedule.rate(s) for s in range(4)] == [0.5, 1.0, 1.5, 2.0]
    assert schedule.rate(4) == 2.0 and schedule.rate(9) == pytest.approx((2.0 - 0.0001) * 0.25 + 0.0001)
    assert schedule.rate(14) == schedule.rate(100) == pytest.approx(0.0001)
    assert schedule.total_steps == 14


def test_lars_scales_each_weight_step_by_its_trust_ratio() -> None:
    torch = pytest.importorskip("torch")
    weight = torch.nn.Parameter(torch.tensor([[3.0, 4.0]]))  # ||w|| = 5
    bias = torch.nn.Parameter(torch.tensor([1.0]))
    weight.grad, bias.grad = torch.tensor([[0.6, 0.8]]), torch.tensor([0.5])  # ||g|| = 1
    groups = [{"params": [weight], "weight_decay": 0.1}, {"params": [bias], "weight_decay": 0.0}]
    mlperf_optim.Lars(groups, lr=2.0, momentum=0.9).step()
    trust = 0.001 * 5 / (1 + 0.1 * 5)
    expected = torch.tensor([[3.0, 4.0]]) - 2.0 * trust * (
        torch.tensor([[0.6, 0.8]]) + 0.1 * torch.tensor([[3.0, 4.0]])
    )
    assert torch.allclose(weight.detach(), expected) and torch.allclose(bias.detach(), torch.tensor([0.0]))


def test_the_logged_hyperparameters_are_declared_in_submission_yaml(fast_training: None, tmp_path: Path) -> None:
    out = tmp_path / "acme" / "box1"
    log = execute(out, runs=1)[0]
    from ruamel.yaml import YAML

    declared = YAML(typ="safe").load((out / "mlperf-resnet50" / "submission.yaml").read_text())["hyperparameters"]
    logged = {e["key"]: e["value"] for e in read_events(log)}
    assert {k: logged[k] for k in declared} == declared
    assert json.loads((log.parent / "result.json").read_text())["hyperparameters"] == declared
