"""MLLOG output of one run through mlperf-logging's `mllog`, with MLPerf's keys where they exist.

A spec that is an MLPerf benchmark (mlperf-resnet50) logs MLPerf's benchmark name
(`submission_benchmark: resnet`) and its hyperparameters under MLPerf's keys (`opt_name`,
`lars_*`, `sgd_*`, `model_bn_span`, ...), so MLPerf's compliance checker reads the log with the
rules of its benchmark. Other specs log their own id there, outside MLPerf's checker (its closed
rules know only MLPerf's benchmarks). Every log also names the spec in `specbench_spec_id`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specbench.clock import wall_ms
from specbench.errors import SpecbenchError
from specbench.formats.mlperf_import import SPEC_KEY, log_benchmark_name

if TYPE_CHECKING:
    from specbench.spec.resolve import ResolvedSpec


def _mllog() -> Any:
    try:
        from mlperf_logging.mllog import mllog
    except ImportError as err:
        raise SpecbenchError(
            "executing a spec needs mlperf-logging for the MLLOG format: pip install 'specbench[run]'"
        ) from err
    return mllog


class RunLog:
    """Writes `:::MLLOG {json}` lines to one run's log.txt; timestamps come from the caller's clock."""

    def __init__(self, path: Path) -> None:
        mllog = _mllog()
        self.constants = mllog.constants
        self.path = path
        self._logger = logging.getLogger(f"specbench.mllog.{path}")
        self._logger.propagate = False
        self._logger.setLevel(logging.INFO)
        self._handler = logging.FileHandler(path, mode="a", encoding="utf-8")
        self._handler.setFormatter(logging.Formatter("%(message)s"))
        self._logger.addHandler(self._handler)
        root = str(Path(__file__).resolve().parent.parent.parent)
        self._mllogger = mllog.MLLogger(logger=self._logger, default_stack_offset=2, root_dir=root)

    @staticmethod
    def now_ms() -> int:
        return wall_ms()

    def event(
        self, key: str, value: Any = None, metadata: dict[str, Any] | None = None, time_ms: int | None = None
    ) -> None:
        self._mllogger.event(key=key, value=value, metadata=metadata, time_ms=time_ms or self.now_ms())
        self._handler.flush()

    def start(
        self, key: str, value: Any = None, metadata: dict[str, Any] | None = None, time_ms: int | None = None
    ) -> None:
        self._mllogger.start(key=key, value=value, metadata=metadata, time_ms=time_ms or self.now_ms())
        self._handler.flush()

    def end(
        self, key: str, value: Any = None, metadata: dict[str, Any] | None = None, time_ms: int | None = None
    ) -> None:
        self._mllogger.end(key=key, value=value, metadata=metadata, time_ms=time_ms or self.now_ms())
        self._handler.flush()

    def close(self) -> None:
        self._logger.removeHandler(self._handler)
        self._handler.close()


class NullLog:
    """The log of a rank that does not write (every rank but 0 in a distributed run)."""

    def __init__(self) -> None:
        self.constants = _mllog_constants()

    @staticmethod
    def now_ms() -> int:
        return wall_ms()

    def event(
        self, key: str, value: Any = None, metadata: dict[str, Any] | None = None, time_ms: int | None = None
    ) -> None:
        pass

    def start(
        self, key: str, value: Any = None, metadata: dict[str, Any] | None = None, time_ms: int | None = None
    ) -> None:
        pass

    def end(
        self, key: str, value: Any = None, metadata: dict[str, Any] | None = None, time_ms: int | None = None
    ) -> None:
        pass

    def close(self) -> None:
        pass


def _mllog_constants() -> Any:
    return _mllog().constants


def write_header(
    log: RunLog | NullLog,
    resolved: ResolvedSpec,
    hyperparameters: dict[str, Any],
    org: str,
    system: str,
    seed: int,
    dataset: tuple[int, int],
) -> None:
    """The events before the executor's setup: submission identity, init_start, seed, samples, hyperparameters.

    `dataset` is (train_samples, eval_samples). Event types are mllog's: POINT_IN_TIME events and
    the INTERVAL_START of init.
    """
    c = log.constants
    log.event(c.SUBMISSION_ORG, org)
    log.event(c.SUBMISSION_PLATFORM, system)
    log.event(c.SUBMISSION_DIVISION, "open" if resolved.level == "free" else "closed")
    log.event(c.SUBMISSION_STATUS, "onprem")
    log.event(c.SUBMISSION_BENCHMARK, log_benchmark_name(resolved.spec))
    log.event(SPEC_KEY, resolved.spec.id)
    log.event(c.CACHE_CLEAR, True)
    log.start(c.INIT_START)
    log.event(c.SEED, seed)
    log.event(c.TRAIN_SAMPLES, dataset[0])
    log.event(c.EVAL_SAMPLES, dataset[1])
    log.event(c.GRADIENT_ACCUMULATION_STEPS, int(hyperparameters.get("gradient_accumulation_steps", 1)))
    logged = {c.SEED, c.TRAIN_SAMPLES, c.EVAL_SAMPLES, c.GRADIENT_ACCUMULATION_STEPS}
    for key, value in hyperparameters.items():
        if key not in logged:
            log.event(key, value)
