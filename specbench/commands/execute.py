"""`specbench execute`: run a spec on this machine (or through torchrun or Slurm) into a submission folder."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import click

from specbench.spec.rules import LEVELS


def default_out() -> Path:
    host = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in socket.gethostname())[:64] or "localhost"
    return Path("submissions") / "local" / host


def worker_args(
    spec: str, profile: str, level: str | None, runs: int | None, out: Path, sets: tuple[str, ...],
    data: Path | None, synthetic: bool, device: str, power: str, interval_ms: float, seed: int | None = None,
) -> list[str]:  # fmt: skip
    """The `specbench execute` arguments each process of a launched job runs with (absolute paths)."""
    spec_path = Path(spec)
    args = [str(spec_path.resolve()) if spec_path.is_file() else spec, "--profile", profile]
    args += ["--out", str(out.resolve()), "--device", device, "--power", power, "--interval-ms", repr(interval_ms)]
    if level:
        args += ["--level", level]
    if runs:
        args += ["--runs", str(runs)]
    if seed is not None:
        args += ["--seed", str(seed)]
    for item in sets:
        args += ["--set", item]
    if data is not None:
        args += ["--data", str(data.resolve())]
    if synthetic:
        args.append("--synthetic")
    return args


@click.command(
    name="execute",
    epilog="""\b
