"""The validator's entry points: judge one submission folder, or many in parallel processes."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from specbench.formats.layout import BENCHMARK_FILE, MANIFEST, ROOT_FILES, SIGNATURE_FILE, SYSTEM_FILE
from specbench.physics import load_devices
from specbench.spec.system import SYSTEM_FORMAT_VERSION, SystemDescription
from specbench.validator.across import compare_submissions, fingerprint_logs
from specbench.validator.benchmark import finish_benchmark, load_model, read_benchmark
from specbench.validator.context import Context, SpecIndex
from specbench.validator.documents import Loaded
from specbench.validator.evidence import SystemDevices
from specbench.validator.files import DEFAULT_LIMITS, Limits, Tree
from specbench.validator.findings import Finding, Findings
from specbench.validator.identity import check_file_name
from specbench.validator.identity import check_system as check_system_identity
from specbench.validator.integrity import check_manifest, compare_deferred
from specbench.validator.mlperf import check_import, read_import_record
from specbench.validator.model import BenchmarkData, Report, SignatureInfo
from specbench.validator.physics import DevicePhysics, check_devices
from specbench.validator.powercheck import check_power
from specbench.validator.provenance import check_provenance

if TYPE_CHECKING:
    from specbench.sshsig import AllowedSigners

DISCOVER_DEPTH = 3


@dataclass(frozen=True)
class Target:
    """What a path names: an ORG/SYSTEM folder, or one BENCHMARK folder inside one."""

    root: Path
    benchmark: str | None


def classify(path: Path) -> Target | None:
    """ORG/SYSTEM when the folder holds system.yaml, BENCHMARK when it holds submission.yaml, else None."""
    if not path.is_dir():
        return None
    if os.path.lexists(path / SYSTEM_FILE):
        return Target(path, None)
    if os.path.lexists(path / BENCHMARK_FILE):
        absolute = Path(os.path.abspath(path))
        return Target(_display(absolute.parent), absolute.name)
    return None


def _display(path: Path) -> Path:
    """A path relative to the working folder when it lies inside it."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def discover(path: str | Path) -> list[Path]:
    """Submission folders a path names: itself when it is one, else the ORG/SYSTEM folders below it.

    Searches at most three levels down (e.g. submissions/ORG/SYSTEM), never following links.
    """
    start = Path(path)
    if classify(start) is not None:
        return [start]
    found: list[Path] = []
    level = [start]
    for _ in range(DISCOVER_DEPTH):
        below: list[Path] = []
        for folder in level:
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError:
                continue
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    child = Path(entry.path)
                    (found if os.path.lexists(child / SYSTEM_FILE) else below).append(child)
        level = below
    return sorted(found)


def validate_submission(
    path: str | Path,
    spec: str | Path | None = None,
    *,
    limits: Limits = DEFAULT_LIMITS,
    specs: SpecIndex | None = None,
    jobs: int = 1,
    signers: AllowedSigners | None = None,
    devices: Path | None = None,
    retain: frozenset[str] = frozenset(),
) -> Report:
    """Run every check on one submission folder (ORG/SYSTEM or one BENCHMARK of it) and gather the findings.

    `spec` adds a spec file (or built-in id) to the specs a submission may name; it raises
    InputError or UsageError when that spec cannot be loaded. Bad submission content never raises.
    `jobs` > 1 reads the runs' power traces in that many processes (the bulk of the work).
    With `signers` (an allowed_signers file), manifest.json must carry a signature by one of them.
    `devices` is a device facts table used instead of specbench/physics/devices.yaml (raises InputError
    when it is malformed). The bytes of files named in `retain` (e.g. log.txt) come back in the report's
    `retained`, as validation read them: a caller never reads a submission's file a second time.
    """
    given = Path(path)
    if devices is not None:
        load_devices(devices)
    index = specs if specs is not None else SpecIndex.with_spec(spec)
    target = classify(given)
    if target is None:
        return _unusable(given)
    findings = Findings()
    tree = Tree.scan(target.root, limits, findings, only=target.benchmark, retain=retain)
    ctx = Context(tree, findings, limits, index, devices=devices)
    system, benchmarks = _check(ctx, target, jobs) if tree.complete else (None, [])
    signature = _signature(ctx, signers) if tree.complete else None
    return Report(
        path=str(given),
        root=str(target.root),
        system=system,
        benchmarks=benchmarks,
        findings=sorted(findings.items, key=Finding.sort_key),
        signature=signature,
        manifest_sha256=tree.digests[MANIFEST][0] if MANIFEST in tree.digests else None,
        imported=ctx.imported,
        retained=tree.retained,
    )


def _signature(ctx: Context, signers: AllowedSigners | None) -> SignatureInfo | None:
    """check_signature, whose SSH and cryptography code loads only where there is a signature or a signer."""
    if signers is None and not ctx.tree.has(SIGNATURE_FILE):
        return None  # what check_signature returns here
    from specbench.validator.signature import check_signature

    return check_signature(ctx, signers)


