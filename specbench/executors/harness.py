"""The run harness shared by every executor: from a spec to a submission folder.

It resolves spec, profile, level and overrides (checking them before anything starts), captures
the system, opens one folder per run, writes MLLOG lines, opens the power window at run_start
and closes it at run_stop (each after a device synchronize), and writes result.json, state.json
and the manifest atomically. A run that crashes or is interrupted is marked incomplete with its
reason; executing again into the same folder continues with the next run.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import socket
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from types import FrameType
from typing import Any

from specbench.errors import SpecbenchError, UsageError
from specbench.executors import get_executor
from specbench.executors.base import Executor, RunOutcome
from specbench.executors.config import RunConfig, build_configs
from specbench.executors.distributed import Dist
from specbench.executors.distributed import from_env as dist_from_env
from specbench.executors.distributed import init as dist_init
from specbench.executors.distributed import shutdown as dist_shutdown
from specbench.executors.files import atomic_write_json, atomic_write_yaml, write_manifest
from specbench.executors.mlperf_log import NullLog, RunLog, write_header
from specbench.executors.progress import Progress
from specbench.spec.loader import load_spec
from specbench.spec.resolve import ResolvedSpec, resolve
from specbench.spec.result import PowerResult, QualityPoint, QualityResult, RunResult
from specbench.spec.rules import Level
from specbench.spec.system import SubmissionMeta

EXIT_RUN_FAILED = 3
EXIT_INTERRUPTED = 130
_NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


class RunInterrupted(SpecbenchError):
    """Ctrl-C or SIGTERM arrived during a run."""

    exit_code = EXIT_INTERRUPTED


class RunCrashed(SpecbenchError):
    """A run ended with an error; earlier runs are intact."""

    exit_code = EXIT_RUN_FAILED


@dataclass
class ExecuteRequest:
    spec: str
    out: Path
    profile: str = "official"
    level: Level | None = None
    runs: int | None = None
    sets: list[str] = field(default_factory=list)
    data: Path | None = None
    synthetic: bool = False
    device: str = "auto"
    power: str = "auto"
    interval_ms: float = 100.0
    progress: Progress | None = None
    dist: Dist = field(default_factory=Dist)


@dataclass
class RunContext:
    """What an executor gets for one run, and the callbacks it must call at the run's edges."""

    resolved: ResolvedSpec
    config: RunConfig
    device: str
    seed: int
    run_dir: Path
    log: RunLog | NullLog
    progress: Progress
    data: Path | None
    synthetic: bool
    sync: Callable[[], None]
    sampler: Any
    dist: Dist = field(default_factory=Dist)
    started_wall: float | None = None
    started_mono: float | None = None
    stopped_mono: float | None = None
    stop_status: str | None = None
    curve: list[QualityPoint] = field(default_factory=list)
    window: Any = None
    _power_checked: float = -1e9
    _power_w: float | None = None

    @property
    def hyperparameters(self) -> dict[str, Any]:
        return self.config.hyperparameters

    @property
    def settings(self) -> dict[str, Any]:
        return self.config.settings

    def run_start(self) -> None:
        """Synchronize every rank, open the power window, log run_start."""
        self.sync()
        self.dist.barrier()
        if self.sampler is not None:
            self.sampler.window_start()
        self.started_mono = time.monotonic()
        self.started_wall = time.time()
        self.log.start(self.log.constants.RUN_START, time_ms=int(self.started_wall * 1000))
        self.progress.start_clock()

    def run_stop(self, success: bool) -> None:
        """Synchronize every rank, close the power window, log run_stop with its status."""
        self.sync()
        self.dist.barrier()
        if self.sampler is not None:
            self.window = self.sampler.window_stop()
        self.stopped_mono = time.monotonic()
        self.stop_status = "success" if success else "aborted"
        self.log.end(
            self.log.constants.RUN_STOP,
            metadata={"status": self.stop_status},
            time_ms=int((self.started_wall or 0) * 1000 + (self.stopped_mono - (self.started_mono or 0)) * 1000),
        )

    def elapsed_s(self) -> float:
        return time.monotonic() - (self.started_mono or time.monotonic())

    def evaluated(self, *, epoch: float, step: int, samples: int, value: float) -> bool:
        """Log one evaluation; True when the spec's target is reached."""
        quality = self.resolved.spec.quality
        assert quality is not None
        self.curve.append(QualityPoint(epoch=epoch, step=step, samples=samples, value=value, t_s=self.elapsed_s()))
        self.log.event(
            self.log.constants.EVAL_ACCURACY,
            value=value,
            metadata={"epoch_num": epoch, "samples_count": samples, "metric": quality.metric},
        )
        return value >= quality.target if quality.direction == "higher" else value <= quality.target

    def power_now_w(self) -> float | None:
        """The latest power summed over devices, for progress lines (refreshed at most every 2 s)."""
        if self.sampler is None:
            return None
        now = time.monotonic()
        if now - self._power_checked < 2.0:
            return self._power_w
        self._power_checked = now
        latest: dict[str, float] = {}
        for sample in self.sampler.samples[-16:]:
            value = sample.power_instant_w if sample.power_instant_w is not None else sample.power_average_w
            if value is not None:
                latest[sample.device] = value
        self._power_w = sum(latest.values()) if latest else None
        return self._power_w


