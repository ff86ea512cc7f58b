"""`specbench reproduce` as a library call: validate, check the devices, re-run as execute does, judge, record.

Each step refuses with one line before the next starts: a submission that is not compliant, a spec
this installation lacks, a host of other devices, an --out that already holds a reproduction. The
re-run is `specbench execute` with the options plan.py derives (in this process, or through torchrun
for a job of several processes, as execute launches one).
"""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

from specbench.errors import EXIT_NONCOMPLIANT, EXIT_OK, SpecbenchError, UsageError
from specbench.formats.reproduction import REPRODUCTION_FILE, ReproductionRecord
from specbench.reproduce.host import (
    check_cpu_scale,
    check_devices,
    check_gpu_scale,
    device_of,
    this_host,
    usable_cpus,
    visible_gpus,
)
from specbench.reproduce.plan import Plan, RerunRequest, plan_rerun
from specbench.reproduce.source import load_source
from specbench.reproduce.verdict import judge, write_record
from specbench.run.options import ExecuteOptions
from specbench.run.progress import Progress
from specbench.scoring.reproduction import Comparison

DEFAULT_ROOT = Path("reproductions")
"""Where a re-run goes without --out: reproductions/ORG/SYSTEM, the submission's names."""


class RerunFailed(SpecbenchError):
    """The re-run's job ended with an exit code other than 0 (all runs done) or 1 (a run missed its target),
    which reproduce exits with."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class Outcome:
    """The record written, where, the comparison, and the execute command the re-run amounts to."""

    record: ReproductionRecord
    path: Path
    comparison: Comparison
    command: str

    @property
    def exit_code(self) -> int:
        return EXIT_OK if self.record.verdict == "reproduced" else EXIT_NONCOMPLIANT


def reproduce(submission: Path, request: RerunRequest, progress: Progress | None = None) -> Outcome:
    """Re-run the submitted benchmark at `submission` on this host and record the verdict in the re-run's folder."""
    progress = progress or Progress()
    progress.phase(f"validating {submission}...")
    source = load_source(submission)
    out = request.out or DEFAULT_ROOT / source.meta.submitter / source.meta.system
    _check_out(out)
    _check_power(source.entry.value("energy_per_sample_j"), request.power)
    device = device_of(source.hardware)
    if device == "cpu":
        check_cpu_scale(source.processes, usable_cpus())
    progress.phase("loading torch, describing this host...")
    layers = this_host(device, source.processes)
    check_devices(source.hardware, layers["hardware"])
    if device == "cuda":
        check_gpu_scale(source.processes, _count(source.hardware.get("accelerator_count")), visible_gpus())
    plan = plan_rerun(source, request, out, device)
    command = execute_command(plan.options)
    progress.message(f"re-running {source.root / source.bench.name} as: {command}")
    for note in (*plan.notes, f"seeds: {plan.seeds.note}"):
        progress.message(f"  {note}")
    run_plan(plan)
    progress.phase(f"validating the re-run {out}...")
    record, comparison = judge(source, plan, layers)
    return Outcome(record, write_record(out, record), comparison, command)


def _count(value: object) -> int:
    """A count from system.yaml: the integer itself, else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _check_out(out: Path) -> None:
    """A folder that holds a finished reproduction is never re-used (execute checks the rest of --out)."""
    if (out / REPRODUCTION_FILE).exists():
        raise UsageError(f"--out {out} already holds {REPRODUCTION_FILE}; give a new folder for another reproduction")


def _check_power(claimed_energy: float | None, power: str) -> None:
    """A claim of energy is settled only by a re-run that measures energy."""
    if claimed_energy is not None and power == "none":
        raise UsageError(
            "--power none: the submission measured energy, so its reproduction must too; leave --power at auto "
            "or name the meters"
        )


def execute_command(options: ExecuteOptions) -> str:
    """The `specbench execute` command line the re-run amounts to (absolute paths), to show and to repeat."""
    launch = ["--nproc-per-node", str(options.torchrun.nproc_per_node)] if options.torchrun.several else []
    return shlex.join(["specbench", "execute", *options.to_argv(), *launch])


def run_plan(plan: Plan) -> None:
    """Execute the re-run here, or through torchrun for several processes; raise unless every run ended."""
    options = plan.options
    if options.torchrun.several:
        from specbench.run.launch import torchrun_job

        code = subprocess.call(torchrun_job(options))
    else:
        from specbench.run.harness import execute

        code = execute(options.request())
    if code not in (EXIT_OK, EXIT_NONCOMPLIANT):
        raise RerunFailed(f"the re-run into {options.out} ended with exit code {code}; no verdict recorded", code)