def _check(ctx: Context, target: Target, jobs: int) -> tuple[SystemDescription | None, list[BenchmarkData]]:
    """Every check of a listed submission: the manifest first, then system.yaml and each benchmark in the phases
    that validator.benchmark lists (the power phase's results are kept on the runs here)."""
    deferred = check_manifest(ctx, target.benchmark)
    system, system_file = load_model(ctx, SYSTEM_FILE, SystemDescription, SYSTEM_FORMAT_VERSION, yaml=True)
    if system is not None and system_file is not None:
        _check_root_names(ctx, target.root, system, system_file)
        check_system_identity(ctx.findings, system, system_file)
    ctx.imported, import_file = read_import_record(ctx)
    files, dirs = ctx.tree.children("")
    for extra in files:
        if extra not in ROOT_FILES and not check_file_name(ctx.findings, extra):
            ctx.findings.add(
                "SB-STR-009",
                extra,
                "expected only system.yaml, manifest.json, manifest.json.sig, import.json, reproduction.json and BENCHMARK "
                "folders here",
            )
    names = [target.benchmark] if target.benchmark is not None else dirs
    if not names:
        ctx.findings.add(
            "SB-STR-002", None, "expected at least one BENCHMARK folder (with submission.yaml), found none"
        )
    read = [read_benchmark(ctx, name, system) for name in names]
    runs = [run for bench, _ in read for run in bench.runs]
    powers = check_power(ctx, runs, [task for _, tasks in read for task in tasks], jobs)
    for run, (power, chart) in zip(runs, powers, strict=True):
        run.power, run.power_chart = power, chart
    benchmarks = [bench for bench, _ in read]
    check_provenance(ctx.findings, benchmarks, SystemDevices.of(system), ctx.tree.digests)
    if system is not None and system_file is not None:
        check_devices(ctx.findings, DevicePhysics.of(system, ctx.devices), benchmarks, system_file)
    for bench in benchmarks:
        finish_benchmark(ctx, bench, system, system_file)
    if ctx.imported is not None and import_file is not None:
        check_import(ctx, ctx.imported, import_file, benchmarks)
    compare_deferred(ctx, deferred)
    return system, benchmarks


def _unusable(given: Path) -> Report:
    findings = Findings()
    if not given.exists():
        found = "no such folder"
    elif not given.is_dir():
        found = "a file, not a folder"
    else:
        below = discover(given)
        found = "neither system.yaml nor submission.yaml" + (
            f"; {len(below)} ORG/SYSTEM folder(s) lie below it (discover() lists them; the CLI expands a folder)"
            if below
            else ""
        )
    findings.add("SB-STR-001", None, f"expected an ORG/SYSTEM or BENCHMARK folder, found {found}")
    return Report(path=str(given), root=str(given), usable=False, findings=findings.items)


def _check_root_names(ctx: Context, root: Path, system: SystemDescription, loaded: Loaded) -> None:
    absolute = Path(os.path.abspath(root))
    for key, found in (("system", absolute.name), ("submitter", absolute.parent.name)):
        expected = getattr(system, key)
        if found != expected:
            folder = "SYSTEM" if key == "system" else "ORG"
            ctx.findings.add(
                "SB-STR-011",
                SYSTEM_FILE,
                f"expected the {folder} folder to be named {expected!r} ({key} in system.yaml), found {found!r}",
                **loaded.locate(key),
            )


def _validate_one(
    args: tuple[str, str | None, Limits, AllowedSigners | None, Path | None, frozenset[str]],
) -> Report:
    """One submission in a worker process (its runs' traces are read in that process). The parsed logs stay
    here: nothing after validation reads them, and sending them back cost more than the work saved."""
    path, spec, limits, signers, devices, retain = args
    report = validate_submission(path, spec, limits=limits, signers=signers, devices=devices, retain=retain)
    fingerprint_logs(report)
    for bench in report.benchmarks:
        for run in bench.runs:
            run.log = None
    return report


def available_cpus() -> int:
    """CPUs this process may run on (its affinity), the default number of validation processes."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def validate_many(
    paths: Sequence[str | Path],
    spec: str | Path | None = None,
    *,
    jobs: int = 1,
    limits: Limits = DEFAULT_LIMITS,
    signers: AllowedSigners | None = None,
    devices: Path | None = None,
    retain: frozenset[str] = frozenset(),
) -> list[Report]:
    """Validate several submission folders, in up to `jobs` processes; reports come back in the order given.

    With one path, the jobs read its runs' power traces in parallel instead. With several, the first
    is validated here, which fills every cache the work needs (specs, models, schemas), and the
    processes forked after it inherit them instead of each building them again. Then the submissions'
    evidence is compared (validator.across): a run found in two of them is an error in both.
    """
    index = SpecIndex.with_spec(spec)
    if devices is not None:
        load_devices(devices)  # a malformed table stops here, before any submission is judged
    if jobs <= 1 or len(paths) <= 2:
        reports = [
            validate_submission(
                p, limits=limits, specs=index, jobs=jobs, signers=signers, devices=devices, retain=retain
            )
            for p in paths
        ]
    else:
        first = validate_submission(
            paths[0], limits=limits, specs=index, signers=signers, devices=devices, retain=retain
        )
        work = [(str(p), None if spec is None else str(spec), limits, signers, devices, retain) for p in paths[1:]]
        from concurrent.futures import ProcessPoolExecutor  # here: multiprocessing is slow to import

        with ProcessPoolExecutor(max_workers=min(jobs, len(work))) as pool:
            reports = [first, *pool.map(_validate_one, work)]
    for report in reports:
        fingerprint_logs(report)
    compare_submissions(reports)
    return reports
