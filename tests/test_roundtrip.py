"""Round trips: spec -> JSON -> spec, and spec -> JSON text -> our YAML loader -> spec."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from specbench.spec import Spec, load_spec
from specbench.spec.yamlio import parse_yaml

BASE: dict[str, Any] = load_spec("resnet50").spec.model_dump(mode="json")

finite = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12)
scalars = st.one_of(st.booleans(), st.integers(-(2**53), 2**53), finite, st.text(max_size=12))
names = st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True)
rules = st.one_of(
    st.builds(lambda v: {"kind": "fixed", "value": v}, scalars),
    st.builds(lambda vs: {"kind": "one_of", "values": vs}, st.lists(scalars, min_size=1, max_size=4)),
    st.builds(lambda a, b: {"kind": "range", "min": min(a, b), "max": max(a, b)}, finite, finite),
    st.builds(lambda v: {"kind": "multiple_of", "value": v}, st.integers(1, 4096)),
    st.builds(lambda b: {"kind": "power_of_two_multiple", "base": b}, st.floats(1e-9, 1e3)),
    st.just({"kind": "reported", "levels": ["system"]}),
    st.just({"kind": "free", "cardinality": "any"}),
)


@settings(max_examples=60, deadline=None)
@given(
    target=st.floats(0.01, 0.999),
    exponent=st.floats(0, 10),
    train=st.integers(1, 10**9),
    extra_hparams=st.dictionaries(names, scalars, max_size=4),
    workload_rules=st.dictionaries(names, rules, max_size=4),
)
def test_round_trip(
    target: float, exponent: float, train: int, extra_hparams: dict[str, Any], workload_rules: dict[str, Any]
) -> None:
    data = json.loads(json.dumps(BASE))
    data["quality"]["target"] = target
    data["quality"]["penalty_exponent"] = exponent
    data["workload"]["dataset"]["train_samples"] = train
    data["hyperparameters"] = {**extra_hparams, **data["hyperparameters"]}
    data["rules"]["workload"] = {**workload_rules, **data["rules"]["workload"]}
    spec = Spec.model_validate(data)
    assert Spec.model_validate_json(spec.model_dump_json()) == spec
    text = json.dumps(spec.model_dump(mode="json"))
    assert Spec.model_validate(parse_yaml(text).data) == spec
