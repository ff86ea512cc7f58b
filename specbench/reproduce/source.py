"""The submitted benchmark a reproduction re-runs: validated first, its spec found by digest, its claim scored.

A submission is untrusted input: it is validated before anything else, and what the re-run takes from
it (spec, profile, level, hyperparameters, settings, seeds, processes) is data, checked again by
execute's own rules. Nothing in it is executed, and no path in it is followed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specbench.errors import UsageError
from specbench.scoring.leaderboard import Entry, build
from specbench.spec.loader import LoadedSpec
from specbench.spec.system import SubmissionMeta
from specbench.validator.context import SpecIndex
from specbench.validator.model import BenchmarkData, Report
from specbench.validator.validate import classify, validate_submission

MAX_SHOWN = 3


@dataclass(frozen=True)
class Source:
    """One validated submitted benchmark and everything a re-run takes from it."""

    given: Path
    root: Path
    report: Report
    bench: BenchmarkData
    meta: SubmissionMeta
    spec: LoadedSpec
    entry: Entry
    manifest_sha256: str

    @property
    def hardware(self) -> dict[str, Any]:
        """system.yaml's `layers.hardware`: the devices the submission ran on."""
        return dict(self.report.system.layers.get("hardware", {})) if self.report.system is not None else {}

    @property
    def processes(self) -> int:
        """The job's processes (system.yaml's communication.world_size; 1 where it says none)."""
        layers = self.report.system.layers if self.report.system is not None else {}
        world = layers.get("communication", {}).get("world_size")
        return world if isinstance(world, int) and not isinstance(world, bool) and world >= 1 else 1

    @property
    def nodes(self) -> int:
        return self.report.system.nodes if self.report.system is not None else 1

    @property
    def seeds(self) -> list[int | None]:
        """Each run's seed, as the validator read it from the run's log and result.json, in run order."""
        return [run.seed for run in sorted(self.bench.runs, key=lambda r: r.number)]

    @property
    def benchmark_folder(self) -> Path:
        return self.root / self.bench.name


def load_source(path: Path) -> Source:
    """Validate the submission at `path` and take its one benchmark; UsageError says why it cannot be re-run."""
    target = classify(path)
    if target is None:
        raise UsageError(
            f"expected a submission folder ORG/SYSTEM (with system.yaml) or a BENCHMARK folder (with "
            f"submission.yaml), found {path}"
        )
    report = validate_submission(path)
    if not report.usable:
        raise UsageError(f"{path} cannot be validated: {_shown(report)}; run `specbench validate {path}`")
    if report.errors:
        raise UsageError(
            f"{path} is not compliant ({len(report.errors)} errors: {_shown(report)}); reproduce re-runs compliant "
            f"submissions only: run `specbench validate {path}` for every finding"
        )
    bench = _one_benchmark(path, report)
    meta = bench.meta
    assert meta is not None  # a compliant benchmark has its submission.yaml
    spec = SpecIndex().find(meta.spec_id, meta.spec_sha256)
    if spec is None:
        raise UsageError(
            f"{path} answers spec {meta.spec_id} {meta.spec_version} with sha256 {meta.spec_sha256[:16]}..., which "
            "no spec of this installation has (`specbench specs` lists them); install the specbench release that "
            "has it"
        )
    entry = next(e for g in build([report]).groups for e in g.entries if e.benchmark == bench.name)
    root = Path(report.root)
    assert report.manifest_sha256 is not None  # a compliant submission has its manifest, read by validation
    return Source(path, root, report, bench, meta, spec, entry, report.manifest_sha256)


def _one_benchmark(path: Path, report: Report) -> BenchmarkData:
    """The benchmark to re-run: the folder's only one (a record is about one benchmark)."""
    if len(report.benchmarks) != 1:
        names = ", ".join(sorted(b.name for b in report.benchmarks))
        raise UsageError(
            f"{path} holds {len(report.benchmarks)} benchmarks ({names}); reproduce re-runs one: give its folder, "
            f"e.g. {path / report.benchmarks[0].name}"
        )
    bench = report.benchmarks[0]
    if bench.meta is None or bench.spec is None:
        raise UsageError(f"{path / bench.name} has no usable submission.yaml or spec")
    return bench


def _shown(report: Report) -> str:
    """The first errors, one phrase each: 'SB-RUN-001 caraml-resnet50: wrong number of runs: ...'."""
    errors = report.errors or report.findings
    shown = [f"{f.code} {f.location.file or ''}: {f.message}".replace(" :", ":") for f in errors[:MAX_SHOWN]]
    more = f" (+{len(errors) - MAX_SHOWN} more)" if len(errors) > MAX_SHOWN else ""
    return "; ".join(shown) + more
