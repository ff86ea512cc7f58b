"""The options of one `specbench execute`, built once from the command line, and the arguments they give each worker.

A launched job (torchrun, Slurm) runs `specbench execute` again in each of its processes, with
`ExecuteOptions.to_argv()`: the run's own options, paths made absolute, the launch options left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from specbench.host import host
from specbench.run.progress import Progress
from specbench.run.request import ExecuteRequest
from specbench.spec.rules import Level

DEFAULT_RDZV_ID = "specbench"


def default_out() -> Path:
    """submissions/local/<hostname>: where a run goes when --out names no folder."""
    return Path("submissions") / "local" / host().safe_name


@dataclass(frozen=True)
class Torchrun:
    """The processes torchrun starts on each node, the nodes, and where they meet."""

    nproc_per_node: int = 1
    nnodes: int = 1
    rdzv_endpoint: str | None = None
    rdzv_id: str = DEFAULT_RDZV_ID

    @property
    def several(self) -> bool:
        """Whether the job has more than one process (and so goes through torchrun)."""
        return self.nproc_per_node > 1 or self.nnodes > 1


@dataclass(frozen=True)
class Slurm:
    """The sbatch job: its nodes and GPUs, partition and limits; print it or submit it (and wait)."""

    nodes: int = 1
    gpus_per_node: int = 0
    partition: str | None = None
    time_limit: str | None = None
    cpus_per_task: int | None = None
    dry_run: bool = False
    wait: bool = False


@dataclass(frozen=True)
class ExecuteOptions:
    """What to run (spec, profile, level, runs, overrides, data, device, power, seed), where, and how to launch it."""

    spec: str
    out: Path
    profile: str = "official"
    level: Level | None = None
    runs: int | None = None
    sets: tuple[str, ...] = ()
    data: Path | None = None
    synthetic: bool = False
    device: str = "auto"
    power: str = "auto"
    interval_ms: float = 100.0
    seed: int | None = None
    torchrun: Torchrun = field(default_factory=Torchrun)
    slurm: Slurm | None = None
    """None runs here (or through torchrun); a Slurm writes an sbatch script instead."""

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> ExecuteOptions:
        """The options from the command's parameters (click's names), --out defaulting to `default_out()`."""
        return cls(
            **_pick(cls, params, exclude={"out", "sets", "torchrun", "slurm"}),
            out=params["out"] or default_out(),
            sets=tuple(params["sets"]),
            torchrun=Torchrun(**_pick(Torchrun, params)),
            slurm=Slurm(**_pick(Slurm, params)) if params["slurm"] else None,
        )

    def to_argv(self) -> list[str]:
        """The `specbench execute` arguments each process of a launched job runs with (absolute paths)."""
        spec_path = Path(self.spec)
        args = [str(spec_path.resolve()) if spec_path.is_file() else self.spec, "--profile", self.profile]
        args += ["--out", str(self.out.resolve()), "--device", self.device, "--power", self.power]
        args += ["--interval-ms", repr(self.interval_ms)]
        if self.level:
            args += ["--level", self.level]
        if self.runs:
            args += ["--runs", str(self.runs)]
        if self.seed is not None:
            args += ["--seed", str(self.seed)]
        for item in self.sets:
            args += ["--set", item]
        if self.data is not None:
            args += ["--data", str(self.data.resolve())]
        if self.synthetic:
            args.append("--synthetic")
        return args

    def request(self, progress: Progress | None = None) -> ExecuteRequest:
        """The harness's request for this process's share of the job."""
        return ExecuteRequest(
            spec=self.spec, out=self.out, profile=self.profile, level=self.level, runs=self.runs, sets=list(self.sets),
            data=self.data, synthetic=self.synthetic, device=self.device, power=self.power,
            interval_ms=self.interval_ms, seed=self.seed, progress=progress,
        )  # fmt: skip


def _pick(cls: type, params: Mapping[str, Any], exclude: set[str] | None = None) -> dict[str, Any]:
    """The parameters that are fields of the dataclass `cls`, by name."""
    return {f.name: params[f.name] for f in fields(cls) if f.name not in (exclude or set())}
