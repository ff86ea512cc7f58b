"""Our own MLLOG output against mlperf_logging's compliance checker, common rules only.

The checker's `common.yaml` enqueues the division's and the benchmark's rule files when it meets
submission_division and submission_benchmark; those name MLPerf's benchmarks, which specbench's
specs are not, so only the common file is run (`configured_checks` on it, the queue cleared).
Throughput runs (caraml-resnet50) evaluate no quality by design: the one common rule they break
is `eval_accuracy` AT_LEAST_ONE, and nothing else may appear.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mlperf_logging.compliance_checker import mlp_compliance, mlp_parser
from mlperf_support import read_events
from support.committed import SUBMISSIONS, committed_submissions

pytestmark = pytest.mark.needs("mlperf_logging")

REPO = Path(__file__).resolve().parents[2]
RULESET = "4.0.0"
"""The ruleset of the mlperf-resnet50 spec (MLPerf Training v4.0)."""
NO_EVALUATION = "Required AT_LEAST_ONE occurrence of 'eval_accuracy' but found 0"


def common_rules(log: Path, ruleset: str = RULESET) -> list[str]:
    """Every message of training_<ruleset>/common.yaml on one log (parse errors included)."""
    loglines, errors = mlp_parser.parse_file(str(log), ruleset=ruleset)
    checker = mlp_compliance.make_checker("training", ruleset, False, False)
    config = Path(mlp_compliance.__file__).parent / f"training_{ruleset}" / "common.yaml"
    try:
        checker.configured_checks(loglines, str(config))
    finally:
        mlp_compliance.enqueued_configs.clear()
    messages = [f"parse error: {error}" for _, error in errors]
    return [*messages, *checker.warnings.values(), *checker.overwritable.values(), *checker.not_overwritable]


def expected_messages(run_dir: Path) -> list[str]:
    kind = json.loads((run_dir / "result.json").read_text())["kind"]
    return [] if kind == "time_to_quality" else [NO_EVALUATION]


def committed_logs() -> list[Path]:
    return [log for submission in committed_submissions() for log in sorted(submission.rglob("log.txt"))]


def test_there_are_committed_logs_of_both_kinds() -> None:
    kinds = {json.loads((log.parent / "result.json").read_text())["kind"] for log in committed_logs()}
    assert kinds == {"time_to_quality", "throughput"}


@pytest.mark.parametrize("log", committed_logs(), ids=lambda p: p.relative_to(SUBMISSIONS).as_posix())
def test_committed_real_logs_pass_the_common_rules(log: Path) -> None:
    assert common_rules(log) == expected_messages(log.parent)


def test_the_check_fails_a_log_that_breaks_a_common_rule(tmp_path: Path) -> None:
    source = next(log for log in committed_logs() if not expected_messages(log.parent))
    broken = tmp_path / "log.txt"
    broken.write_text(
        "".join(line for line in source.read_text().splitlines(keepends=True) if '"run_stop"' not in line)
    )
    assert common_rules(broken) == ["Required EXACTLY_ONE occurrence of 'run_stop' but found 0"]


def test_fresh_logs_of_the_harness_pass_the_common_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness and the ResNet-50 executor as they are now, with the training step and evaluation stubbed for speed."""
    pytest.importorskip("torch")
    pytest.importorskip("torchvision")
    import specbench.workloads.resnet50.executor as resnet50
    from specbench.cli import main

    monkeypatch.setattr(resnet50, "_step", lambda *args, **kwargs: None)
    monkeypatch.setattr(resnet50, "_evaluate", lambda *args, **kwargs: 0.95)
    for spec in ("resnet50", "caraml-resnet50"):
        out = tmp_path / spec / "acme" / "box"
        assert main(["execute", spec, "--profile", "smoke", "--power", "none", "--out", str(out)]) == 0
        (log,) = sorted(out.rglob("log.txt"))
        assert common_rules(log) == expected_messages(log.parent), spec
        logged = {e["key"]: e["value"] for e in read_events(log)}
        assert logged["submission_benchmark"] == logged["specbench_spec_id"] == spec  # outside MLPerf's closed rules
