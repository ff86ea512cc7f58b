"""Each rule kind accepts what it should and rejects the rest; levels decide which rules bind."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import TypeAdapter

from specbench.spec import evaluate, load_spec
from specbench.spec.resolve import effective_rules
from specbench.spec.rules import Rule, applies, count_ok

RULE = TypeAdapter(Rule)


def check(rule: dict[str, Any], value: Any, params: dict[str, Any] | None = None) -> bool:
    return evaluate(RULE.validate_python(rule), value, params or {}).ok


@pytest.mark.parametrize(
    ("rule", "value", "ok"),
    [
        ({"kind": "fixed", "value": "sgd"}, "sgd", True),
        ({"kind": "fixed", "value": "sgd"}, "lars", False),
        ({"kind": "fixed", "value": 0.1}, 0.1000001, False),
        ({"kind": "fixed", "value": 0.1, "rel_tol": 1e-5}, 0.1000001, True),
        ({"kind": "fixed", "value": False}, 0, False),
        ({"kind": "one_of", "values": ["sgd", "lars"]}, "lars", True),
        ({"kind": "one_of", "values": ["sgd", "lars"]}, "adam", False),
        ({"kind": "one_of", "values": [1, 2]}, True, False),
        ({"kind": "range", "min": 0, "max": 10}, 10, True),
        ({"kind": "range", "min": 0, "max": 10}, 10.5, False),
        ({"kind": "range", "min": 1}, 1e9, True),
        ({"kind": "range", "min": 1}, "5", False),
        ({"kind": "range", "min": 1}, float("nan"), False),
        ({"kind": "multiple_of", "value": 8}, 256, True),
        ({"kind": "multiple_of", "value": 8}, 260, False),
        ({"kind": "multiple_of", "value": 8}, 0, False),
        ({"kind": "multiple_of", "value": 0.001}, 2.048, True),
        ({"kind": "multiple_of", "value": 0.001}, 2.0485, False),
        ({"kind": "power_of_two_multiple", "base": 1e-4}, 1e-4, True),
        ({"kind": "power_of_two_multiple", "base": 1e-4}, 5e-5, True),
        ({"kind": "power_of_two_multiple", "base": 1e-4}, 8e-4, True),
        ({"kind": "power_of_two_multiple", "base": 1e-4}, 3e-4, False),
        ({"kind": "power_of_two_multiple", "base": 1e-4, "max_exponent": 2}, 8e-4, False),
        ({"kind": "power_of_two_multiple", "base": 1e-4}, -1e-4, False),
        ({"kind": "reported"}, "anything", True),
        ({"kind": "reported"}, None, False),
        ({"kind": "reported"}, "", False),
        ({"kind": "free"}, None, True),
    ],
)
def test_rule_kinds(rule: dict[str, Any], value: Any, ok: bool) -> None:
    assert check(rule, value) is ok


def test_scaled_with_linear_and_sqrt() -> None:
    linear = {"kind": "scaled_with", "param": "global_batch_size", "reference": 0.256, "reference_param": 256}
    assert check(linear, 2.048, {"global_batch_size": 2048})
    assert not check(linear, 0.256, {"global_batch_size": 2048})
    assert not check(linear, 0.256, {})
    sqrt = {**linear, "exponent": 0.5}
    assert check(sqrt, 0.512, {"global_batch_size": 1024})
    verdict = evaluate(RULE.validate_python(linear), 1.0, {"global_batch_size": 512})
    assert verdict.expected == "0.512 = 0.256 x (global_batch_size 512 / 256)"


def test_when_and_cardinality() -> None:
    rule = RULE.validate_python({"kind": "fixed", "value": 2, "when": {"opt_name": "lars"}})
    assert applies(rule, {"opt_name": "lars"})
    assert not applies(rule, {"opt_name": "sgd"})
    assert count_ok("exactly_one", 1) and not count_ok("exactly_one", 2)
    assert count_ok("at_least_one", 3) and not count_ok("at_least_one", 0)
    assert count_ok("at_most_one", 0) and not count_ok("at_most_one", 2)


def test_a_when_list_applies_to_each_of_its_values() -> None:
    rule = RULE.validate_python({"kind": "fixed", "value": 2048, "when": {"model": ["800M", "13B"]}})
    assert applies(rule, {"model": "800M"}) and applies(rule, {"model": "13B"})
    assert not applies(rule, {"model": "tiny"}) and not applies(rule, {})


def test_invalid_rules_are_refused() -> None:
    with pytest.raises(ValueError):
        RULE.validate_python({"kind": "range"})
    with pytest.raises(ValueError):
        RULE.validate_python({"kind": "fixed", "value": 1, "eval": "__import__('os')"})


def test_levels_decide_binding() -> None:
    spec = load_spec("resnet50").spec
    system = effective_rules(spec, "system")
    free = effective_rules(spec, "free")
    hardware = effective_rules(spec, "hardware")
    assert system["workload"]["optimizer"].kind == "fixed"  # type: ignore[attr-defined]
    assert free["workload"]["optimizer"].kind == "reported"  # type: ignore[attr-defined]
    # precision names its own levels: binding at hardware and system, reported when free
    assert hardware["parallelism_precision"]["precision"].kind == "one_of"  # type: ignore[attr-defined]
    assert system["parallelism_precision"]["precision"].kind == "one_of"  # type: ignore[attr-defined]
    assert free["parallelism_precision"]["precision"].kind == "reported"  # type: ignore[attr-defined]
    for rules in (system, free, hardware):
        assert rules["problem"]["quality_target"].value == 0.763  # type: ignore[attr-defined]
        assert rules["problem"]["epoch_budget"].value == 90  # type: ignore[attr-defined]


def test_show_prints_what_each_level_binds_beyond_the_rules(capsys: pytest.CaptureFixture[str]) -> None:
    """The hardware level holds resnet50's batch size, learning rate and warm-up at the reference (SB-CNS-002),
    which the system level lets its rules decide; caraml-resnet50's momentum has no rule and holds at both."""
    from specbench.cli import main

    def shown(spec: str, level: str) -> dict[str, Any]:
        assert main(["show", spec, "--level", level, "--format", "json"]) == 0
        return json.loads(capsys.readouterr().out)["resolved"]["follows_reference"]  # type: ignore[no-any-return]

    beyond = "beyond the effective rules (validator: SB-CNS-002)"
    assert shown("resnet50", "hardware") == {
        "note": f"at the hardware level these reference values hold as stated (or as one of the values listed), {beyond}",
        "workload": {"global_batch_size": 256, "base_learning_rate": 0.256, "warmup_epochs": 5},
    }
    assert shown("resnet50", "system") == {"note": "at the system level, the effective rules are all that binds"}
    assert shown("caraml-resnet50", "hardware")["workload"] == {
        "momentum": 0.875,
        "global_batch_size": {"one_of": [256, 64, 128, 512]},
        "base_learning_rate": 0.256,
    }
    assert shown("caraml-resnet50", "system")["workload"] == {"momentum": 0.875, "base_learning_rate": 0.256}


def test_problem_layer_never_varies_in_a_rule_set(tmp_path: Any) -> None:
    from specbench.errors import InputError
    from specbench.spec import load_ruleset

    text = (load_spec("resnet50").path.parent.parent / "rules" / "hpcai500.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("    varies: [hardware]\n", "    varies: [hardware, problem]\n"))
    with pytest.raises(InputError) as caught:
        load_ruleset(bad)
    assert "layer 9 'problem' (dataset, target quality, epoch budget) never varies" in str(caught.value)