Exit codes: 0 every run reached its target (or completed, for throughput);
1 a run failed to reach its target; 2 unusable spec, options or data;
3 a run crashed (out of memory, ...); 130 interrupted. Runs already in
--out are kept and counted: executing again continues with the next run.
With --nproc-per-node or --nnodes the exit code is that of the first
process that failed (each failed process is named in one line).
See docs/execute.md and docs/distributed.md.""",
)
@click.argument("spec")
@click.option("--profile", default="official", show_default=True, help="Profile: official, smoke, ...")
@click.option(
    "--level", type=click.Choice(LEVELS), default=None, help="Benchmarking level [default: the spec's first]."
)
@click.option(
    "--runs", type=click.IntRange(min=1), default=None, help="Completed runs wanted [default: the spec's count]."
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Submission folder ORG/SYSTEM [default: submissions/local/<hostname>].",
)
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a hyperparameter or executor option; KEY=V1,V2 sweeps, each value its own result.",
)
@click.option(
    "--data",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Dataset folder (ImageNet: train/ and val/ in ImageFolder layout).",
)
@click.option(
    "--synthetic", is_flag=True, help="Random tensors on the device (throughput only; never ranked for quality)."
)
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True)
@click.option(
    "--power",
    default="auto",
    show_default=True,
    metavar="auto|none|nvml,rapl,...",
    help="Power meters; 'none' runs unmeasured (the result says so and is not ranked per watt).",
)
@click.option(
    "--interval-ms", type=click.FloatRange(10, 60000), default=100.0, show_default=True, help="Power sampling period."
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=None,
    help="Seed of the runs: run N uses SEED + N - 1 (recorded in submission.yaml) [default: a fresh random seed "
    "per run].",
)
@click.option(
    "--nproc-per-node",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Data-parallel processes per node, launched with torchrun (one per GPU; gloo on CPUs).",
)
@click.option(
    "--nnodes",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Nodes of a torchrun job (start the same command on each node).",
)
@click.option(
    "--rdzv-endpoint",
    default=None,
    metavar="HOST:PORT",
    help="Several nodes: torchrun's rendezvous on the first node, the same on every node [one node: torchrun "
    "--standalone picks a free port].",
)
@click.option(
    "--rdzv-id",
    default="specbench",
    show_default=True,
    help="Several nodes: the job's rendezvous id, the same on every node.",
)
@click.option("--slurm", is_flag=True, help="Write an sbatch script (srun + torchrun) and submit it with sbatch.")
@click.option("--nodes", type=click.IntRange(min=1), default=1, show_default=True, help="Slurm: nodes.")
@click.option(
    "--gpus-per-node",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Slurm: GPUs per node (0 for a CPU job).",
)
@click.option("--partition", default=None, help="Slurm: partition.")
@click.option("--time", "time_limit", default=None, help="Slurm: time limit, e.g. 01:00:00.")
@click.option("--cpus-per-task", type=click.IntRange(min=1), default=None, help="Slurm: CPUs per node task.")
@click.option("--dry-run", is_flag=True, help="Slurm: print the sbatch script instead of submitting it.")
@click.option("--wait", is_flag=True, help="Slurm: block until the job ends (sbatch --wait) and exit with its code.")
def command(
    spec: str, profile: str, level: str | None, runs: int | None, out: Path | None, sets: tuple[str, ...],
    data: Path | None, synthetic: bool, device: str, power: str, interval_ms: float, seed: int | None,
    nproc_per_node: int, nnodes: int, rdzv_endpoint: str | None, rdzv_id: str, slurm: bool, nodes: int,
    gpus_per_node: int, partition: str | None, time_limit: str | None, cpus_per_task: int | None, dry_run: bool,
    wait: bool,
) -> None:  # fmt: skip
    """Run SPEC (a file or a built-in id) and write a submission folder.

    The spec, profile, level and every --set are checked against the level's rules
    before anything starts. Each run gets its own folder with the MLLOG log, the
    power trace and result.json; system.yaml, submission.yaml and manifest.json
    describe the machine, the configuration and every file's sha256.

    \b
    Examples:
      specbench execute resnet50 --profile smoke            # the embedded default, CPU
      specbench execute llm-gpt --profile smoke --seed 7    # replayable: run 1 uses seed 7
      specbench execute caraml-resnet50 --nproc-per-node 8  # 8 GPUs, DDP over NCCL
      specbench execute caraml-resnet50 --slurm --nodes 2 --gpus-per-node 4 --dry-run
    """
    from specbench.run import launch

    target = out or default_out()
    args = worker_args(spec, profile, level, runs, target, sets, data, synthetic, device, power, interval_ms, seed)
    if slurm:
        raise click.exceptions.Exit(
            _slurm(args, spec, target, nodes, gpus_per_node, partition, time_limit, cpus_per_task, dry_run, wait)
        )
    if (nproc_per_node > 1 or nnodes > 1) and not launch.inside_launcher():
        command = launch.torchrun_command(args, nproc_per_node, nnodes, rdzv_endpoint, rdzv_id)
        click.echo("launching: " + " ".join(command), err=True)
        raise click.exceptions.Exit(subprocess.call(command))
    from specbench.run.harness import ExecuteRequest, execute

    request = ExecuteRequest(
        spec=spec, out=target, profile=profile, level=level, runs=runs,  # type: ignore[arg-type]
        sets=list(sets), data=data, synthetic=synthetic, device=device, power=power, interval_ms=interval_ms,
        seed=seed,
    )  # fmt: skip
    code = execute(request)
    if request.dist.writer:
        click.echo(f"submission: {request.out}", err=True)
    raise click.exceptions.Exit(code)


def _slurm(
    args: list[str], spec: str, out: Path, nodes: int, gpus_per_node: int, partition: str | None,
    time_limit: str | None, cpus_per_task: int | None, dry_run: bool, wait: bool,
) -> int:  # fmt: skip
    from specbench.files import atomic_write_text
    from specbench.run import launch

    nproc = max(1, gpus_per_node)
    log_dir = out.resolve().parent / f"{out.resolve().name}.slurm"  # beside the submission, not inside it
    name = _job_name(spec)
    script = launch.sbatch_script(
        args, job_name=name, nodes=nodes, gpus_per_node=gpus_per_node, nproc_per_node=nproc,
        partition=partition, time_limit=time_limit, cpus_per_task=cpus_per_task, log_dir=str(log_dir),
    )  # fmt: skip
    if dry_run:
        click.echo(script, nl=False)
        return 0
    log_dir.mkdir(parents=True, exist_ok=True)
    path = log_dir / f"{name}.sbatch"
    atomic_write_text(path, script)
    submit = ["sbatch", "--parsable", *(["--wait"] if wait else []), str(path)]
    click.echo(f"wrote {path}; submitting: {' '.join(submit)}", err=True)
    try:
        proc = subprocess.run(submit, capture_output=True, text=True)
    except FileNotFoundError:
        from specbench.errors import UsageError

        raise UsageError("sbatch not found: run on a Slurm login node, or use --dry-run to print the script") from None
    sys.stderr.write(proc.stderr)
    job = proc.stdout.strip().split(";")[0]
    if job:
        click.echo(f"job {job}: output in {log_dir}", err=True)
    return proc.returncode


def _job_name(spec: str) -> str:
    """A Slurm job and script name from the spec: its id, never a path."""
    stem = Path(spec).stem if spec.endswith((".yaml", ".yml")) else spec
    cleaned = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in stem)
    return f"specbench-{cleaned}"[:64]
