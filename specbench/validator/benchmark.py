"""One BENCHMARK folder: submission.yaml, the spec it names, each run folder, and the rules across runs.

Each phase returns its own frozen result; `RunData` is where they are assembled, in one place per phase:

1. Log (`read_run`): `logcheck.check_log` reads log.txt, with the spec and submission.yaml, and returns a
   `LogReading`: `LogFacts` (parsed log, run_start_ms, run_stop_ms, stop_status, seed) and `RunVerdict`
   (evaluations, best, reached, credited, status, reason). `read_run` makes the run of it with
   state.json's status and result.json (`RunData.of_log`).
2. Power (`validate._check`): `powercheck.check_power` reads each run's power.csv and power.json, its
   window (run_start_ms, run_stop_ms) and result.json's claim, and returns each run's `PowerData` (None
   where the trace was not analysed); `_check` keeps it as `run.power`.
3. Evidence (`finish_benchmark`): `evidence.check_evidence` reads the log, status, credited quality,
   duration and power of each run, and returns a `RunEvidence` (samples, accounts, quality_in_range);
   `finish_benchmark` keeps it as `run.samples` and `run.accounts`, and drops `run.best` where a quality
   value lies outside its metric's range.

Every other check only reads the runs and adds findings. After validation, `across.fingerprint_logs`
keeps a digest of each log as `run.log_fingerprint`, so that the parsed log may be dropped.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from specbench.formats.layout import RUN_FOLDER, RUN_OPTIONAL, RUN_REQUIRED
from specbench.formats.mllog import parse_log
from specbench.formats.runstate import RunState
from specbench.spec.resolve import resolve_once
from specbench.spec.result import RESULT_FORMAT_VERSION, RunResult
from specbench.spec.system import SUBMISSION_FORMAT_VERSION, SubmissionMeta, SystemDescription
from specbench.validator.bounds import check_bounds
from specbench.validator.context import Context
from specbench.validator.documents import Loaded, check_mapping, check_version, decode, load_json, load_yaml, to_model
from specbench.validator.equivalence import Inputs, check_layers, check_level_and_profile, check_problem, meta_layers
from specbench.validator.evidence import SystemDevices, check_evidence, result_devices_problem
from specbench.validator.fixedlayers import check_reference
from specbench.validator.identity import check_file_name
from specbench.validator.identity import check_meta as check_meta_identity
from specbench.validator.identity import check_trace as check_trace_identity
from specbench.validator.integrity import check_spec_identity
from specbench.validator.logcheck import check_log, check_seeds
from specbench.validator.mlperf import dialect_for, is_weak_scaling
from specbench.validator.model import BenchmarkData, LogReading, RunData, RunVerdict
from specbench.validator.params import check_params
from specbench.validator.physics import DevicePhysics, check_trace_devices, is_ranked
from specbench.validator.physics import check_run as check_physics
from specbench.validator.powercheck import PowerTask, power_task
from specbench.validator.precision import check_precision
from specbench.validator.results import check_result
from specbench.validator.runs import check_runs
from specbench.validator.values import same
from specbench.validator.variant import check_variant

"""The power trace is absent when no meter was available; error.txt holds the failure of a run that crashed."""


def load_model(
    ctx: Context, rel: str, model: type[Any], version: int | None, yaml: bool = False
) -> tuple[Any, Loaded | None]:
    """A file validated against its model: (model or None, the loaded file or None), with findings."""
    tree, findings = ctx.tree, ctx.findings
    if not tree.has(rel):
        if rel not in tree.refused:
            findings.add("SB-STR-002", rel, f"expected {rel.rsplit('/', 1)[-1]}, found no such file")
        return None, None
    loaded = (load_yaml if yaml else load_json)(tree, rel, findings)
    if loaded is None or not check_mapping(loaded, findings):
        return None, loaded
    if version is not None and not check_version(loaded, version, findings):
        return None, loaded
    return to_model(model, loaded, findings), loaded


def read_benchmark(ctx: Context, name: str, system: SystemDescription | None) -> tuple[BenchmarkData, list[PowerTask]]:
    """First phase: submission.yaml, the spec, every run's state, result and log; the power checks to run."""
    bench = BenchmarkData(name)
    check_file_name(ctx.findings, name)
    meta, meta_file = load_model(ctx, f"{name}/submission.yaml", SubmissionMeta, SUBMISSION_FORMAT_VERSION, yaml=True)
    if meta_file is not None:
        ctx.loaded[meta_file.file] = meta_file
    if meta is not None and meta_file is not None:
        bench.meta = meta
        check_names(ctx, name, meta, meta_file, system)
        check_meta_identity(ctx.findings, meta, meta_file)
        loaded = check_spec_identity(ctx, meta, meta_file)
        if loaded is not None and check_level_and_profile(ctx.findings, meta, meta_file, loaded.spec):
            bench.spec = resolve_once(loaded, meta.profile, meta.level)
        bench.mlperf_weak_scaling = is_weak_scaling(ctx.imported, bench)
    files, dirs = ctx.tree.children(name)
    for extra in files:
        if extra != "submission.yaml" and not check_file_name(ctx.findings, f"{name}/{extra}"):
            ctx.findings.add("SB-STR-009", f"{name}/{extra}", "expected only submission.yaml and run_N folders here")
    numbered = []
    for folder in dirs:
        match = RUN_FOLDER.match(folder)
        if match is not None:
            numbered.append((int(match.group(1)), folder))
        elif not check_file_name(ctx.findings, f"{name}/{folder}"):
            ctx.findings.add(
                "SB-STR-009", f"{name}/{folder}", "expected run folders named run_1 ... run_N, found another folder"
            )
    tasks = []
    for number, folder in sorted(numbered):
        run = read_run(ctx, name, folder, number, bench)
        bench.runs.append(run)
        requirement = bench.spec.spec.measurement.power if bench.spec is not None else None
        tasks.append(power_task(ctx, run, requirement, system))
    return bench, tasks


