"""What every executor provides to the harness: the Executor base class and the RunOutcome of its training."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from specbench.run.config import Option, RunConfig
from specbench.spec.resolve import ResolvedSpec
from specbench.spec.result import ThroughputResult

if TYPE_CHECKING:
    from specbench.run.context import RunContext


@dataclass
class RunOutcome:
    """What training did: samples and steps processed, whether the target was reached."""

    status: Literal["success", "failed"]
    samples: int
    steps: int
    epochs: float
    reached: bool = False
    reason: str | None = None
    throughput: ThroughputResult | None = None


class Executor(ABC):
    """One workload, one instance per job (the registry makes a fresh one), so nothing carries over between jobs.

    The harness calls `check` first, then `defaults_for`, and `check_config` for each configuration, before anything
    starts, `dataset_facts` per configuration, and per run `setup` (inside init_start..init_stop) and `train`
    (which calls ctx.run_start() and ctx.run_stop()).
    """

    name: ClassVar[str]
    options: ClassVar[dict[str, Option]] = {}
    defaults: ClassVar[dict[str, Any]] = {}

    @abstractmethod
    def check(self, resolved: ResolvedSpec, device: str, synthetic: bool, data: Path | None) -> None:
        """Refuse, before anything starts, what this executor cannot run (with the fix in the message)."""

    def defaults_for(self, resolved: ResolvedSpec) -> dict[str, Any]:
        """The hyperparameters used where `resolved` states none (by default the executor's `defaults`)."""
        return self.defaults

    def check_config(self, resolved: ResolvedSpec, config: RunConfig) -> None:  # noqa: B027 (an optional hook)
        """Refuse a configuration (after --set) before anything starts; by default every one is accepted."""

    @abstractmethod
    def dataset_facts(
        self, resolved: ResolvedSpec, config: RunConfig, data: Path | None, synthetic: bool
    ) -> dict[str, Any]:
        """Name, path, counts, checksum and synthetic flag of the data a run will use."""

    @abstractmethod
    def setup(self, ctx: RunContext) -> Any:
        """Build the model, optimizer and data of one run (and warm up); the state `train` takes."""

    @abstractmethod
    def train(self, ctx: RunContext, state: Any) -> RunOutcome:
        """Train one run between ctx.run_start() and ctx.run_stop()."""
