"""The run harness shared by every executor: from a spec to a submission folder.

`execute` resolves spec, profile, level and overrides and checks what --out holds (before anything
starts), captures the system (sysinfo), prepares each benchmark folder and resumes it (runfolder), and runs
one run after another (lifecycle), each with its log, power window and result (result). The
request and the checked job are in request.py; launching several processes is in launch.py.
"""

from __future__ import annotations

from typing import Any

from specbench.errors import EXIT_INTERRUPTED, EXIT_NONCOMPLIANT, EXIT_RUN_FAILED, UsageError
from specbench.files import write_manifest
from specbench.run.config import RunConfig, build_configs
from specbench.run.distributed import from_env as dist_from_env
from specbench.run.distributed import init as dist_init
from specbench.run.distributed import shutdown as dist_shutdown
from specbench.run.executors import get_executor
from specbench.run.lifecycle import run_once
from specbench.run.progress import Progress
from specbench.run.request import (
    ExecuteRequest,
    Job,
    RunCrashed,
    RunInterrupted,
    check_seed,
    choose_device,
)
from specbench.run.runfolder import Resume, check_out, org_system, prepare_benchmark, run_seed
from specbench.run.runpower import open_run_meters
from specbench.run.sysinfo import describe_job, write_system
from specbench.spec.loader import load_spec
from specbench.spec.resolve import ResolvedSpec, resolve
from specbench.spec.system import SubmissionMeta

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_RUN_FAILED",
    "ExecuteRequest",
    "RunCrashed",
    "RunInterrupted",
    "execute",
    "plan",
]


def plan(request: ExecuteRequest) -> tuple[Job, list[RunConfig]]:
    """Check everything that can be checked before a process group or a meter exists; the job and its configurations."""
    resolved = resolve(load_spec(request.spec), request.profile, request.level)
    executor = get_executor(resolved.spec.workload.executor)
    device = choose_device(request.device)
    check_seed(request.seed)
    dist = request.dist if request.dist.active else dist_from_env()
    request.dist = dist
    executor.check(resolved, device, request.synthetic, request.data)
    configs = build_configs(resolved, executor.options, request.sets, device, executor.defaults_for(resolved))
    for config in configs:
        executor.check_config(resolved, config)
        batch = config.hyperparameters.get("global_batch_size")
        if dist.world > 1 and isinstance(batch, int) and batch % dist.world:
            raise UsageError(
                f"global_batch_size {batch} does not split evenly over {dist.world} processes; choose a multiple of {dist.world}"
            )
    org, system = org_system(request.out)
    check_out(
        request.out, org, system, {f"{resolved.spec.id}{c.suffix}": planned_meta(request, resolved, c) for c in configs}
    )
    progress = request.progress or (Progress() if dist.writer else Progress(quiet=True))
    runs_wanted = request.runs or resolved.spec.measurement.runs.count
    job = Job(request, resolved, executor, device, dist, org, system, runs_wanted, progress)
    return job, configs


def planned_meta(request: ExecuteRequest, resolved: ResolvedSpec, config: RunConfig) -> dict[str, Any]:
    """The submission.yaml keys of a configuration known before a run starts (what an existing folder must match)."""
    spec = resolved.spec
    return {
        "spec_id": spec.id, "spec_version": spec.version, "spec_sha256": resolved.digest, "profile": resolved.profile,
        "level": resolved.level, "seed": request.seed, "hyperparameters": config.hyperparameters,
        "layers": config.layers(),
    }  # fmt: skip


def execute(request: ExecuteRequest) -> int:
    """Run a spec into a submission folder; returns the exit code (on every rank of a distributed run)."""
    job, configs = plan(request)
    dist = job.dist
    dist_init(dist, job.device)
    failed = False
    try:
        job.unmeasured = "not measured: this rank does not own the node's devices"
        if dist.owner:
            required = job.resolved.spec.measurement.power.required and job.resolved.ranked
            job.meters, job.unmeasured = open_run_meters(request.power, required)
        return _execute_all(job, configs)
    except BaseException:
        failed = True
        raise
    finally:
        if not (failed and dist.active):  # after a failure the peers may be gone: no goodbye collective
            dist_shutdown(dist)


def _execute_all(job: Job, configs: list[RunConfig]) -> int:
    dist, out = job.dist, job.request.out
    job.progress.message(
        f"--out {out}: submitter {job.org!r}, system {job.system!r} (ORG/SYSTEM: the last two names of --out)"
    )
    description = describe_job(dist, job.org, job.system, job.device)
    problem = None
    if dist.writer:
        try:
            write_system(out, description)
        except UsageError as err:
            problem = str(err)
    problem = dist.broadcast(problem)
    if problem:
        raise UsageError(problem)
    exit_code = 0
    try:
        for config in configs:
            exit_code = max(exit_code, _execute_config(job, config))
    finally:
        from specbench.power import close_meters

        close_meters(job.meters)
        if dist.writer:
            write_manifest(out)
    return exit_code


def _submission_meta(job: Job, config: RunConfig) -> dict[str, Any]:
    """submission.yaml of one configuration: spec identity, level, profile, seed, hyperparameters, layers, data."""
    request, resolved = job.request, job.resolved
    spec = resolved.spec
    dataset = job.executor.dataset_facts(resolved, config, request.data, request.synthetic)
    meta = SubmissionMeta(
        format_version=1,
        spec_id=spec.id,
        spec_version=spec.version,
        spec_sha256=resolved.digest,
        level=resolved.level,
        profile=resolved.profile,
        variant=str(config.hyperparameters["model"]) if spec.workload.variants else None,
        submitter=job.org,
        system=job.system,
        synthetic_data=bool(dataset.get("synthetic")),
        seed=request.seed,
        hyperparameters=config.hyperparameters,
        layers=config.layers(),  # type: ignore[arg-type]
        dataset=dataset,
    ).model_dump(mode="json")
    if meta["seed"] is None:
        del meta["seed"]
    return meta


def _execute_config(job: Job, config: RunConfig) -> int:
    """The runs of one configuration (one point of a sweep), continuing after those already in its folder."""
    dist, spec = job.dist, job.resolved.spec
    bench_dir = job.request.out / f"{spec.id}{config.suffix}"
    job.progress.phase("checking the data...")
    meta = _submission_meta(job, config)
    decision: Resume | str | None = None
    if dist.writer:
        try:
            decision = prepare_benchmark(bench_dir, meta)
        except UsageError as err:
            decision = str(err)
    decision = dist.broadcast(decision)
    if isinstance(decision, str):
        raise UsageError(decision)
    assert decision is not None
    resume = decision
    for number, record in sorted(resume.replaced.items()):
        path = bench_dir / f"run_{number}"
        job.progress.message(f"{path}: {record['ended']}; removed (a run stopped before its end is not a result)")
    if resume.completed >= job.runs_wanted:
        job.progress.message(f"{bench_dir}: {resume.completed} of {job.runs_wanted} runs already there; nothing to do")
        return 0
    exit_code = 0
    while resume.completed < job.runs_wanted:
        number = resume.next_run
        seed = dist.broadcast(run_seed(job.request.seed, number, resume.seeds))
        resume.seeds.append(seed)
        job.progress.label = f"[{spec.id}{config.suffix} run {number}] "
        replaces = resume.replaced.get(number)
        result = run_once(job, config, bench_dir / f"run_{number}", number, seed, replaces)
        resume.kept.append(number)
        if result.status != "success":
            exit_code = EXIT_NONCOMPLIANT
        if dist.writer:
            write_manifest(job.request.out)
    return exit_code
