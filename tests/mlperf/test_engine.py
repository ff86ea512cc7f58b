"""The typed MLPerf engine gives MLPerf's checker's verdict: on every real result log, and kind by kind.

The oracle is mlperf-logging's own ComplianceChecker, run in-process on the same files.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, get_args

import pytest
from mlperf_logging.compliance_checker import mlp_compliance
from mlperf_real import build_log, event, real_outcome, render, silenced

from specbench.formats.mllog import parse_log
from specbench.formats.mlperf_rules import FORMAT, Check, MlperfRuleSet, Source, load_mlperf_rules
from specbench.mlperf.ruleport import port_file
from specbench.validator.mlperf_engine import check_mlperf_log, check_mlperf_text
from specbench.validator.mlperf_lines import mlperf_view

pytestmark = pytest.mark.needs("mlperf_logging")

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
ROUNDS = [
    ("mlperf-rounds/training-v4.0", "training", "4.0.0"),
    ("mlperf-rounds/training-v4.1", "training", "4.1.0"),
    ("mlperf-rounds/hpc-v2.0", "hpc", "2.0.0"),
    ("mlperf-v4.0-resnet-round", "training", "4.0.0"),
    ("mlperf-training/v3.1", "training", "3.1.0"),
]


def result_logs(folder: str) -> list[Path]:
    """Every result log of a round (`<org>/results/**/result_*.txt`), power logs left out."""
    root = CORPUS / folder
    if not root.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"the MLPerf corpus is missing at {root} (CI must provide ../shared/corpus)")
        pytest.skip(f"no MLPerf corpus at {root}")
    return sorted(p for p in root.glob("*/results/**/result_*.txt") if "power" not in p.relative_to(root).parts)


@pytest.mark.slow
@pytest.mark.parametrize(("folder", "usage", "ruleset"), ROUNDS, ids=[r[0].split("/")[-1] for r in ROUNDS])
def test_engine_agrees_with_mlperf_on_every_real_result_log(folder: str, usage: str, ruleset: str) -> None:
    """Same pass or fail as MLPerf's checker, through specbench's reader and through MLPerf's parser's view."""
    rules = load_mlperf_rules(usage, ruleset)
    logs = result_logs(folder)
    disagreements = []
    failed = 0
    with silenced():
        for path in logs:
            real = real_outcome(path, usage, ruleset)
            text = path.read_bytes().decode("latin-1")
            verdict = check_mlperf_log(parse_log(text), rules)
            via_view = check_mlperf_text(text, rules)
            mine = "stopped" if verdict.stopped else "pass" if verdict.passed else "fail"
            failed += real != "pass"
            if mine != real or via_view.passed != verdict.passed:
                disagreements.append(f"{path}: MLPerf {real}, engine {mine}, view {via_view.passed}")
    assert logs and disagreements == []
    assert failed < len(logs) / 10  # a round is mostly compliant: the rules are not vacuously failing


# One MLPerf-style rule file per typed kind, with a log that passes it and one that fails it -----------------------

KIND_CASES: list[tuple[str, str, list[tuple[str, Any, dict[str, Any]]], list[tuple[str, Any, dict[str, Any]]]]] = [
    ("value_eq", "CHECK: \" v['value'] == 0.9 \"", [("x", 0.9, {})], [("x", 0.91, {})]),
    ("value_ne", "CHECK: \" v['value'] != '' \"", [("x", 0, {})], [("x", "", {})]),
    ("value_in", "CHECK: \" v['value'] in ['sgd', 'lars'] \"", [("x", "lars", {})], [("x", "LARS", {})]),
    ("value_in", "CHECK: \" v['value'] in {'a', 'b'} \"", [("x", "a", {})], [("x", ["a"], {})]),
    ("value_in", "CHECK: \" v['value'] == 2e-5 or v['value'] == 3e-5 \"", [("x", 3e-5, {})], [("x", 4e-5, {})]),
    ("value_range", "CHECK: \" (v['value'] <= 0.925) and v['value'] > 0.0 \"", [("x", 0.925, {})], [("x", 0.0, {})]),
    ("value_range", "CHECK: \" v['value'] > 0 \"", [("x", True, {})], [("x", "5", {})]),
    ("value_truthy", "CHECK: \" v['value'] \"", [("x", [0], {})], [("x", {}, {})]),
    ("value_close", "CHECK: \" math.isclose(v['value'], 1e-6) \"", [("x", 1.0000000001e-6, {})], [("x", 1.001e-6, {})]),
    ("value_length", "CHECK: \" len(v['value']) == 2 \"", [("x", "ab", {})], [("x", 2, {})]),
    ("value_length", "CHECK: \" len(v['value']) >= 0 \"", [("x", {}, {})], [("x", None, {})]),
    ("value_power_of_two_multiple", "CHECK: \" is_integer(math.log2(v['value'] / 0.0001)) \"", [("x", 0.0008, {})], [("x", 0, {})]),
    ("value_multiple_of", "CHECK: \" is_integer(v['value'] / 0.001) \"", [("x", 0.007, {})], [("x", 0.0075, {})]),
    ("value_has_key", "CHECK: \" 'FID' in v['value'] \"", [("x", {"FID": 1}, {})], [("x", 7, {})]),
    ("value_fields_in_range", "ATLEAST_ONE_CHECK: \"v['value']['FID'] >= 0.0 and v['value']['CLIP'] <= 1.0\"", [("x", {"FID": 5, "CLIP": 0.2}, {})], [("x", {"FID": -1}, {})]),
    ("value_fields_in_range", "ATLEAST_ONE_CHECK: \"(0.0 <= v['value']['FID'] <= 90.0) and (0.15 <= v['value']['CLIP'] <= 1.0)\"", [("x", {"FID": 5, "CLIP": 0.2}, {}), ("x", {"FID": 95}, {})], [("x", {"FID": 5}, {})]),
    ("metadata_any_of", "CHECK: \" ('epoch_num' in v['metadata']) | ('samples_count' in v['metadata']) \"", [("x", 1, {"samples_count": 1})], [("x", 1, {"epoch": 1})]),
    ("metadata_implies", "CHECK: \" 'first_epoch_num' in v['metadata'] if 'epoch_count' in v['metadata'] else True \"", [("x", 1, {})], [("x", 1, {"epoch_count": 1})]),
    ("metadata_range", "CHECK: \" v['metadata']['epoch_count'] > 0 if 'epoch_count' in v['metadata'] else True \"", [("x", 1, {"epoch_count": 2})], [("x", 1, {"epoch_count": 0})]),
    ("metadata_range", "CHECK: \" v['metadata']['epoch_count'] > 0 \"", [("x", 1, {"epoch_count": 2})], [("x", 1, {})]),
    ("state_true", "CHECK: \" s['flag'] \"", [("flag", 1, {}), ("x", 1, {})], [("x", 1, {}), ("flag", 1, {})]),
    ("state_false", "CHECK: \" not s['flag'] \"", [("x", 1, {}), ("flag", 1, {})], [("flag", 1, {}), ("x", 1, {})]),
    ("state_eq", "CHECK: \" ( s['flag'] == True ) \"", [("flag", 1, {}), ("x", 1, {})], [("x", 1, {})]),
    ("within_minutes_of_first", "CHECK: \" ll.timestamp - s['first'] < (30*60*1e3) \"", [("first", 1, {}), ("x", 1, {})], [("first", 1, {}), *[("pad", 0, {})] * 30, ("x", 1, {})]),
    ("within_minutes_of_first", "CHECK: \" ll.timestamp - s['first'] < (s['minutes']*60*1e3) \"", [("first", 1, {}), ("minutes", 3, {}), ("x", 1, {})], [("first", 1, {}), ("minutes", 2, {}), ("x", 1, {})]),
    ("value_scaled_eq_state_scaled", "CHECK: \" v['value'] * 1152 == s['gbs'] * 8e-5 \"", [("gbs", 1152, {}), ("x", 8e-5, {})], [("gbs", 2304, {}), ("x", 8e-5, {})]),
    ("value_eq_constant_minus_state", "CHECK: \" v['value'] == 1_200_000 - s['warmup'] \"", [("warmup", 1000, {}), ("x", 1_199_000, {})], [("x", 1_199_000, {}), ("warmup", 1000, {})]),
    ("value_eq_ceil_quotient_minus_state", "CHECK: \" v['value'] == math.ceil(1_200_000 * 1152 / s['gbs'] ) - s['warmup'] \"", [("gbs", 1000, {}), ("warmup", 8, {}), ("x", 1382392, {})], [("gbs", 1000, {}), ("warmup", 8, {}), ("x", 1382391, {})]),
]  # fmt: skip
"""(kind, the MLPerf field of key x, lines of a log that passes, lines of one that fails)."""

STATE_RECORDS = """
- BEGIN:
    CODE: " s.update({'flag': False, 'first': 9e99}) "
