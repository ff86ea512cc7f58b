"""What `specbench execute` is asked to do, what the harness resolved it to, and how a run can end badly."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specbench.errors import EXIT_INTERRUPTED, EXIT_RUN_FAILED, SpecbenchError, UsageError
from specbench.run.distributed import Dist
from specbench.run.progress import Progress
from specbench.spec.rules import Level

if TYPE_CHECKING:
    from specbench.run.base import Executor
    from specbench.spec.resolve import ResolvedSpec

SEED_MAX = 2**31 - 1
RUNS_MAX = 999999
"""Run folders are run_1 to run_999999 (the validator's bound)."""


class RunInterrupted(SpecbenchError):
    """Ctrl-C, SIGTERM or SIGHUP arrived during a run; `signal_name` names it (recorded in state.json)."""

    exit_code = EXIT_INTERRUPTED

    def __init__(self, message: str, signal_name: str = "SIGINT") -> None:
        super().__init__(message)
        self.signal_name = signal_name


class RunCrashed(SpecbenchError):
    """A run ended with an error; earlier runs are intact."""

    exit_code = EXIT_RUN_FAILED


@dataclass
class ExecuteRequest:
    """What the harness runs in this process: the run's options (`ExecuteOptions.request()` or a caller's), its
    progress line and its place in the job."""

    spec: str
    out: Path
    profile: str = "official"
    level: Level | None = None
    runs: int | None = None
    sets: list[str] = field(default_factory=list)
    data: Path | None = None
    synthetic: bool = False
    device: str = "auto"
    power: str = "auto"
    interval_ms: float = 100.0
    seed: int | None = None
    progress: Progress | None = None
    dist: Dist = field(default_factory=Dist)


@dataclass
class Job:
    """A checked request: the resolved spec, its executor, the device, the roles and the meters of this process."""

    request: ExecuteRequest
    resolved: ResolvedSpec
    executor: Executor
    device: str
    dist: Dist
    org: str
    system: str
    runs_wanted: int
    progress: Progress
    meters: list[Any] = field(default_factory=list)
    unmeasured: str | None = None
    """Why this process measures nothing ('not measured: ...'), or None when `meters` measure."""


def choose_device(requested: str) -> str:
    """`auto` is CUDA when a GPU is visible, else the CPU; `cuda` without a GPU is refused."""
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise UsageError(
            "--device cuda: no CUDA GPU is visible here (torch.cuda.is_available() is False); use --device cpu"
        )
    return requested


def check_seed(seed: int | None) -> int | None:
    """A --seed is a non-negative integer small enough that every run's seed (seed + run - 1) stays an int32."""
    if seed is not None and not 0 <= seed <= SEED_MAX - RUNS_MAX:
        raise UsageError(f"--seed {seed}: expected an integer from 0 to {SEED_MAX - RUNS_MAX}")
    return seed
