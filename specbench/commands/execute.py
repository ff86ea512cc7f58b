"""`specbench execute`: run a spec on this machine (or through torchrun or Slurm) into a submission folder."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from specbench.commands.options import interval_ms_option
from specbench.errors import SpecbenchError, UsageError
from specbench.files import atomic_write_text

if TYPE_CHECKING:
    from specbench.run import launch
    from specbench.run.options import ExecuteOptions, Slurm

LEVELS = ("hardware", "system", "free")
"""specbench.spec.rules.LEVELS, and below run.options' DEFAULT_RDZV_ID: written out so that this module loads
nothing heavy (pydantic, the specs) before the command says what it does (tests/test_startup.py keeps them equal)."""
DEFAULT_RDZV_ID = "specbench"


@click.command(
    name="execute",
    epilog="""\b
Exit codes: 0 every run reached its target (or completed, for throughput);
1 a run failed to reach its target; 2 unusable spec, options or data;
3 internal error (a bug); 4 a run crashed (out of memory, an exception
in the training; details in run_N/error.txt); 130 interrupted. Runs
in --out that ended are kept and counted; a run stopped by a signal
(Ctrl-C, SIGTERM, SIGKILL) is run again under its number.
With --nproc-per-node or --nnodes the exit code is that of the first
process that failed (each failed process is named in one line).
See docs/execute.md and docs/distributed.md.""",
)
@click.argument("spec")
@click.option("--profile", "-p", default="official", show_default=True, help="Profile: official, smoke, ...")
@click.option(
    "--level", "-l", type=click.Choice(LEVELS), default=None, help="Benchmarking level [default: the spec's first]."
)
@click.option(
    "--runs", type=click.IntRange(min=1), default=None, help="Runs the folder should hold [default: the spec's count]."
)
@click.option(
    "--out",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Submission folder ORG/SYSTEM: its last two names are the submitter and the system "
    "[default: submissions/local/<hostname>].",
)
@click.option(
    "--set",
    "-s",
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
@click.option("--device", "-d", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True)
@click.option(
    "--power",
    "-m",
    default="auto",
    show_default=True,
    metavar="auto|none|nvml,rapl,...",
    help="Power meters; 'none' runs unmeasured (the result says so and is not ranked per watt).",
)
@interval_ms_option
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
    default=DEFAULT_RDZV_ID,
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
def command(**params: Any) -> None:
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
    announce(startup_line(params))
    out = Path(params["out"]) if params["out"] else None
    held = _contents(out)
    phase = "checking the spec and --out"
    try:
        from specbench.run import launch
        from specbench.run.options import ExecuteOptions

        options = ExecuteOptions.from_params(params)
        out, held = options.out, _contents(options.out)
        check_before_launch(options)
        if options.slurm is not None:
            raise click.exceptions.Exit(_submit(launch.sbatch_job(options, options.slurm), options.slurm))
        if options.torchrun.several and not launch.inside_launcher():
            torchrun = launch.torchrun_job(options)
            click.echo("launching: " + " ".join(torchrun), err=True)
            raise click.exceptions.Exit(subprocess.call(torchrun))
        if importlib.util.find_spec("torch") is not None:
            phase = "loading torch"
            announce("loading torch...")
            import torch  # noqa: F401  (here, so that the wait is announced; the harness finds it loaded)
        phase = "loading the workload, checking the configuration, describing this machine"
        announce(f"{phase}...")
        from specbench.run.harness import execute

        request = options.request()
        code = execute(request)
    except KeyboardInterrupt:
        raise _interrupted(phase, out, held) from None
    if request.dist.writer:
        click.echo(f"submission: {request.out}", err=True)
    raise click.exceptions.Exit(code)


def _contents(out: Path | None) -> set[str] | None:
    """The paths under --out (relative), or None where it does not exist: what an interrupted start-up left there."""
    if out is None or not out.is_dir():
        return None
    return {str(path.relative_to(out)) for path in out.rglob("*")}


def _interrupted(phase: str, out: Path | None, held: set[str] | None) -> SpecbenchError:
    """Ctrl-C before any run started (a run's own interrupt is the harness's): what was interrupted, and what --out
    holds now."""
    from specbench.run.request import RunInterrupted

    now = _contents(out)
    written = sorted((now or set()) - (held or set()))
    if out is None or (now is None and held is None):
        kept = "nothing was written" + (f" ({out} was not created)" if out is not None else "")
    elif not written:
        kept = f"nothing was written; {out} keeps what it held"
    else:
        before = f"{out} keeps what it held, and" if held is not None else f"{out} holds only what was"
        kept = f"{before} written before the interrupt: {', '.join(written[:5])}" + (" ..." if len(written) > 5 else "")
    return RunInterrupted(f"interrupted by Ctrl-C (SIGINT) while {phase}, before any run started: {kept}")


def check_before_launch(options: ExecuteOptions) -> None:
    """What needs no torch, checked once before any launch: --out's two names, and the profile against the spec's
    own rules (a torchrun or Slurm job would otherwise fail in every process)."""
    from specbench.run.runfolder import org_system
    from specbench.spec.loader import load_spec
    from specbench.spec.resolve import check_profile, resolve

    org_system(options.out)
    check_profile(resolve(load_spec(options.spec), options.profile, options.level))


def startup_line(params: dict[str, Any]) -> str:
    """What is about to run, from the command line alone (nothing loaded yet)."""
    level = params["level"] or "the spec's first"
    return f"specbench execute: spec {params['spec']}, profile {params['profile']}, level {level}, device {params['device']}"


def announce(text: str) -> None:
    """A start-up line on a terminal (`Progress.phase`), from the first process of a job only."""
    from specbench.run.progress import Progress

    Progress(quiet=os.environ.get("RANK", "0") != "0").phase(text)


def _submit(job: launch.SbatchJob, slurm: Slurm) -> int:
    """Print the sbatch script (--dry-run), or write it beside the submission and submit it; sbatch's exit code."""
    if slurm.dry_run:
        click.echo(job.script, nl=False)
        return 0
    job.log_dir.mkdir(parents=True, exist_ok=True)
    path = job.log_dir / f"{job.name}.sbatch"
    atomic_write_text(path, job.script)
    submit = ["sbatch", "--parsable", *(["--wait"] if slurm.wait else []), str(path)]
    click.echo(f"wrote {path}; submitting: {' '.join(submit)}", err=True)
    try:
        proc = subprocess.run(submit, capture_output=True, text=True)
    except FileNotFoundError:
        raise UsageError("sbatch not found: run on a Slurm login node, or use --dry-run to print the script") from None
    sys.stderr.write(proc.stderr)
    job_id = proc.stdout.strip().split(";")[0]
    if job_id:
        click.echo(f"job {job_id}: output in {job.log_dir}", err=True)
    return proc.returncode