def finish_benchmark(
    ctx: Context, bench: BenchmarkData, system: SystemDescription | None, system_file: Loaded | None
) -> None:
    """Last phase, once every run's power is known: the evidence's numbers, result.json, the rules across runs."""
    physics = DevicePhysics.of(system, ctx.devices)
    ranked = is_ranked(bench)
    evidence = check_evidence(ctx.findings, bench, system, system_file, physics.peak(bench.meta))
    for run, found in zip(bench.runs, evidence, strict=True):
        run.samples, run.accounts = found.samples, found.accounts
        if not found.quality_in_range:
            run.best = None
    devices = SystemDevices.of(system)
    for run in bench.runs:
        check_physics(ctx.findings, run, bench, physics, devices)
        check_trace_identity(ctx.findings, run)
        check_trace_devices(ctx.findings, run, physics, ranked)
        result_file = ctx.loaded.get(f"{run.folder}/result.json")
        if run.result is not None and result_file is not None:
            problem = result_devices_problem(devices, run.result.devices) if system is not None else None
            check_result(ctx.findings, run, run.result, result_file, bench.meta, bench.spec, problem)
    check_runs(ctx.findings, bench.name, bench.runs, bench.spec, weak_scaling=bench.mlperf_weak_scaling)
    check_seeds(ctx.findings, bench.runs)
    check_bounds(ctx, bench, physics, devices)
    meta_file = ctx.loaded.get(f"{bench.name}/submission.yaml")
    if meta_file is not None:
        check_precision(ctx.findings, bench, meta_file, ctx.loaded, ranked=ranked, imported=ctx.imported is not None)
    if bench.meta is not None and meta_file is not None and bench.spec is not None:
        inputs = _inputs(ctx, bench, meta_file, system, system_file)
        check_layers(ctx.findings, inputs, bench.spec)
        check_params(ctx.findings, bench.meta, meta_file, bench.spec, imported=ctx.imported is not None)
        check_reference(ctx.findings, inputs, bench.spec)
        check_problem(ctx.findings, inputs, bench.spec)
        check_variant(ctx.findings, bench.meta, meta_file, bench.spec, bench.runs)


def _inputs(
    ctx: Context, bench: BenchmarkData, meta_file: Loaded, system: SystemDescription | None, system_file: Loaded | None
) -> Inputs:
    assert bench.meta is not None
    settings: dict[str, Any] = {}
    settings_file: Loaded | None = None
    for run in bench.runs:
        if run.result is not None:
            settings = dict(run.result.settings)
            settings_file = ctx.loaded.get(f"{run.folder}/result.json")
            break
    return Inputs(system, system_file, bench.meta, meta_file, settings, settings_file)


