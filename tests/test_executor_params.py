"""The parameter names each executor declares (specbench/spec/params.py), which the spec loader and the validator
check without torch, against the executors' own options and defaults."""

from __future__ import annotations

import pytest

from specbench.run.executors import EXECUTOR_CLASSES, get_executor
from specbench.spec import builtin, load_spec, resolve
from specbench.spec.params import EXECUTOR_PARAMS

pytestmark = pytest.mark.needs("torch")


def test_every_executor_declares_its_parameters() -> None:
    assert EXECUTOR_PARAMS.names() == EXECUTOR_CLASSES.names()


@pytest.mark.parametrize("name", EXECUTOR_CLASSES.names())
def test_the_declared_settings_are_the_executors_options_in_their_layers(name: str) -> None:
    executor = get_executor(name)
    assert {key: option.layer for key, option in executor.options.items()} == dict(EXECUTOR_PARAMS.get(name).settings)


@pytest.mark.parametrize("name", EXECUTOR_CLASSES.names())
def test_every_default_the_executor_records_is_declared(name: str) -> None:
    executor, declared = get_executor(name), EXECUTOR_PARAMS.get(name)
    defaults = set(executor.defaults)
    for spec_id in builtin.spec_ids():
        loaded = load_spec(spec_id)
        if loaded.spec.workload.executor == name:
            defaults |= set(executor.defaults_for(resolve(loaded, "official")))
    assert sorted(key for key in defaults if key not in declared.hyperparameters) == []