def _device(requested: str) -> str:
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise UsageError(
            "--device cuda: no CUDA GPU is visible here (torch.cuda.is_available() is False); use --device cpu"
        )
    return requested


def _org_system(out: Path) -> tuple[str, str]:
    system, org = out.resolve().name, out.resolve().parent.name
    for kind, name in (("organisation", org), ("system", system)):
        if not _NAME.match(name):
            raise UsageError(
                f"--out must end in ORG/SYSTEM with names of letters, digits, '.', '_' or '-'; {kind} is {name!r}"
            )
    return org, system


def _run_dirs(bench_dir: Path) -> list[tuple[int, Path]]:
    found = []
    for path in bench_dir.glob("run_*"):
        suffix = path.name[4:]
        if path.is_dir() and suffix.isdigit():
            found.append((int(suffix), path))
    return sorted(found)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def reconcile_runs(bench_dir: Path) -> tuple[int, int, list[int]]:
    """(next run number, completed runs, seeds used); runs killed without a result are marked incomplete."""
    completed, seeds, last = 0, [], 0
    for number, path in _run_dirs(bench_dir):
        last = max(last, number)
        result = _read_json(path / "result.json")
        state = _read_json(path / "state.json") or {}
        if result is not None:
            seeds.append(int(result.get("seed", -1)))
            completed += result.get("status") in ("success", "failed")
            continue
        if (
            state.get("status") == "running"
            and state.get("host") == socket.gethostname()
            and _pid_alive(int(state.get("pid", -1)))
        ):
            raise UsageError(
                f"{path} is being written by a running process (pid {state.get('pid')}); wait for it or stop it"
            )
        atomic_write_json(
            path / "state.json",
            {**state, "status": "incomplete", "reason": "killed: the run ended without writing a result"},
        )
    return last + 1, completed, seeds


def _check_same(existing: Path, fresh: dict[str, Any], what: str, keys: list[str]) -> None:
    from specbench.spec.yamlio import load_yaml

    old = load_yaml(existing).data
    differing = [k for k in keys if old.get(k) != fresh.get(k)]
    if differing:
        raise UsageError(
            f"{existing} holds runs of a different {what} ({', '.join(differing)} differ); "
            "execute into a new --out folder instead of mixing them"
        )


@contextmanager
def _signals_as_interrupts() -> Iterator[None]:
    def handler(signum: int, frame: FrameType | None) -> None:
        raise RunInterrupted(f"interrupted by {signal.Signals(signum).name}")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


SPEC_SCOPE_TO_DEVICE_SCOPES = {"accelerator": ("accelerator",), "node": ("platform",), "wall": ()}


def _power_result(ctx: RunContext, meters: list[Any], scope: str, unmeasured: str | None) -> PowerResult:
    """Energy over the window of the devices of the spec's scope; never summed across scopes."""
    if unmeasured is not None or ctx.window is None:
        return PowerResult(measured=False, reason=unmeasured or "not measured: no power window was recorded")
    wanted = SPEC_SCOPE_TO_DEVICE_SCOPES[scope]
    devices = [d for d in ctx.window.devices if d.scope in wanted]
    missing = [d.device for d in devices if d.energy_j is None]
    if not devices or missing:
        seen = sorted({d.scope for d in ctx.window.devices})
        why = (
            f"devices {missing} gave no energy" if missing else f"no meter here measures scope {scope!r} (seen: {seen})"
        )
        return PowerResult(measured=False, scope=scope, reason=f"not measured: {why}")  # type: ignore[arg-type]
    energy = math.fsum(d.energy_j for d in devices)
    methods = {d.method for d in devices}
    duration = ctx.window.duration_s
    return PowerResult(
        measured=True,
        scope=scope,  # type: ignore[arg-type]
        meters=sorted({m.kind for m in meters}),
        devices=[d.device for d in devices],
        energy_j=energy,
        mean_power_w=energy / duration if duration > 0 else None,
        method=methods.pop() if len(methods) == 1 else "mixed",  # type: ignore[arg-type]
        trace_files=["power.csv", "power.json"],
    )


