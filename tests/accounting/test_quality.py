"""The one quality outcome: met, best, credited and last, for both directions and every credit rule."""

from __future__ import annotations

import pytest

from specbench.accounting.quality import (
    Credit,
    QualityOutcome,
    comparison,
    credit_rule,
    first_met,
    meets,
    quality_outcome,
    spec_outcome,
)
from specbench.spec.loader import load_spec


def test_higher_is_better() -> None:
    outcome = quality_outcome([0.50, 0.80, 0.70], 0.75, "higher")
    assert outcome == QualityOutcome(met=True, best=0.80, credited=0.80, last=0.70)
    assert comparison("higher") == ">="


def test_lower_is_better() -> None:
    outcome = quality_outcome([3.0, 2.4, 2.6], 2.5, "lower")
    assert outcome == QualityOutcome(met=True, best=2.4, credited=2.4, last=2.6)
    assert not quality_outcome([3.0, 2.7], 2.5, "lower").met
    assert comparison("lower") == "<="


def test_meets_then_falls_back() -> None:
    values = [0.60, 0.76, 0.70]
    assert quality_outcome(values, 0.75, "higher", "last") == QualityOutcome(False, 0.76, 0.70, 0.70)
    assert quality_outcome(values, 0.75, "higher", "first_met") == QualityOutcome(True, 0.76, 0.76, 0.70)
    assert quality_outcome(values, 0.75, "higher", "best") == QualityOutcome(True, 0.76, 0.76, 0.70)
    lower = [3.0, 2.4, 2.6]
    assert quality_outcome(lower, 2.5, "lower", "last") == QualityOutcome(False, 2.4, 2.6, 2.6)


def test_first_met_credits_the_first_to_reach_not_the_best() -> None:
    assert quality_outcome([0.76, 0.80], 0.75, "higher", "first_met") == QualityOutcome(True, 0.80, 0.76, 0.80)
    assert quality_outcome([0.60, 0.70], 0.75, "higher", "first_met") == QualityOutcome(False, 0.70, 0.70, 0.70)
    assert first_met([0.60, 0.76, 0.80], 0.75, "higher") == 1
    assert first_met([0.60, 0.70], 0.75, "higher") is None


@pytest.mark.parametrize("credit", ["best", "last", "first_met"])
def test_no_evaluations(credit: Credit) -> None:
    none = QualityOutcome(met=False, best=None, credited=None, last=None)
    assert quality_outcome([], 0.75, "higher", credit) == none
    assert quality_outcome([], 2.5, "lower", credit) == none


@pytest.mark.parametrize("credit", ["best", "last", "first_met"])
def test_equality_at_the_target_meets_it(credit: Credit) -> None:
    assert meets(0.75, 0.75, "higher") and meets(2.5, 2.5, "lower")
    assert quality_outcome([0.75], 0.75, "higher", credit).met
    assert quality_outcome([2.5], 2.5, "lower", credit).met


def test_credit_rule_of_each_scoring_method() -> None:
    assert credit_rule("hpcai500-valid-flops") == "last"
    assert credit_rule("mlperf-time-to-train") == "first_met"
    assert credit_rule("caraml-throughput") == "best"
    assert credit_rule(None) == "best"


def test_spec_outcome_follows_the_spec() -> None:
    hpcai500 = load_spec("resnet50").spec
    assert hpcai500.quality is not None
    target = hpcai500.quality.target
    assert spec_outcome(hpcai500, [target, target - 0.01]) == QualityOutcome(
        False, target, target - 0.01, target - 0.01
    )
    with pytest.raises(ValueError, match="no quality target"):
        spec_outcome(load_spec("caraml-resnet50").spec, [1.0])
