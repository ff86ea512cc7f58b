"""Data-parallel runs on PyTorch's own runtime: torchrun launches, torch.distributed communicates.

Roles: global rank 0 writes the submission (log, results, manifest); local rank 0 of each node
owns that node's power meters, so every device is measured exactly once; the other ranks train.
"""

from __future__ import annotations

import os
import shlex
import sys
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


def inside_launcher(environ: dict[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    return "TORCHELASTIC_RUN_ID" in env or int(env.get("WORLD_SIZE", "1")) > 1


def torchrun_command(
    worker_args: list[str], nproc_per_node: int, nnodes: int | str, rdzv_endpoint: str, rdzv_id: str
) -> list[str]:
    """torchrun (torch.distributed.run) running `specbench execute` with `worker_args` on each process."""
    return [
        sys.executable, "-m", "torch.distributed.run",
        f"--nproc-per-node={nproc_per_node}", f"--nnodes={nnodes}",
        "--rdzv-backend=c10d", f"--rdzv-endpoint={rdzv_endpoint}", f"--rdzv-id={rdzv_id}",
        "-m", "specbench.cli", "execute", *worker_args,
    ]  # fmt: skip


def sbatch_script(
    worker_args: list[str],
    *,
    job_name: str,
    nodes: int,
    gpus_per_node: int,
    nproc_per_node: int,
    partition: str | None,
    time_limit: str | None,
    cpus_per_task: int | None,
    log_dir: str,
    port: int = 29500,
) -> str:
    """An sbatch script: one srun task per node, each starting torchrun with `nproc_per_node` workers."""
    lines = [
        "#!/bin/bash",
        f"#SBATCH --job-name={job_name}",
        f"#SBATCH --nodes={nodes}",
        "#SBATCH --ntasks-per-node=1",
        f"#SBATCH --output={log_dir}/%x-%j.out",
    ]
    if gpus_per_node:
        lines.append(f"#SBATCH --gpus-per-node={gpus_per_node}")
    if cpus_per_task:
        lines.append(f"#SBATCH --cpus-per-task={cpus_per_task}")
    if partition:
        lines.append(f"#SBATCH --partition={partition}")
    if time_limit:
        lines.append(f"#SBATCH --time={time_limit}")
    command = torchrun_command(worker_args, nproc_per_node, "$SLURM_NNODES", "$HEAD:" + str(port), "$SLURM_JOB_ID")
    quoted = " ".join(part if part.startswith(("$", "--nnodes=$", "--rdzv")) else shlex.quote(part) for part in command)
    lines += [
        "set -euo pipefail",
        'HEAD=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
        "export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}",
        f"srun --kill-on-bad-exit=1 {quoted}",
        "",
    ]
    return "\n".join(lines)