def _open_meters(request: ExecuteRequest, required: bool) -> tuple[list[Any], str | None]:
    """Meters for the run and, when nothing measures, why (a run then says 'not measured')."""
    from specbench.power import NullMeter, open_meters

    if request.power == "none":
        return [], "not measured: --power none"
    meters = open_meters(request.power)
    real = [m for m in meters if not isinstance(m, NullMeter)]
    if real:
        return real, None
    reason = "; ".join(getattr(m, "reason", "") for m in meters) or "no meter available"
    if required:
        raise UsageError(
            f"this profile requires measured power, but no meter is available here ({reason}); "
            "run with --power none to execute unmeasured (the result is then not ranked per watt)"
        )
    return [], f"not measured: {reason}"


def execute(request: ExecuteRequest) -> int:
    """Run a spec into a submission folder; returns the exit code (on every rank of a distributed run)."""
    loaded = load_spec(request.spec)
    resolved = resolve(loaded, request.profile, request.level)
    spec = resolved.spec
    executor = get_executor(spec.workload.executor)
    device = _device(request.device)
    dist = request.dist if request.dist.active else dist_from_env()
    request.dist = dist
    executor.check(resolved, device, request.synthetic, request.data)
    configs = build_configs(resolved, executor.options, request.sets, device, executor.defaults)
    for config in configs:
        check_config = getattr(executor, "check_config", None)
        if check_config is not None:
            check_config(resolved, config)
        batch = config.hyperparameters.get("global_batch_size")
        if dist.world > 1 and isinstance(batch, int) and batch % dist.world:
            raise UsageError(
                f"global_batch_size {batch} does not split evenly over {dist.world} processes; choose a multiple of {dist.world}"
            )
    org, system = _org_system(request.out)
    progress = request.progress or (Progress() if dist.writer else Progress(quiet=True))
    runs_wanted = request.runs or spec.measurement.runs.count
    dist_init(dist, device)
    try:
        meters: list[Any] = []
        unmeasured: str | None = "not measured: this rank does not own the node's devices"
        if dist.owner:
            meters, unmeasured = _open_meters(request, spec.measurement.power.required and resolved.ranked)
        return _execute_all(
            request, resolved, executor, configs, device, org, system, runs_wanted, meters, unmeasured, progress
        )
    finally:
        dist_shutdown(dist)


def _describe(request: ExecuteRequest, org: str, system: str, device: str) -> dict[str, Any]:
    """system.yaml: node 0's layers with job-wide totals, and each node's own layers under `per_node`."""
    from specbench.executors.sysinfo import describe_system

    dist = request.dist
    mine = describe_system(org, system, device, dist.world).model_dump(mode="json") if dist.owner else None
    gathered = dist.gather(mine)
    if gathered is None:
        return {}
    nodes = [d for d in gathered if d is not None]
    description = nodes[0]
    if dist.nnodes > 1 or dist.active:
        description["nodes"] = dist.nnodes
        hardware = description["layers"]["hardware"]
        hardware["nodes"] = dist.nnodes
        hardware["accelerator_count"] = sum(int(n["layers"]["hardware"].get("accelerator_count") or 0) for n in nodes)
        description["layers"]["communication"] = {
            "backend": "nccl" if device == "cuda" else "gloo",
            "world_size": dist.world,
        }
        description["declared"] = {**description.get("declared", {}), "processes": dist.world}
        if len(nodes) > 1:
            description["per_node"] = [n["layers"] for n in nodes]
    return description