def check_names(
    ctx: Context, name: str, meta: SubmissionMeta, meta_file: Loaded, system: SystemDescription | None
) -> None:
    """BENCHMARK is the spec id, or the spec id + '--KEY=VALUE,...' of a sweep point; ORG and SYSTEM as declared."""
    prefix = f"{meta.spec_id}--"
    if name != meta.spec_id and not name.startswith(prefix):
        ctx.findings.add(
            "SB-STR-011",
            meta_file.file,
            f"expected the BENCHMARK folder to be named {meta.spec_id!r} or {prefix}KEY=VALUE,... (a sweep point), "
            f"found {name!r}",
            **meta_file.locate("spec_id"),
        )
    elif name != meta.spec_id:
        for part in name[len(prefix) :].split(","):
            problem = _sweep_part_problem(meta, part)
            if problem is not None:
                ctx.findings.add("SB-STR-011", meta_file.file, problem, **meta_file.locate("hyperparameters"))
    if system is None:
        return
    for key in ("submitter", "system"):
        if getattr(meta, key) != getattr(system, key):
            ctx.findings.add(
                "SB-STR-011",
                meta_file.file,
                f"expected {key} {getattr(system, key)!r} (system.yaml), found {getattr(meta, key)!r}",
                **meta_file.locate(key),
            )


def _sweep_part_problem(meta: SubmissionMeta, part: str) -> str | None:
    """Why one KEY=VALUE of a folder name does not match what submission.yaml declares, or None."""
    key, equals, text = part.partition("=")
    chosen = {**{k: v for layer in meta_layers(meta).values() for k, v in layer.items()}, **meta.hyperparameters}
    if not equals or key not in chosen:
        return f"expected KEY=VALUE of a declared hyperparameter or setting in the folder name, found {part!r}"
    value = chosen[key]
    if text != str(value) and not same(_parse(text), value):
        return f"expected {key}={value} in the folder name (as submission.yaml declares), found {part!r}"
    return None


def _parse(text: str) -> Any:
    """A value as written in a folder name: true/false, an integer, a number, else the text."""
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def read_run(ctx: Context, bench_name: str, name: str, number: int, bench: BenchmarkData) -> RunData:
    """The first phase of one run: its folder, state.json, result.json and log, assembled as its `RunData`."""
    folder = f"{bench_name}/{name}"
    files, dirs = ctx.tree.children(folder)
    for extra in [*(f for f in files if f not in RUN_REQUIRED + RUN_OPTIONAL), *dirs]:
        if not check_file_name(ctx.findings, f"{folder}/{extra}"):
            ctx.findings.add(
                "SB-STR-009", f"{folder}/{extra}", f"expected only {', '.join(RUN_REQUIRED + RUN_OPTIONAL)} here"
            )
    state, _ = load_model(ctx, f"{folder}/state.json", RunState, 1)
    result, result_file = load_model(ctx, f"{folder}/result.json", RunResult, RESULT_FORMAT_VERSION)
    if result_file is not None:
        ctx.loaded[result_file.file] = result_file
    status = state.status if state is not None else None
    interrupted = status in ("running", "incomplete")
    incomplete = interrupted or (result is not None and result.status == "incomplete")
    reading = _check_log(ctx, folder, bench, incomplete)
    verdict = reading.verdict
    if interrupted:
        verdict = replace(verdict, status="incomplete", reason=f"state.json says {status}: the run was interrupted")
    if verdict.status == "incomplete":
        ctx.findings.add("SB-RUN-005", folder, f"expected a finished run, found it incomplete: {verdict.reason}")
    return RunData.of_log(name, number, folder, replace(reading, verdict=verdict), state=status, result=result)


def _check_log(ctx: Context, folder: str, bench: BenchmarkData, incomplete: bool) -> LogReading:
    rel = f"{folder}/log.txt"
    unread = LogReading(None, RunVerdict("incomplete", "no readable log"))
    if not ctx.tree.has(rel):
        if rel not in ctx.tree.refused:
            ctx.findings.add("SB-STR-002", rel, "expected log.txt (the MLLOG log of the run), found no such file")
        return unread
    raw = ctx.tree.read(rel)
    text = decode(raw, rel, ctx.findings) if raw is not None else None
    if text is None:
        return unread
    dialect = dialect_for(ctx.imported, bench)
    return check_log(parse_log(text), rel, ctx.findings, bench.spec, bench.meta, incomplete, dialect)
