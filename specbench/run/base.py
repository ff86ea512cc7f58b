"""What every executor provides to the harness."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

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


class Executor(Protocol):
    """One workload. `setup` runs inside init_start..init_stop; `train` calls ctx.run_start() and ctx.run_stop()."""

    name: str
    options: dict[str, Option]
    defaults: dict[str, Any]

    def check(self, resolved: ResolvedSpec, device: str, synthetic: bool, data: Path | None) -> None:
        """Refuse, before anything starts, what this executor cannot run (with the fix in the message)."""

    # Optional: `check_config(resolved, config)` refuses a configuration (after --set) before anything starts;
    # `defaults_for(resolved)` gives the defaults of that spec where they differ from `defaults` (e.g. by optimizer).

    def dataset_facts(
        self, resolved: ResolvedSpec, config: RunConfig, data: Path | None, synthetic: bool
    ) -> dict[str, Any]:
        """Name, path, counts, checksum and synthetic flag of the data a run will use."""
        ...

    def setup(self, ctx: RunContext) -> Any: ...

    def train(self, ctx: RunContext, state: Any) -> RunOutcome: ...
