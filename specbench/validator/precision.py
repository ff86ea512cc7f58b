"""The precision a benchmark trains in picks the peak that bounds its rate: it must be declared, known and agreed.

submission.yaml declares it as a hyperparameter (`hyperparameters.precision`, layer 8) or a layer-7
choice (`layers.parallelism_precision.precision`); each run's result.json records it in
`settings.precision`, and a log may log it as a `precision` event. Names are compared by the
datasheet column they map to (`amp_bf16` and `bf16` are one, docs/devices.md). A precision that is
missing or unknown is an error on a ranked profile (a warning on an unranked one); records that
disagree are an error on any profile. result.json's `hyperparameters` and a logged precision that is a
declared hyperparameter are compared exactly elsewhere (SB-RES-001, SB-EQV-004).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from specbench.physics import PRECISIONS, Precision, precision_column
from specbench.spec.system import SubmissionMeta
from specbench.validator.documents import Loaded
from specbench.validator.findings import Findings
from specbench.validator.model import BenchmarkData, RunData

DECLARED_AT: tuple[tuple[str, ...], ...] = (
    ("hyperparameters", "precision"),
    ("layers", "parallelism_precision", "precision"),
)
"""Where submission.yaml declares the precision, in the order they are read."""
KNOWN = f"a precision name of docs/devices.md ({', '.join(PRECISIONS)}, or an alias such as amp_bf16)"


def column(value: Any) -> Precision | None:
    """The datasheet column a recorded precision maps to, or None for an unknown name or a value that is no text."""
    return precision_column(value) if isinstance(value, str) else None


def _shown(value: Any) -> str:
    found = column(value)
    return f"{value!r} (column {found})" if found is not None else f"{value!r} (no column)"


@dataclass(frozen=True)
class Declared:
    """One place submission.yaml declares the precision: its path, the value, and the datasheet column."""

    path: tuple[str, ...]
    value: Any
    column: Precision | None

    @property
    def where(self) -> str:
        return ".".join(self.path)


def declared(meta: SubmissionMeta) -> list[Declared]:
    """Each precision submission.yaml declares, in the order of DECLARED_AT (a null value declares none)."""
    found: list[Declared] = []
    for path in DECLARED_AT:
        node: Any = getattr(meta, path[0])
        for key in path[1:]:
            node = node.get(key) if isinstance(node, dict) else None
        if node is not None:
            found.append(Declared(path, node, column(node)))
    return found


@dataclass
class PrecisionCheck:
    findings: Findings
    bench: BenchmarkData
    meta: SubmissionMeta
    meta_file: Loaded
    ranked: bool

    @property
    def unusable(self) -> str:
        return "SB-PHY-006" if self.ranked else "SB-PHY-007"

    def check_declared(self, imported: bool) -> Declared | None:
        """The declared precision every record is compared with; findings when it is missing, unknown or split."""
        found = declared(self.meta)
        if not found:
            if not imported:  # MLPerf results state no precision: bounded by the highest rate (docs/rules.md)
                self.findings.add(
                    self.unusable,
                    self.meta_file.file,
                    "expected a precision in hyperparameters.precision or layers.parallelism_precision.precision, "
                    f"found none{self._recorded()}",
                )
            return None
        for item in found:
            if item.column is None:
                self.findings.add(
                    self.unusable,
                    self.meta_file.file,
                    f"expected {item.where} to be {KNOWN}, found {item.value!r}",
                    **self.meta_file.locate(*item.path),
                )
        known = [item for item in found if item.column is not None]
        if not known:
            return None
        reference = known[0]
        for item in known[1:]:
            if item.column != reference.column:
                self.findings.add(
                    "SB-PHY-008",
                    self.meta_file.file,
                    f"expected {item.where} of column {reference.column} ({reference.where} {reference.value!r}), "
                    f"found {_shown(item.value)}",
                    **self.meta_file.locate(*item.path),
                )
        return reference

    def _recorded(self) -> str:
        """Where a run records the precision the submission forgot to declare, for the message."""
        for run in self.bench.runs:
            if run.result is not None and "precision" in run.result.settings:
                value = run.result.settings["precision"]
                return f" ({run.folder}/result.json records settings.precision {value!r}: declare it)"
        return ""

    def check_run(self, run: RunData, reference: Declared, result_file: Loaded | None, logged: bool) -> None:
        """result.json's settings.precision and, where `logged`, the log's precision events against the declared."""
        expected = f"of column {reference.column} (submission.yaml {reference.where} {reference.value!r})"
        settings = run.result.settings if run.result is not None else {}
        if "precision" in settings and column(settings["precision"]) != reference.column:
            where = result_file.locate("settings", "precision") if result_file is not None else {}
            self.findings.add(
                "SB-PHY-008",
                f"{run.folder}/result.json",
                f"expected settings.precision {expected}, found {_shown(settings['precision'])}",
                **where,
            )
        if not logged or run.log is None:
            return
        for event in run.log.all("precision"):
            if column(event.value) != reference.column:
                self.findings.add(
                    "SB-PHY-008",
                    f"{run.folder}/log.txt",
                    f"expected the logged precision {expected}, found {_shown(event.value)}",
                    line=event.line,
                    json_path="value",
                )


def check_precision(
    findings: Findings,
    bench: BenchmarkData,
    meta_file: Loaded,
    results: Mapping[str, Loaded],
    *,
    ranked: bool,
    imported: bool,
) -> None:
    """Declared, known, and the same datasheet column in submission.yaml, every result.json and every log."""
    if bench.meta is None:
        return
    check = PrecisionCheck(findings, bench, bench.meta, meta_file, ranked)
    reference = check.check_declared(imported)
    if reference is None:
        return
    logged = "precision" not in bench.meta.hyperparameters  # a declared hyperparameter's logged value is SB-EQV-004's
    for run in bench.runs:
        check.check_run(run, reference, results.get(f"{run.folder}/result.json"), logged)