- KEY:
    NAME: flag
    POST: " s['flag'] = True "
- KEY:
    NAME: first
    POST: " s['first']=min(s['first'], ll.timestamp) "
- KEY:
    NAME: minutes
    POST: " s['minutes'] = v['value'] "
- KEY:
    NAME: gbs
    POST: " s['gbs'] = v['value'] "
- KEY:
    NAME: warmup
    POST: " s['warmup'] = v['value'] "
"""


def one_file_rules(tmp_path: Path, field: str) -> tuple[Path, MlperfRuleSet, str]:
    """An MLPerf rule file with the state records and key x with `field`, and its typed translation."""
    folder = tmp_path / "training_9.9.9"
    folder.mkdir()
    (folder / "common.yaml").write_text(STATE_RECORDS + f"- KEY:\n    NAME: x\n    REQ: AT_LEAST_ONE\n    {field}\n")
    rule_file, items = port_file(tmp_path, "training_9.9.9/common.yaml")
    rules = MlperfRuleSet(
        format=FORMAT,
        format_version=1,
        usage="training",
        ruleset="9.9.9",
        source=Source(package="mlperf-logging", version="test", folder="training_9.9.9"),
        entry="common",
        files={"common": rule_file},
    )
    kind = next(i.typed[0] for i in items if i.key == "x" and i.field != "REQ")
    return folder / "common.yaml", rules, kind


def verdicts(
    tmp_path: Path, config: Path, rules: MlperfRuleSet, lines: list[tuple[str, Any, dict[str, Any]]]
) -> tuple[bool, bool]:
    """(MLPerf's checker, the engine) on a log of these lines, one minute apart."""
    text = render([event(key, value, 60_000.0 * i, meta) for i, (key, value, meta) in enumerate(lines)])
    path = tmp_path / "log.txt"
    path.write_text(text)
    mlp_compliance.enqueued_configs.clear()
    checker = mlp_compliance.make_checker("training", "5.1.0", True, False)
    with silenced():
        try:
            real = checker.check_file(str(path), str(config))  # an absolute config path is used as given
        except Exception:  # MLPerf's checker stops with an exception: the log fails
            real = False
    return bool(real), check_mlperf_log(parse_log(text), rules).passed


@pytest.mark.parametrize(
    ("kind", "field", "passing", "failing"), KIND_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(KIND_CASES)]
)
def test_each_typed_kind_passes_and_fails_as_mlperf_does(
    tmp_path: Path, kind: str, field: str, passing: list[Any], failing: list[Any]
) -> None:
    config, rules, translated = one_file_rules(tmp_path, field)
    assert translated == kind
    assert verdicts(tmp_path, config, rules, passing) == (True, True)
    assert verdicts(tmp_path, config, rules, failing) == (False, False)


