"""Data-parallel runs on PyTorch's own runtime: torch.distributed communicates (launch.py starts the job).

Roles: global rank 0 writes the submission (log, results, manifest); local rank 0 of each node
owns that node's power meters, so every device is measured exactly once; the other ranks train.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Dist:
    """This process's place in the job (from torchrun's environment)."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0
    local_world: int = 1
    node: int = 0

    @property
    def active(self) -> bool:
        return self.world > 1

    @property
    def writer(self) -> bool:
        return self.rank == 0

    @property
    def owner(self) -> bool:
        """Whether this process measures its node's devices."""
        return self.local_rank == 0

    @property
    def nnodes(self) -> int:
        return max(1, self.world // max(1, self.local_world))

    def barrier(self) -> None:
        if self.active:
            import torch.distributed as td

            td.barrier()

    def broadcast(self, value: Any) -> Any:
        """Rank 0's value, on every rank."""
        if not self.active:
            return value
        import torch.distributed as td

        box = [value]
        td.broadcast_object_list(box, src=0)
        return box[0]

    def gather(self, value: Any) -> list[Any] | None:
        """Every rank's value, in rank order, on rank 0 (None elsewhere)."""
        if not self.active:
            return [value]
        import torch.distributed as td

        out: list[Any] | None = [None] * self.world if self.writer else None
        td.gather_object(value, out, dst=0)
        return out

    def all_sum(self, values: list[float]) -> list[float]:
        if not self.active:
            return values
        import torch
        import torch.distributed as td

        device = (
            torch.device("cuda", torch.cuda.current_device()) if td.get_backend() == "nccl" else torch.device("cpu")
        )
        tensor = torch.tensor(values, dtype=torch.float64, device=device)
        td.all_reduce(tensor)
        return [float(v) for v in tensor.tolist()]


def from_env(environ: dict[str, str] | None = None) -> Dist:
    env = os.environ if environ is None else environ
    world = int(env.get("WORLD_SIZE", "1"))
    if world <= 1:
        return Dist()
    return Dist(
        rank=int(env["RANK"]),
        world=world,
        local_rank=int(env.get("LOCAL_RANK", "0")),
        local_world=int(env.get("LOCAL_WORLD_SIZE", str(world))),
        node=int(env.get("GROUP_RANK", "0")),
    )


def init(dist: Dist, device: str) -> None:
    """Join the process group: NCCL on GPUs, gloo on CPUs."""
    if not dist.active:
        return
    import torch
    import torch.distributed as td

    if device == "cuda":
        torch.cuda.set_device(dist.local_rank)
    if not td.is_initialized():
        td.init_process_group(backend="nccl" if device == "cuda" else "gloo")


def shutdown(dist: Dist) -> None:
    if dist.active:
        import torch.distributed as td

        if td.is_initialized():
            td.destroy_process_group()
