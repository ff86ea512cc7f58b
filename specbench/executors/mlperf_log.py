"""MLLOG output of one run through mlperf-logging's `mllog`, with MLPerf's keys where they exist."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from specbench.errors import SpecbenchError


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
        return int(time.time() * 1000)

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
        return int(time.time() * 1000)

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