# The engine's report -------------------------------------------------------------------------------------------


def test_a_violation_names_file_key_line_expected_and_found() -> None:
    text = render(build_log("training", "llama31_8b", "closed", {"opt_name": "adam"}, [("eval_accuracy", 3.2, {})]))
    verdict = check_mlperf_log(parse_log(text), load_mlperf_rules("training", "5.1.0"))
    assert not verdict.passed
    wrong = next(v for v in verdict.violations if v.category == "check" and v.key == "opt_name")
    assert (wrong.rule_file, wrong.line) == ("training_5.1.0/closed_llama31_8b.yaml", 8)
    assert wrong.message == "opt_name: expected 'adamw', found value \"adam\" (MLPerf: v['value'] == 'adamw')"
    missing = next(v for v in verdict.violations if v.key == "global_batch_size")
    assert missing.message == "global_batch_size: expected exactly one line, found 0"
    assert verdict.rule_files == (
        "training_5.1.0/common.yaml",
        "training_5.1.0/closed_common.yaml",
        "training_5.1.0/closed_llama31_8b.yaml",
    )


def test_a_later_file_that_names_a_key_again_drops_the_earlier_failures_of_it(tmp_path: Path) -> None:
    """eval_accuracy without epoch metadata fails in common and in closed_llama31_8b; MLPerf keeps the latter's."""
    events = build_log("training", "llama31_8b", "closed", {}, [("eval_accuracy", 3.2, {})])
    for e in events:
        if e["key"] == "eval_accuracy":
            e["metadata"] = {}
    text = render(events)
    (tmp_path / "result_0.txt").write_text(text)
    mlp_compliance.enqueued_configs.clear()
    checker = mlp_compliance.make_checker("training", "5.1.0", True, False)
    with silenced():
        assert not checker.check_file(str(tmp_path / "result_0.txt"), "training_5.1.0/common.yaml")
    verdict = check_mlperf_log(parse_log(text), load_mlperf_rules("training", "5.1.0"))
    dropped = [v.rule_file for v in verdict.superseded if v.key == "eval_accuracy"]
    assert dropped == ["training_5.1.0/common.yaml"]
    kept = [v for v in verdict.violations if v.key == "eval_accuracy"]
    assert [v.rule_file for v in kept] == ["training_5.1.0/closed_llama31_8b.yaml"]
    assert "'samples_count' in v['metadata']" in checker.overwritable["eval_accuracy"]
    assert "epoch_num" not in checker.overwritable["eval_accuracy"]


