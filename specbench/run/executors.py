"""The executors a spec can name (`workload.executor`), each imported only when a spec needs it."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from specbench.registry import Registry

if TYPE_CHECKING:
    from specbench.run.base import Executor

EXECUTOR_MODULES: Registry[str] = Registry("executor")
EXECUTOR_MODULES.register("resnet50", "specbench.workloads.resnet50.executor")
EXECUTOR_MODULES.register("mlperf-resnet50", "specbench.workloads.mlperf_resnet50.executor")
EXECUTOR_MODULES.register("llm-gpt", "specbench.workloads.llm_gpt.executor")
EXECUTOR_MODULES.register("extreme-weather", "specbench.workloads.extreme_weather.executor")


def get_executor(name: str) -> Executor:
    """The executor named by a spec's `workload.executor`, importing torch only now."""
    module_name = EXECUTOR_MODULES.get(name)
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        from specbench.errors import SpecbenchError

        raise SpecbenchError(
            f"the {name!r} executor needs {err.name or 'a missing package'}: pip install 'specbench[run]'"
        ) from err
    executor: Executor = module.EXECUTOR
    return executor
