"""The port of MLPerf's compliance rule files into typed rules is faithful and complete, and refuses what it cannot read."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from specbench.errors import UsageError
from specbench.formats.mlperf_rules import RULESETS, load_mlperf_rules, rules_file_name
from specbench.mlperf.ruleport import (
    LEFT_OUT,
    NOT_PORTED,
    Port,
    checker_folder,
    dump_rules,
    port_all,
    port_file,
    port_ruleset,
)
from specbench.mlperf.ruleport_docs import render
from specbench.mlperf.ruleport_shapes import UnknownShape, literal, normalise

pytestmark = pytest.mark.needs("mlperf_logging")

REPO = Path(__file__).resolve().parents[2]
REPLACED = "replaced: a later record of the same key in the same file wins, as in MLPerf's checker"
IDS = [f"{u}-{r}" for u, r in RULESETS]


@cache
def ports() -> list[Port]:
    return port_all()


def port_of(usage: str, ruleset: str) -> Port:
    return next(p for p in ports() if (p.rules.usage, p.rules.ruleset) == (usage, ruleset))


@pytest.mark.parametrize(("usage", "ruleset"), RULESETS, ids=IDS)
def test_translating_the_installed_rule_files_gives_the_committed_rules(usage: str, ruleset: str) -> None:
    port = port_of(usage, ruleset)
    committed = REPO / "rules" / "mlperf" / rules_file_name(usage, ruleset)
    assert committed.read_text() == dump_rules(port.rules), "run: python -m specbench.mlperf.ruleport"
    assert load_mlperf_rules(usage, ruleset) == port.rules  # the YAML reads back to the same typed rules


def mlperf_items(path: Path, name: str) -> list[tuple[str, str, str, int, str]]:
    """Every item of one rule file, read with PyYAML's BaseLoader as MLPerf's checker reads it."""
    items = []
    for entry in yaml.load(path.read_text(), Loader=yaml.BaseLoader) or []:
        (kind, body), *_ = entry.items()
        if kind != "KEY":
            items += [(name, kind, field, 0, normalise(text)) for field, text in body.items()]
            continue
        for field, raw in body.items():
            if field == "NAME":
                continue
            texts = raw if isinstance(raw, list) else [raw]
            items += [(name, body["NAME"], field, i, normalise(t)) for i, t in enumerate(texts)]
    return items


@pytest.mark.parametrize(("usage", "ruleset"), RULESETS, ids=IDS)
def test_every_item_of_mlperf_rule_files_is_carried_or_left_out_with_its_reason(usage: str, ruleset: str) -> None:
    port = port_of(usage, ruleset)
    root = checker_folder()
    expected = []
    for file_id in port.rules.files:
        path = port.rules.file_path(file_id)
        expected += mlperf_items(root / path, path)
    own = {p.name for p in (root / port.rules.source.folder).glob("*.yaml")}
    ported = {Path(port.rules.file_path(f)).name for f in port.rules.files if "/" not in f}
    unported = {Path(port.rules.file_path(f)).name for f in port.rules.not_ported}
    assert ported | unported == own and not ported & unported
    assert {port.rules.file_path(f) for f in port.rules.not_ported} <= set(NOT_PORTED)
    ledger = [(i.file, i.key, "CODE" if i.field == "BEGIN" else i.field, i.index, i.text) for i in port.items]
    assert sorted(ledger) == sorted(expected)
    for item in port.items:
        assert bool(item.typed) != bool(item.left_out), item
        assert item.left_out in (None, REPLACED, LEFT_OUT.get((item.field, item.text)))
    for item in port.items:
        if item.field in ("CHECK", "ATLEAST_ONE_CHECK") and item.typed:
            record = next(r for r in port.rules.files[port.rules.file_id(item.file)].records if r.key == item.key)
            texts = [c.mlperf_text for c in record.checks] + [getattr(record.at_least_one_check, "mlperf_text", None)]
            assert item.text in texts, item


def test_the_docs_table_is_the_translation_of_today() -> None:
    assert (REPO / "docs" / "mlperf-rules.md").read_text() == render(ports()), (
        "run: python -m specbench.mlperf.ruleport"
    )


def test_a_ruleset_takes_the_files_of_another_folder_its_rules_include() -> None:
    rules = port_of("training", "4.0.0").rules
    resnet = next(r for r in rules.files["closed_resnet"].records if r.key == "opt_name")
    assert [i.pattern for i in resnet.includes] == ["training_3.1.0/closed_resnet_{value}.yaml"]
    assert {"training_3.1.0/closed_resnet_lars", "training_3.1.0/closed_resnet_sgd"} <= set(rules.files)


def write_rules(tmp_path: Path, body: str) -> Path:
    (tmp_path / "training_9.9.9").mkdir()
    (tmp_path / "training_9.9.9" / "common.yaml").write_text(body)
    return tmp_path


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("- KEY:\n    NAME: x\n    CHECK: \"__import__('os').system('true')\"\n", "no shape recognises the check"),
        ("- KEY:\n    NAME: x\n    CHECK: \"v['value'] > 0 or v['value'] < -1\"\n", "no shape recognises the check"),
        ("- KEY:\n    NAME: x\n    POST: \"s['a'] = v['value']; enqueue_config('t/x_{}.yaml'.format(v['value']))\"\n", "a state update before an include"),
        ("- KEY:\n    NAME: x\n    PRE: \"s['a'] = 1\"\n", "expected NAME and some of"),
        ("- KEY:\n    NAME: x\n    REQ: ONE_OR_TWO\n", "REQ 'ONE_OR_TWO' is none of"),
        ("- KEY:\n    NAME: x\n    REQ: AT_LEAST_ONE_OR(y)\n", "names ['y'] in AT_LEAST_ONE_OR"),
        ("- END:\n    CHECK: \"True\"\n", "item END"),
        ("- BEGIN:\n    CODE: \"s.update({'a': len('x')})\"\n", "no shape recognises the state entry"),
    ],
)  # fmt: skip
def test_an_expression_no_shape_recognises_stops_the_translation_with_its_place(
    tmp_path: Path, body: str, message: str
) -> None:
    root = write_rules(tmp_path, body)
    with pytest.raises(UnknownShape, match=re.escape("training_9.9.9/common.yaml")) as err:
        port_file(root, "training_9.9.9/common.yaml")
    assert message in str(err.value)


@pytest.mark.parametrize(
    ("text", "value"),
    [("0", 0), ("1_200_000", 1200000), ("1.", 1.0), ("1e-08", 1e-08), ("9e99", 9e99), ("'a b'", "a b"), ("True", True)],
)
def test_literals_are_read_without_evaluating_anything(text: str, value: Any) -> None:
    assert literal(text) == value and type(literal(text)) is type(value)


def test_a_literal_that_is_code_is_refused() -> None:
    with pytest.raises(UnknownShape, match="expected a literal"):
        literal("__import__('os')")


def test_only_the_files_listed_as_not_ported_are_left_unported_each_with_its_item() -> None:
    rules = port_of("training", "3.1.0").rules
    assert {rules.file_path(f) for f in rules.not_ported} == set(NOT_PORTED)
    assert "no shape recognises the check" in rules.not_ported["closed_maskrcnn"]
    assert rules.not_ported["closed_rnnt"].endswith(f"({NOT_PORTED['training_3.1.0/closed_rnnt.yaml']})")
    assert rules.files["closed_stable_diffusion"].aggregate is not None  # 3.1.0 groups by step_num
    assert rules.files["closed_stable_diffusion"].aggregate.group_field == "step_num"
    assert not any(p.rules.not_ported for p in ports() if (p.rules.usage, p.rules.ruleset) != ("training", "3.1.0"))


def test_a_file_listed_as_not_ported_that_ports_stops_the_translation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_rules(tmp_path, "- KEY:\n    NAME: x\n    CHECK: \"v['value'] > 0\"\n")
    monkeypatch.setitem(NOT_PORTED, "training_9.9.9/common.yaml", "a test")
    with pytest.raises(UnknownShape, match="listed in NOT_PORTED but ports"):
        port_ruleset("training", "9.9.9", root)


def test_a_file_listed_as_not_ported_is_recorded_with_its_item(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = write_rules(tmp_path, "- KEY:\n    NAME: x\n    CHECK: \"v['value'] > 0\"\n")
    (root / "training_9.9.9" / "other.yaml").write_text(
        "- KEY:\n    NAME: y\n    CHECK: \"v['value'] == float('inf')\"\n"
    )
    monkeypatch.setitem(NOT_PORTED, "training_9.9.9/other.yaml", "a test")
    rules = port_ruleset("training", "9.9.9", root).rules
    assert set(rules.files) == {"common"} and set(rules.not_ported) == {"other"}
    assert rules.not_ported["other"] == (
        "training_9.9.9/other.yaml: y: CHECK: no shape recognises the check \"v['value'] == float('inf')\" (a test)"
    )


def test_a_port_of_one_ruleset_is_the_same_as_in_the_whole_port() -> None:
    assert port_ruleset("hpc", "3.0.0").rules == port_of("hpc", "3.0.0").rules


def test_loading_rules_of_an_unknown_ruleset_says_which_are_known() -> None:
    with pytest.raises(
        UsageError, match=re.escape("no typed MLPerf rules for training 6.1.0; known: training 3.1.0, training 4.0.0")
    ):
        load_mlperf_rules("training", "6.1.0")