def _execute_all(
    request: ExecuteRequest,
    resolved: ResolvedSpec,
    executor: Executor,
    configs: list[RunConfig],
    device: str,
    org: str,
    system: str,
    runs_wanted: int,
    meters: list[Any],
    unmeasured: str | None,
    progress: Progress,
) -> int:
    dist = request.dist
    description = _describe(request, org, system, device)
    problem = None
    if dist.writer:
        try:
            _write_system(request.out, description)
        except UsageError as err:
            problem = str(err)
    problem = dist.broadcast(problem)
    if problem:
        raise UsageError(problem)
    exit_code = 0
    try:
        for config in configs:
            bench_dir = request.out / f"{resolved.spec.id}{config.suffix}"
            code = _execute_config(
                request,
                resolved,
                executor,
                config,
                device,
                org,
                system,
                bench_dir,
                runs_wanted,
                meters,
                unmeasured,
                progress,
            )
            exit_code = max(exit_code, code)
    finally:
        from specbench.power import close_meters

        close_meters(meters)
        if dist.writer:
            write_manifest(request.out)
    return exit_code


def _write_system(out: Path, description: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    system_file = out / "system.yaml"
    if not system_file.exists():
        atomic_write_yaml(system_file, description)
        return
    _check_same(system_file, description, "system", ["system", "submitter", "nodes"])
    existing_layers = _read_yaml_layers(system_file)
    for layer in ("hardware", "accelerator_libraries"):
        for key in ("accelerator_model", "accelerator_count", "cuda_version", "rocm_version"):
            if key in existing_layers.get(layer, {}) and existing_layers[layer][key] != description["layers"][
                layer
            ].get(key):
                raise UsageError(
                    f"{system_file} describes other hardware or libraries ({layer}.{key} differs); use a new --out"
                )


def _read_yaml_layers(path: Path) -> dict[str, dict[str, Any]]:
    from specbench.spec.yamlio import load_yaml

    layers = load_yaml(path).data.get("layers", {})
    return layers if isinstance(layers, dict) else {}


def _execute_config(
    request: ExecuteRequest,
    resolved: ResolvedSpec,
    executor: Executor,
    config: RunConfig,
    device: str,
    org: str,
    system: str,
    bench_dir: Path,
    runs_wanted: int,
    meters: list[Any],
    unmeasured: str | None,
    progress: Progress,
) -> int:
    spec = resolved.spec
    dataset = executor.dataset_facts(resolved, config, request.data, request.synthetic)
    meta = SubmissionMeta(
        format_version=1,
        spec_id=spec.id,
        spec_version=spec.version,
        spec_sha256=resolved.digest,
        level=resolved.level,
        profile=resolved.profile,
        variant=str(config.hyperparameters["model"]) if spec.workload.variants else None,
        submitter=org,
        system=system,
        synthetic_data=bool(dataset.get("synthetic")),
        hyperparameters=config.hyperparameters,
        layers=config.layers(),  # type: ignore[arg-type]
        dataset=dataset,
    ).model_dump(mode="json")
    dist = request.dist
    decision: tuple[int, int, list[int]] | str | None = None
    if dist.writer:
        try:
            meta_file = bench_dir / "submission.yaml"
            if meta_file.exists():
                _check_same(
                    meta_file,
                    meta,
                    "configuration",
                    ["spec_sha256", "level", "profile", "hyperparameters", "layers", "dataset"],
                )
            else:
                atomic_write_yaml(meta_file, meta)
            decision = reconcile_runs(bench_dir)
        except UsageError as err:
            decision = str(err)
    decision = dist.broadcast(decision)
    if isinstance(decision, str):
        raise UsageError(decision)
    assert decision is not None
    next_run, completed, seeds = decision
    if completed >= runs_wanted:
        progress.message(f"{bench_dir}: {completed} of {runs_wanted} runs already complete; nothing to do")
        return 0
    exit_code = 0
    while completed < runs_wanted:
        seed = dist.broadcast(_fresh_seed(seeds))
        seeds.append(seed)
        progress.label = f"[{spec.id}{config.suffix} run {next_run}] "
        result = _one_run(
            request,
            resolved,
            executor,
            config,
            device,
            org,
            system,
            bench_dir / f"run_{next_run}",
            next_run,
            seed,
            meters,
            unmeasured,
            progress,
        )
        completed += 1
        next_run += 1
        if result.status != "success":
            exit_code = 1
        if dist.writer:
            write_manifest(request.out)
    return exit_code


def _fresh_seed(used: list[int]) -> int:
    while True:
        seed = int.from_bytes(os.urandom(4), "little") & 0x7FFFFFFF
        if seed not in used:
            return seed


def _one_run(
    request: ExecuteRequest,
    resolved: ResolvedSpec,
    executor: Executor,
    config: RunConfig,
    device: str,
    org: str,
    system: str,
    run_dir: Path,
    number: int,
    seed: int,
    meters: list[Any],
    unmeasured: str | None,
    progress: Progress,
) -> RunResult:
    from specbench.power import PowerSampler

    spec = resolved.spec
    dist = request.dist
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    if dist.writer:
        run_dir.mkdir(parents=True, exist_ok=False)
        atomic_write_json(
            run_dir / "state.json",
            {"status": "running", "pid": os.getpid(), "host": socket.gethostname(), "started_at": started},
        )
    dist.barrier()
    log: RunLog | NullLog = RunLog(run_dir / "log.txt") if dist.writer else NullLog()
    sync = _sync_fn(device)
    sampler = PowerSampler(meters, interval_s=request.interval_ms / 1000.0) if meters else None
    ctx = RunContext(
        resolved, config, device, seed, run_dir, log, progress, request.data, request.synthetic, sync, sampler, dist
    )
    outcome: RunOutcome | None = None
    failure: BaseException | None = None
    try:
        with _signals_as_interrupts():
            if sampler is not None:
                sampler.start()
            _log_header(
                log,
                resolved,
                config,
                org,
                system,
                seed,
                dataset_train=spec.workload.dataset.train_samples,
                dataset_eval=spec.workload.dataset.eval_samples,
            )
            state = executor.setup(ctx)
            log.end(log.constants.INIT_STOP)
            outcome = executor.train(ctx, state)
    except (KeyboardInterrupt, RunInterrupted) as err:
        failure = err if isinstance(err, RunInterrupted) else RunInterrupted("interrupted by Ctrl-C (SIGINT)")
    except BaseException as err:  # the run is marked incomplete with its reason, then the error is reported
        failure = err
    finally:
        if sampler is not None:
            sampler.stop()
    if failure is not None and ctx.started_mono is not None and ctx.stop_status is None:
        with suppress(Exception):
            ctx.run_stop(success=False)
    if dist.active and failure is None:
        _gather_power(ctx, sampler, run_dir)
    elif sampler is not None:
        sampler.write_trace(run_dir)
    if not dist.writer:
        if failure is not None:
            raise failure
        assert outcome is not None
        return _result(ctx, resolved, number, seed, started, outcome, None, meters, unmeasured)
    result = _result(ctx, resolved, number, seed, started, outcome, failure, meters, unmeasured)
    atomic_write_json(run_dir / "result.json", result.model_dump(mode="json"))
    atomic_write_json(
        run_dir / "state.json",
        {
            "status": "done" if failure is None else "incomplete",
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started_at": started,
            "reason": result.reason,
        },
    )
    log.close()
    progress.message(_summary(result, run_dir))
    if failure is not None:
        if not isinstance(failure, (RunInterrupted, SpecbenchError)):
            (run_dir / "error.txt").write_text("".join(traceback.format_exception(failure)))
        write_manifest(request.out)
        if isinstance(failure, SpecbenchError):
            raise failure
        raise RunCrashed(
            f"run {number} did not complete: {result.reason} (details: {run_dir / 'error.txt'})"
        ) from failure
    return result


def _gather_power(ctx: RunContext, sampler: Any, run_dir: Path) -> None:
    """Bring every node owner's trace and window to rank 0, which writes one trace with node ids."""
    from specbench.executors.powermerge import merge_node_traces

    part = None
    if sampler is not None:
        part = {"node": ctx.dist.node, "metadata": sampler.metadata(), "samples": sampler.samples, "window": ctx.window}
    parts = ctx.dist.gather(part)
    if parts is None:
        return
    owners = [p for p in parts if p is not None]
    if not owners:
        return
    ctx.window = merge_node_traces(owners, run_dir)


def _sync_fn(device: str) -> Callable[[], None]:
    if device == "cuda":
        import torch

        return torch.cuda.synchronize
    return lambda: None


def _log_header(
    log: RunLog | NullLog,
    resolved: ResolvedSpec,
    config: RunConfig,
    org: str,
    system: str,
    seed: int,
    dataset_train: int,
    dataset_eval: int,
) -> None:
    write_header(log, resolved, config.hyperparameters, org, system, seed, (dataset_train, dataset_eval))


def _result(
    ctx: RunContext,
    resolved: ResolvedSpec,
    number: int,
    seed: int,
    started: str,
    outcome: RunOutcome | None,
    failure: BaseException | None,
    meters: list[Any],
    unmeasured: str | None,
) -> RunResult:
    spec = resolved.spec
    flops_per_sample = _flops_per_sample(resolved, ctx.config)
    quality = None
    if spec.quality is not None and (spec.kind == "time_to_quality" or ctx.curve):
        values = [p.value for p in ctx.curve]
        best = (max(values) if spec.quality.direction == "higher" else min(values)) if values else None
        reached = bool(outcome and outcome.reached)
        quality = QualityResult(
            metric=spec.quality.metric,
            target=spec.quality.target,
            direction=spec.quality.direction,
            achieved=values[-1] if values else None,
            best=best,
            reached=reached,
            curve=ctx.curve,
        )
    duration = (
        (ctx.stopped_mono - ctx.started_mono) if ctx.stopped_mono is not None and ctx.started_mono is not None else None
    )
    samples = outcome.samples if outcome else None
    model_flops: float | None
    if spec.workload.flop_accounting == "fixed_problem" and spec.budget.epochs is not None:
        model_flops = flops_per_sample * spec.workload.dataset.train_samples * spec.budget.epochs
    else:
        model_flops = flops_per_sample * samples if samples is not None else None
    reason: str | None
    if failure is not None:
        status, reason = "incomplete", _reason(failure)
    elif outcome is not None and outcome.status == "failed":
        status, reason = "failed", outcome.reason
    else:
        status, reason = "success", None
    scope = spec.measurement.power.scope
    return RunResult(
        format_version=1,
        spec_id=spec.id,
        spec_version=spec.version,
        spec_sha256=resolved.digest,
        kind=spec.kind,
        profile=resolved.profile,
        level=resolved.level,
        run=number,
        status=status,  # type: ignore[arg-type]
        reason=reason,
        seed=seed,
        started_at=datetime.fromtimestamp(ctx.started_wall, timezone.utc).isoformat(timespec="milliseconds")
        if ctx.started_wall
        else started,
        duration_s=duration,
        epochs=outcome.epochs if outcome else None,
        steps=outcome.steps if outcome else None,
        samples_processed=samples,
        sample_unit=spec.workload.sample_unit,
        devices=ctx.dist.world,
        device_kind=ctx.device,
        synthetic_data=bool(spec.workload.dataset.synthetic or ctx.synthetic),
        flops_per_sample=flops_per_sample,
        flop_accounting=spec.workload.flop_accounting,
        model_flops=model_flops,
        flops_per_s=model_flops / duration if model_flops is not None and duration else None,
        quality=quality,
        throughput=outcome.throughput if outcome else None,
        power=_power_result(ctx, meters, scope, unmeasured),
        hyperparameters=ctx.config.hyperparameters,
        settings=ctx.config.settings,
    )


def _flops_per_sample(resolved: ResolvedSpec, config: RunConfig) -> float:
    workload = resolved.spec.workload
    if workload.variants:
        variant = workload.variants[str(config.hyperparameters["model"])]
        if variant.flops_per_sample is not None:
            return variant.flops_per_sample
    assert workload.flops_per_sample is not None
    return workload.flops_per_sample


def _reason(failure: BaseException) -> str:
    name = type(failure).__name__
    if "OutOfMemory" in name:
        return f"out of device memory: {str(failure).splitlines()[0][:300]}; lower global_batch_size with --set"
    text = str(failure).splitlines()[0][:300] if str(failure) else name
    return text if isinstance(failure, SpecbenchError) else f"{name}: {text}"


def _summary(result: RunResult, run_dir: Path) -> str:
    parts = [f"{run_dir}: {result.status}"]
    if result.reason:
        parts.append(result.reason)
    if result.duration_s is not None:
        parts.append(f"{result.duration_s:.1f} s")
    if result.quality is not None and result.quality.best is not None:
        parts.append(f"{result.quality.metric} {result.quality.best:.4f} (target {result.quality.target})")
    if result.throughput is not None:
        parts.append(f"{result.throughput.samples_per_s:,.1f} {result.sample_unit}s/s")
    if result.power.measured and result.power.energy_j is not None:
        parts.append(f"{result.power.energy_j:.1f} J, {result.power.mean_power_w or 0:.1f} W mean")
    else:
        parts.append("power not measured")
    return " | ".join(parts)
