"""Launching data-parallel jobs: the torchrun command, the sbatch script, and a torchrun that reports failures plainly.

Every job gets its own rendezvous: on one node torchrun's standalone mode (a free port and a fresh
id), on several nodes the endpoint the user names with an id that is never derived from a path.
`python -m specbench.run.launch TORCHRUN-ARGS` runs torchrun in this process and turns a
failed worker into one line per failed rank and that rank's exit code, instead of a traceback.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specbench.errors import EXIT_INTERRUPTED, UsageError
from specbench.run.options import DEFAULT_RDZV_ID, ExecuteOptions, Slurm

RDZV_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True)
class SbatchJob:
    """An sbatch job of `specbench execute`: its name, its log folder (beside the submission) and its script."""

    name: str
    log_dir: Path
    script: str


def inside_launcher(environ: dict[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    return "TORCHELASTIC_RUN_ID" in env or int(env.get("WORLD_SIZE", "1")) > 1


def rendezvous_args(nnodes: int | str, rdzv_endpoint: str | None, rdzv_id: str = DEFAULT_RDZV_ID) -> list[str]:
    """torchrun's rendezvous: standalone on one node, else c10d at the first node's endpoint."""
    if nnodes == 1:
        return ["--standalone"]
    if not rdzv_endpoint:
        raise UsageError(
            f"--nnodes {nnodes} needs --rdzv-endpoint HOST:PORT of the first node (the same on every node)"
        )
    if not RDZV_ID.match(rdzv_id) and not rdzv_id.startswith("$"):
        raise UsageError(f"--rdzv-id {rdzv_id!r}: expected 1 to 64 letters, digits, '_' or '-'")
    return ["--rdzv-backend=c10d", f"--rdzv-endpoint={rdzv_endpoint}", f"--rdzv-id={rdzv_id}"]


def torchrun_command(
    worker_args: list[str],
    nproc_per_node: int,
    nnodes: int | str = 1,
    rdzv_endpoint: str | None = None,
    rdzv_id: str = DEFAULT_RDZV_ID,
) -> list[str]:
    """torchrun (through this module) running `specbench execute` with `worker_args` on each process."""
    return [
        sys.executable, "-m", "specbench.run.launch",
        f"--nproc-per-node={nproc_per_node}", f"--nnodes={nnodes}",
        *rendezvous_args(nnodes, rdzv_endpoint, rdzv_id),
        "-m", "specbench.cli", "execute", *worker_args,
    ]  # fmt: skip


def torchrun_job(options: ExecuteOptions) -> list[str]:
    """torchrun starting the options' processes on this node, each running `specbench execute` with `to_argv()`."""
    job = options.torchrun
    return torchrun_command(options.to_argv(), job.nproc_per_node, job.nnodes, job.rdzv_endpoint, job.rdzv_id)


def sbatch_job(options: ExecuteOptions, slurm: Slurm) -> SbatchJob:
    """The sbatch job of the options: one torchrun per node, one process per GPU (one on a CPU node)."""
    out = options.out.resolve()
    log_dir = out.parent / f"{out.name}.slurm"
    name = job_name(options.spec)
    script = sbatch_script(
        options.to_argv(), job_name=name, nodes=slurm.nodes, gpus_per_node=slurm.gpus_per_node,
        nproc_per_node=max(1, slurm.gpus_per_node), partition=slurm.partition, time_limit=slurm.time_limit,
        cpus_per_task=slurm.cpus_per_task, log_dir=str(log_dir),
    )  # fmt: skip
    return SbatchJob(name, log_dir, script)


def job_name(spec: str) -> str:
    """A Slurm job and script name from the spec: its id, never a path."""
    stem = Path(spec).stem if spec.endswith((".yaml", ".yml")) else spec
    cleaned = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in stem)
    return f"specbench-{cleaned}"[:64]


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


def failure_lines(failures: dict[int, Any], first: int) -> tuple[list[str], int]:
    """One message per failed rank, the first failure (the cause) first, and the exit code: the cause's."""
    lines: list[str] = []
    code = 1
    for rank in [first, *sorted(r for r in failures if r != first)]:
        failure = failures[rank]
        exitcode = int(getattr(failure, "exitcode", 1))
        where = f"rank {rank} (local rank {getattr(failure, 'local_rank', '?')})"
        if rank != first and exitcode < 0:
            lines.append(f"error: {where} was stopped by {failure.signal_name()} after rank {first} failed")
            continue
        how = f"was killed by {failure.signal_name()}" if exitcode < 0 else f"exited with code {exitcode}"
        lines.append(f"error: {where} {how}; its own message is above")
        if rank == first:
            code = exitcode if exitcode > 0 else 128 - exitcode
    return lines, code


def main(argv: list[str] | None = None) -> int:
    """Run torchrun with `argv` in this process; a failed worker ends the job with its exit code, no traceback."""
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import parse_args, run

    try:
        run(parse_args(argv if argv is not None else sys.argv[1:]))
    except ChildFailedError as err:
        first, _ = err.get_first_failure()
        lines, code = failure_lines(dict(err.failures), first)
        for line in lines:
            print(line, file=sys.stderr)
        return code
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return 0


if __name__ == "__main__":
    sys.exit(main())
