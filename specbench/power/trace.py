"""The power trace on disk: `power.csv` (one row per reading per device) and `power.json` (metadata).

The format is versioned (`format`, `format_version` in power.json) and documented in
docs/power.md. An empty CSV cell means "not measured", never zero.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specbench.power.base import PowerError
from specbench.power.metadata import CSV_NAME, FORMAT, FORMAT_VERSION, JSON_NAME, check_metadata

__all__ = [
    "COLUMNS",
    "CSV_NAME",
    "FORMAT",
    "FORMAT_VERSION",
    "JSON_NAME",
    "MARKS",
    "MAX_INTERVAL_S",
    "MIN_INTERVAL_S",
    "CsvTraceWriter",
    "Sample",
    "write_metadata",
    "write_samples",
]

COLUMNS = (
    "sweep",
    "t_mono_s",
    "t_wall_s",
    "device",
    "power_instant_w",
    "power_average_w",
    "energy_counter_j",
    "read_latency_s",
    "mark",
)
WRITE_CHUNK_ROWS = 4096
MARKS = ("", "start", "stop", "manual")
"""'' for a scheduled reading, 'start'/'stop' for a window edge, 'manual' for `sample_now()`."""
MIN_INTERVAL_S = 0.01
MAX_INTERVAL_S = 60.0
"""The sampling periods the sampler takes (power.json's requested_period_s); here, so that the validator holds a
trace to them without importing the sampler."""


@dataclass(frozen=True)
class Sample:
    """One reading of one device: both clocks, power, the raw energy counter, and the read's latency."""

    sweep: int
    t_mono_s: float
    t_wall_s: float
    device: str
    power_instant_w: float | None
    power_average_w: float | None
    energy_counter_j: float | None
    read_latency_s: float
    mark: str = ""

    def row(self) -> list[str]:
        return [
            str(self.sweep),
            repr(self.t_mono_s),
            repr(self.t_wall_s),
            self.device,
            _cell(self.power_instant_w),
            _cell(self.power_average_w),
            _cell(self.energy_counter_j),
            repr(self.read_latency_s),
            self.mark,
        ]


def _cell(value: float | None) -> str:
    return "" if value is None else repr(value)


class CsvTraceWriter:
    """Streams samples into `power.csv` as they are taken, so a long run needs no memory for them.

    Each `write_rows` call is one unbuffered write of whole lines: a process killed outright
    (SIGKILL, the out-of-memory killer) leaves every row it wrote before, and never half a row.
    """

    def __init__(self, folder: Path, *, append: bool = False) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / CSV_NAME
        mode = os.O_APPEND if append else os.O_TRUNC
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_CREAT | mode, 0o644)
        if not append:
            self._write_text(",".join(COLUMNS) + "\n")

    def write(self, sample: Sample) -> None:
        self.write_rows([sample])

    def write_rows(self, samples: Iterable[Sample]) -> None:
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\n").writerows(s.row() for s in samples)
        self._write_text(buffer.getvalue())

    def _write_text(self, text: str) -> None:
        if self._fd is None:
            raise PowerError(f"{self.path}: the trace writer is closed")
        data = memoryview(text.encode("utf-8"))
        while data:
            data = data[os.write(self._fd, data) :]

    def flush(self) -> None:
        """Nothing to do: every row reaches the operating system when written."""

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def write_metadata(folder: Path, metadata: Mapping[str, Any]) -> Path:
    """Write power.json atomically (a reader never sees half a file), checked against its one model first."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / JSON_NAME
    check_metadata(metadata, str(path))
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(metadata, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def write_samples(folder: Path, samples: Iterable[Sample], *, append: bool = False) -> Path:
    """Write (or append) samples to power.csv, a few thousand rows per write."""
    writer = CsvTraceWriter(folder, append=append)
    try:
        iterator = iter(samples)
        while chunk := list(itertools.islice(iterator, WRITE_CHUNK_ROWS)):
            writer.write_rows(chunk)
    finally:
        writer.close()
    return writer.path
