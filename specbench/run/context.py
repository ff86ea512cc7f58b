"""What an executor gets for one run, and the calls it makes at the run's edges (run_start, run_stop)."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specbench.accounting.quality import meets
from specbench.clock import wall_s
from specbench.run.config import RunConfig
from specbench.run.distributed import Dist
from specbench.run.mllog import NullLog, RunLog
from specbench.run.progress import Progress
from specbench.spec.resolve import ResolvedSpec
from specbench.spec.result import QualityPoint

Checkpoint = Callable[..., None]


def _no_checkpoint(**progress: Any) -> None:
    """For contexts without a run folder (tests, other ranks)."""


@dataclass
class RunContext:
    """One run's spec, configuration, device, seed, log and power window; the executor calls its edges.

    `run_start()` and `run_stop()` synchronize the device and every rank, then open or close the
    power window and log the edge. `checkpoint` records what the run has done so far in state.json,
    always before the log line that states it, so a killed run's state never lags its log.
    """

    resolved: ResolvedSpec
    config: RunConfig
    device: str
    seed: int
    run_dir: Path
    log: RunLog | NullLog
    progress: Progress
    data: Path | None
    synthetic: bool
    sync: Callable[[], None]
    sampler: Any
    dist: Dist = field(default_factory=Dist)
    checkpoint: Checkpoint = _no_checkpoint
    started_wall: float | None = None
    started_mono: float | None = None
    stopped_mono: float | None = None
    stop_status: str | None = None
    curve: list[QualityPoint] = field(default_factory=list)
    window: Any = None

    @property
    def hyperparameters(self) -> dict[str, Any]:
        return self.config.hyperparameters

    @property
    def settings(self) -> dict[str, Any]:
        return self.config.settings

    def run_start(self) -> None:
        """Synchronize every rank, open the power window, log run_start."""
        self.sync()
        self.dist.barrier()
        if self.sampler is not None:
            self.sampler.window_start()
        self.started_mono = time.monotonic()
        self.started_wall = wall_s()
        self.checkpoint(phase="training", run_start_wall=self.started_wall)  # before the log: no orphan line
        self.log.start(self.log.constants.RUN_START, time_ms=int(self.started_wall * 1000))
        self.progress.start_clock()

    def run_stop(self, success: bool) -> None:
        """Synchronize every rank, close the power window, log run_stop with its status."""
        self.sync()
        self.dist.barrier()
        self._stop(success)

    def abort(self) -> None:
        """Close the window and log run_stop 'aborted' after a failure, without waiting for the other ranks.

        A failed rank must not enter a collective that the others may never reach: it ends at once
        and torchrun stops the job.
        """
        if self.started_mono is None or self.stop_status is not None:
            return
        with suppress(Exception):
            self.sync()
        self._stop(False, tolerant=True)

    def _stop(self, success: bool, tolerant: bool = False) -> None:
        if self.sampler is not None:
            try:
                self.window = self.sampler.window_stop()
            except Exception:
                if not tolerant:
                    raise  # after a failure a meter that fails too leaves the run without a window
        self.stopped_mono = time.monotonic()
        self.stop_status = "success" if success else "aborted"
        self.log.end(
            self.log.constants.RUN_STOP,
            metadata={"status": self.stop_status},
            time_ms=int((self.started_wall or 0) * 1000 + (self.stopped_mono - (self.started_mono or 0)) * 1000),
        )

    def elapsed_s(self) -> float:
        return time.monotonic() - (self.started_mono or time.monotonic())

    def evaluated(self, *, epoch: float, step: int, samples: int, value: float) -> bool:
        """Log one evaluation; True when the spec's target is reached."""
        quality = self.resolved.spec.quality
        assert quality is not None
        self.curve.append(QualityPoint(epoch=epoch, step=step, samples=samples, value=value, t_s=self.elapsed_s()))
        self.checkpoint(curve=[p.model_dump(mode="json") for p in self.curve])
        self.log.event(
            self.log.constants.EVAL_ACCURACY,
            value=value,
            metadata={"epoch_num": epoch, "samples_count": samples, "metric": quality.metric},
        )
        return meets(value, quality.target, quality.direction)

    def power_now_w(self) -> float | None:
        """The latest power of this node's devices, summed, for progress lines (None when unmeasured)."""
        return self.sampler.latest_power_w() if self.sampler is not None else None