def test_a_log_that_reaches_a_rule_file_without_a_typed_port_fails_saying_so() -> None:
    """training 3.1.0's closed_rnnt.yaml holds `float('inf')`, which no typed kind expresses."""
    rules = load_mlperf_rules("training", "3.1.0")
    assert set(rules.not_ported) == {"closed_maskrcnn", "closed_rnnt"}
    text = render(build_log("training", "rnnt", "closed", {}, [("eval_accuracy", 0.05, {})]))
    verdict = check_mlperf_log(parse_log(text), rules)
    (unported,) = [v for v in verdict.violations if v.category == "not_ported"]
    assert not verdict.passed and unported.rule_file == "training_3.1.0/closed_rnnt.yaml"
    assert unported.message.startswith("rule file training_3.1.0/closed_rnnt.yaml has no typed port")
    assert "float('inf')" in unported.message and verdict.stopped is None
    assert "training_3.1.0/closed_rnnt.yaml" not in verdict.rule_files
    resnet = render(build_log("training", "resnet", "closed", {}, [("eval_accuracy", 0.76, {})]))
    assert not [v for v in check_mlperf_log(parse_log(resnet), rules).violations if v.category == "not_ported"]


def test_repeats_of_one_value_are_warnings_and_failures_under_werror() -> None:
    hyper = {
        "opt_name": "adam",
        "global_batch_size": 1024,
        "gradient_accumulation_steps": 1,
        "opt_base_learning_rate": 0.001,
    }
    events = build_log("training", "rgat", "closed", hyper, [("eval_accuracy", 0.73, {})])
    text = render([*events, events[-2]])  # eval_samples twice, one value
    rules = load_mlperf_rules("training", "5.1.0")
    lenient, strict = check_mlperf_log(parse_log(text), rules), check_mlperf_log(parse_log(text), rules, werror=True)
    assert lenient.passed and [w.key for w in lenient.warnings] == ["eval_samples"]
    assert not strict.passed and [v.key for v in strict.violations] == ["eval_samples"]


def test_mlperf_view_reads_what_specbench_refuses_and_stops_where_mlperf_raises() -> None:
    lines = [
        ':::MLLOG {"namespace": "", "time_ms": -5, "event_type": "POINT_IN_TIME", "key": "a", "value": NaN, "metadata": {}}',
        'rank 0: :::MLLOG {"time_ms": "12", "key": "b", "value": 1, "metadata": null, "extra": 1}',
        ':::MLLOG {"time_ms": "soon", "key": "c", "value": 1, "metadata": {}}',
    ]
    view = mlperf_view("\r".join(lines) + "\r")
    assert [(e.line, e.key, e.time_ms, e.metadata) for e in view.log.events] == [
        (1, "a", -5.0, {}),
        (2, "b", 12.0, None),
    ]
    assert [p.line for p in view.log.problems] == [3] and view.stop is None
    assert len(parse_log("\n".join(lines)).problems) == 3
    stopped = mlperf_view(':::MLLOG {"time_ms": 1, "key": "a", "metadata": {}}\n')
    assert stopped.stop is not None and "KeyError" in stopped.stop.message
    verdict = check_mlperf_text(':::MLLOG {"time_ms": null}\n', load_mlperf_rules("hpc", "3.0.0"))
    assert not verdict.passed and verdict.stopped is not None


def test_every_typed_check_kind_has_a_case_against_mlperf() -> None:
    kinds = {get_args(m.model_fields["kind"].annotation)[0] for m in get_args(get_args(Check)[0])}
    assert {case[0] for case in KIND_CASES} == kinds
