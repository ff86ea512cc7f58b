"""The executors a spec can name (`workload.executor`), each imported only when a spec needs it."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from specbench.registry import Registry

if TYPE_CHECKING:
    from specbench.run.base import Executor

EXECUTOR_CLASSES: Registry[str] = Registry("executor")
"""Executor name -> 'module:Class' of its Executor subclass."""
EXECUTOR_CLASSES.register("resnet50", "specbench.workloads.resnet50.executor:ResNet50Executor")
EXECUTOR_CLASSES.register("mlperf-resnet50", "specbench.workloads.mlperf_resnet50.executor:MlperfResNet50Executor")
EXECUTOR_CLASSES.register("llm-gpt", "specbench.workloads.llm_gpt.executor:LlmGptExecutor")
EXECUTOR_CLASSES.register("extreme-weather", "specbench.workloads.extreme_weather.executor:ExtremeWeatherExecutor")


def get_executor(name: str | None) -> Executor:
    """A fresh executor of the name a spec's `workload.executor` gives, importing torch only now."""
    if name is None:
        from specbench.errors import UsageError

        raise UsageError(
            "this spec names no executor: it is an MLPerf benchmark whose results are imported "
            "(`specbench import mlperf RESULTS_ROOT --out DIR`), not run by specbench"
        )
    module_name, _, class_name = EXECUTOR_CLASSES.get(name).partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        from specbench.errors import SpecbenchError

        raise SpecbenchError(
            f"the {name!r} executor needs {err.name or 'a missing package'}: pip install 'specbench[run]'"
        ) from err
    executor: Executor = getattr(module, class_name)()
    return executor
