"""`import_results`: an MLPerf Training results tree in, validated and scored specbench submissions out."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from specbench.errors import EXIT_NONCOMPLIANT, EXIT_OK, UsageError
from specbench.formats.mlperf_import import mlperf_benchmarks
from specbench.formats.mlperf_rules import RULESETS
from specbench.mlperf.convert import ConvertError, StagedSystem, SystemImport, output_folder, stage_system
from specbench.mlperf.source import SourceError, SystemSource, scan
from specbench.spec.builtin import find_spec
from specbench.spec.loader import LoadedSpec, load_spec, spec_digest
from specbench.validator import validate_submission
from specbench.validator.context import SpecIndex, load_with_digest
from specbench.validator.model import Report
from specbench.validator.validate import available_cpus

if TYPE_CHECKING:
    from specbench.scoring.leaderboard import Entry


@dataclass
class SystemOutcome:
    """One imported system: the conversion, the validator's report on it, and its scores."""

    imported: SystemImport
    report: Report
    entries: list[Entry] = field(default_factory=list)


@dataclass
class ImportOutcome:
    root: Path
    out: Path
    spec: str
    systems: list[SystemOutcome] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def exit_code(self, werror: bool = False) -> int:
        """0 when every imported submission is compliant, else 1 (2 is raised as UsageError before)."""
        ok = all(s.report.compliant(werror) for s in self.systems)
        return EXIT_OK if ok else EXIT_NONCOMPLIANT


def _overlap(a: Path, b: Path) -> bool:
    return a == b or a in b.parents or b in a.parents


