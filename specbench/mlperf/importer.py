"""`import_results`: an MLPerf Training results tree in, validated and scored specbench submissions out."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from specbench.errors import EXIT_NONCOMPLIANT, EXIT_OK, UsageError
from specbench.mlperf.convert import ConvertError, SystemImport, convert_system
from specbench.mlperf.source import SourceError, scan
from specbench.spec.loader import load_spec
from specbench.validator import validate_submission
from specbench.validator.mlperf import MLPERF_BENCHMARKS
from specbench.validator.model import Report

if TYPE_CHECKING:
    from specbench.scoring.leaderboard import Entry

DEFAULT_SPEC = "mlperf-resnet50"


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


def import_results(root: str | Path, out: str | Path, spec: str | Path | None = None) -> ImportOutcome:
    """Convert every system of an MLPerf Training results tree under `root` into `out`, then validate and score.

    `out` must lie outside `root` (the results tree is never written). `spec` is the spec file or id
    the results answer (default: the built-in mlperf-resnet50). Raises UsageError when nothing under
    `root` can be imported.
    """
    root, out = Path(root), Path(out)
    if not root.is_dir():
        raise UsageError(f"RESULTS_ROOT {root}: no such folder")
    if _overlap(root.resolve(), out.resolve()):
        raise UsageError(
            f"--out {out} overlaps RESULTS_ROOT {root}: the results tree is never written into; choose a folder outside it"
        )
    loaded = load_spec(spec if spec is not None else DEFAULT_SPEC)
    if loaded.spec.id not in MLPERF_BENCHMARKS:
        known = ", ".join(MLPERF_BENCHMARKS)
        raise UsageError(f"spec {loaded.spec.id!r} answers no MLPerf benchmark; specs that do: {known}")
    tree = scan(root)
    if not tree.systems:
        raise UsageError(
            f"no MLPerf results under {root}: expected <org>/systems/<system>.json with "
            "<org>/results/<system>/<benchmark>/result_*.txt (at most three folders down)"
        )
    outcome = ImportOutcome(root, out, loaded.spec.id, skipped=list(tree.skipped))
    written: dict[Path, str] = {}
    for system in tree.systems:
        label = f"{system.org.rel}/results/{system.name}"
        try:
            imported = convert_system(system, loaded, out, taken=written)
        except (ConvertError, SourceError) as err:
            outcome.skipped.append(f"{label}: not imported: {err}")
            continue
        if imported is None:
            found = ", ".join(b.name for b in system.benchmarks) or "none"
            outcome.skipped.append(
                f"{label}: no benchmark {loaded.spec.id} answers (it answers MLPerf's "
                f"{MLPERF_BENCHMARKS[loaded.spec.id]!r}; found: {found})"
            )
            continue
        written[imported.output.resolve()] = imported.label
        report = validate_submission(imported.output, None if spec is None else spec)
        outcome.systems.append(SystemOutcome(imported, report))
    if not outcome.systems:
        raise UsageError(f"nothing under {root} could be imported: " + "; ".join(outcome.skipped))
    _score(outcome)
    return outcome


def _score(outcome: ImportOutcome) -> None:
    from specbench.scoring.leaderboard import build

    board = build([s.report for s in outcome.systems])
    by_root: dict[str, list[Entry]] = {}
    for group in board.groups:
        for entry in group.entries:
            by_root.setdefault(entry.path, []).append(entry)
    for system in outcome.systems:
        system.entries = by_root.get(system.report.root, [])