def import_results(
    root: str | Path,
    out: str | Path,
    spec: str | Path | None = None,
    jobs: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> ImportOutcome:
    """Convert every system of an MLPerf Training results tree under `root` into `out`, then validate and score.

    `out` must lie outside `root` (the results tree is never written). `spec` is the spec file or id
    the results answer (default: every built-in MLPerf spec, each benchmark folder by its MLPerf name). Systems are converted and validated
    in up to `jobs` processes (default: `default_jobs()`); `progress` is given a line as each system is done.
    Raises UsageError when nothing under `root` can be imported.
    """
    root, out = Path(root), Path(out)
    if not root.is_dir():
        raise UsageError(f"RESULTS_ROOT {root}: no such folder")
    if _overlap(root.resolve(), out.resolve()):
        raise UsageError(
            f"--out {out} overlaps RESULTS_ROOT {root}: the results tree is never written into; choose a folder outside it"
        )
    answered = _specs(spec)
    tree = scan(root)
    if not tree.systems:
        raise UsageError(
            f"no MLPerf results under {root}: expected <org>/systems/<system>.json with "
            "<org>/results/<system>/<benchmark>/result_*.txt (at most three folders down)"
        )
    systems, refused = _supported(tree.systems, answered)
    if not systems and refused:
        raise _refusal(root, refused)
    outcome = ImportOutcome(root, out, "", skipped=list(tree.skipped))
    outcome.skipped += [item.why() for item in refused]
    outcome.skipped += _unanswered(systems, answered)
    tasks = _tasks(systems, out, spec, outcome.skipped)
    workers = min(jobs or default_jobs(), len(tasks) - 1)
    with _no_cyclic_gc():
        done = _import_in_workers(tasks, workers) if workers > 1 else _import_in_turn(tasks)
        for number, (imported, report, problem) in enumerate(done, start=1):
            if problem is not None:
                outcome.skipped.append(problem)
            elif imported is not None and report is not None:
                outcome.systems.append(SystemOutcome(imported, report))
            if progress is not None:
                progress(_progress_line(number, len(tasks), imported, problem))
    if not outcome.systems:
        raise UsageError(f"nothing under {root} could be imported: " + "; ".join(outcome.skipped))
    outcome.spec = ", ".join(sorted({b.name for s in outcome.systems for b in s.imported.benchmarks}))
    _score(outcome)
    return outcome


USAGE_NAMES = {"training": "Training", "hpc": "HPC"}


def supported_rounds() -> str:
    """'MLPerf Training v3.1, v4.0, ...; MLPerf HPC v1.0, ...': the rounds whose typed rules specbench holds."""
    by_usage: dict[str, list[str]] = {}
    for usage, ruleset in RULESETS:
        by_usage.setdefault(usage, []).append(_round_name(ruleset))
    return "; ".join(f"MLPerf {USAGE_NAMES[usage]} {', '.join(rounds)}" for usage, rounds in by_usage.items())


def _round_name(ruleset: str) -> str:
    """'4.0.0' -> 'v4.0', '4.0.1' -> 'v4.0.1': a round as MLCommons names its results repositories."""
    return "v" + (ruleset.removesuffix(".0") if ruleset.count(".") == 2 else ruleset)


@dataclass(frozen=True)
class Refused:
    """A system of a round specbench has no MLPerf rules for."""

    system: SystemSource
    round: str
    """'MLPerf Training v9.9'."""

    def why(self) -> str:
        return f"{_label(self.system)}: not imported: {self.round} is a round specbench has no rules for"


def _supported(
    systems: list[SystemSource], answered: Mapping[str, LoadedSpec]
) -> tuple[list[SystemSource], list[Refused]]:
    """The systems of a round specbench has rules for, and the others, before any of their logs is read.

    A round is the org folder's vN.M (`OrgFolder.ruleset`); with none, convert assumes its default and notes it.
    """
    kept: list[SystemSource] = []
    refused: list[Refused] = []
    for system in systems:
        ruleset = system.org.ruleset
        usages = {_usage(answered[b.name]) for b in system.benchmarks if b.name in answered}
        unknown = sorted(u for u in usages if ruleset is not None and (u, ruleset) not in RULESETS)
        if unknown and ruleset is not None:
            refused.append(Refused(system, f"MLPerf {USAGE_NAMES[unknown[0]]} {_round_name(ruleset)}"))
        else:
            kept.append(system)
    return kept, refused


def _usage(loaded: LoadedSpec) -> str:
    return loaded.spec.mlperf.usage if loaded.spec.mlperf is not None else "training"


class UnsupportedRound(UsageError):
    """Every system of a tree is of a round specbench has no MLPerf rules for (exit 2)."""


def _refusal(root: Path, refused: list[Refused]) -> UnsupportedRound:
    """Every system under `root` is of an unsupported round: which rounds, how many systems, and the supported ones."""
    counts: dict[str, int] = {}
    for item in refused:
        counts[item.round] = counts.get(item.round, 0) + 1
    rounds = "; ".join(f"{name} ({count} system(s))" for name, count in counts.items())
    return UnsupportedRound(
        f"nothing under {root} is of a round specbench has MLPerf rules for: found {rounds}; "
        f"supported: {supported_rounds()}"
    )


def _progress_line(number: int, total: int, imported: SystemImport | None, problem: str | None) -> str:
    """'system 3 of 12: ORG/SYSTEM, 256 result logs imported and judged', or why the system was skipped."""
    if imported is None:
        return f"system {number} of {total}: {problem}"
    logs = sum(len(bench.runs) for bench in imported.benchmarks)
    return f"system {number} of {total}: {imported.label}, {logs} result logs imported and judged"


def default_jobs() -> int:
    """The CPUs available."""
    return available_cpus()


@contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while logs are parsed into many small objects (no cycles among them).

    Reference counting still frees everything; the collector's passes over the growing heap cost
    about a fifth of an import of a whole round.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


Task = tuple[SystemSource, Path, "str | Path | None"]


def _tasks(systems: list[SystemSource], out: Path, spec: str | Path | None, skipped: list[str]) -> list[Task]:
    """One task per system; a system whose folder name another one already takes is skipped."""
    taken: dict[Path, str] = {}
    tasks: list[Task] = []
    for system in systems:
        folder = output_folder(system, out).resolve()
        label = f"{system.org.rel}/results/{system.name}"
        if folder in taken:
            skipped.append(
                f"{label}: not imported: its folder {output_folder(system, out)} is already taken by {taken[folder]}"
            )
            continue
        taken[folder] = (
            f"{system.org.rel}/{system.name}" if system.org.rel != "." else f"{system.org.name}/{system.name}"
        )
        tasks.append((system, out, spec))
    return tasks


Outcome = tuple[SystemImport | None, Report | None, str | None]


def _import_one(task: Task) -> Outcome:
    """Convert and validate one system (in a worker process or here): (import, report) or why it was skipped."""
    staged, problem = _stage_one(task)
    return (None, None, problem) if staged is None else _finish_one(task, staged)


def _import_in_workers(tasks: list[Task], workers: int) -> Iterator[Outcome]:
    """The first system here, the others in `workers` forked processes, results in the tasks' order as they come.

    Importing one system fills every cache the work needs (the spec and its rules, the validator's
    models and schemas, the device table), and the workers inherit them: without that, each worker
    built them again and two workers took longer than one process.
    """
    from concurrent.futures import ProcessPoolExecutor  # here: multiprocessing is slow to import

    yield _import_one(tasks[0])
    with ProcessPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(_import_one, tasks[1:])


def _import_in_turn(tasks: list[Task]) -> Iterator[Outcome]:
    """`_import_one` of each task, in order, in this process; a system is converted while the files of the
    one before are still being written (by its writer thread), and that one is then put in place and validated."""
    waiting: tuple[Task, StagedSystem] | None = None
    try:
        for task in tasks:
            staged, problem = _stage_one(task)
            if waiting is not None:
                before, waiting = waiting, None
                yield _finish_one(*before)
            if staged is None:
                yield None, None, problem
            else:
                waiting = (task, staged)
        if waiting is not None:
            before, waiting = waiting, None
            yield _finish_one(*before)
    finally:
        if waiting is not None:  # a later system failed: the one converted before still goes in place
            with suppress(BaseException):
                waiting[1].complete()


def _stage_one(task: Task) -> tuple[StagedSystem | None, str | None]:
    """One system converted into its staging folder, or why it was skipped."""
    system, out, spec = task
    answered = _specs(spec)
    try:
        staged = stage_system(system, answered, out)
    except (ConvertError, SourceError) as err:
        return None, f"{_label(system)}: not imported: {err}"
    if staged is None:
        found = ", ".join(b.name for b in system.benchmarks) or "none"
        wanted = ", ".join(sorted(answered))
        return None, f"{_label(system)}: no benchmark the specs answer ({wanted}); found: {found}"
    return staged, None


def _unanswered(systems: list[SystemSource], answered: Mapping[str, LoadedSpec]) -> list[str]:
    """Why benchmark folders of importable systems are left out: no spec answers them, or the system's strong-scaling
    folder of the same benchmark takes the one submission folder the spec id names."""
    notes = []
    for system in systems:
        for bench in system.benchmarks:
            where = f"{_label(system)}/{bench.scaling_mode + '/' if bench.scaling_mode else ''}{bench.name}"
            if bench.name in answered and system.shadowed(bench):
                notes.append(
                    f"{where}: MLPerf HPC weak scaling not imported: strong/{bench.name} of the same system is, into "
                    f"the one folder {answered[bench.name].spec.id} a submission has for the spec"
                )
            elif bench.name not in answered and any(b.name in answered for b in system.benchmarks):
                notes.append(f"{where}: no spec of this import answers MLPerf's {bench.name!r}")
    return notes


def _finish_one(task: Task, staged: StagedSystem) -> Outcome:
    """A staged system put in place and validated: (import, report), or why it was skipped."""
    system, _, spec = task
    try:
        imported = staged.complete()
    except (ConvertError, SourceError) as err:
        return None, None, f"{_label(system)}: not imported: {err}"
    report = validate_submission(imported.output, specs=_index(spec))
    for bench in report.benchmarks:
        for run in bench.runs:
            run.log = None
    return imported.slim(), report, None


def _label(system: SystemSource) -> str:
    return f"{system.org.rel}/results/{system.name}"


@cache
def _spec(spec: str | Path) -> LoadedSpec:
    """The spec named with --spec, loaded once per process (a built-in one from the validator's cache)."""
    path = find_spec(str(spec))
    found = load_with_digest(path)
    return found[0] if found is not None else load_spec(path)


@cache
def _specs(spec: str | Path | None) -> Mapping[str, LoadedSpec]:
    """MLPerf benchmark name -> the spec its results answer: `spec` alone when given, else every built-in one
    (each loaded when a system first needs it: a round needs a few)."""
    names = mlperf_benchmarks()
    if spec is not None:
        loaded = _spec(spec)
        benchmark = loaded.spec.mlperf.benchmark if loaded.spec.mlperf is not None else names.get(loaded.spec.id)
        if benchmark is None:
            raise UsageError(f"spec {loaded.spec.id!r} answers no MLPerf benchmark; specs that do: {', '.join(names)}")
        return {benchmark: loaded}
    return _BuiltinSpecs({benchmark: spec_id for spec_id, benchmark in names.items()})


class _BuiltinSpecs(Mapping[str, LoadedSpec]):
    """MLPerf benchmark name -> its built-in spec, loaded (once, by _builtin) when first looked up."""

    def __init__(self, spec_ids: dict[str, str]) -> None:
        self.spec_ids = spec_ids

    def __getitem__(self, benchmark: str) -> LoadedSpec:
        return _builtin(self.spec_ids[benchmark])

    def __iter__(self) -> Iterator[str]:
        return iter(self.spec_ids)

    def __len__(self) -> int:
        return len(self.spec_ids)


def _builtin(spec_id: str) -> LoadedSpec:
    """A built-in spec, from the validator's cache, which validating each submission then finds there."""
    found = load_with_digest(find_spec(spec_id))
    return found[0] if found is not None else load_spec(spec_id)


@cache
def _index(spec: str | Path | None) -> SpecIndex:
    """The specs an imported submission may name: the built-in ones, and `spec` when given (as `validate --spec`)."""
    if spec is None:
        return SpecIndex()
    loaded = _spec(spec)
    return SpecIndex([(loaded, spec_digest(loaded.spec))])


def _score(outcome: ImportOutcome) -> None:
    from specbench.scoring.leaderboard import build

    board = build([s.report for s in outcome.systems])
    by_root: dict[str, list[Entry]] = {}
    for group in board.groups:
        for entry in group.entries:
            by_root.setdefault(entry.path, []).append(entry)
    for system in outcome.systems:
        system.entries = by_root.get(system.report.root, [])
