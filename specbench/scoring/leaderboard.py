"""From validation reports to ranked tables: one table per (spec, version, level, profile, power scope).

Results of different specs, spec versions, levels, profiles or power scopes are never ranked
together; smoke (unranked) profiles and non-compliant submissions are listed with the reason
and never ranked; a result whose power was not measured is never ranked per watt. Imported MLPerf
HPC weak-scaling results (models per minute) are listed in groups of their own, unranked.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from specbench.accounting.accounts import Accounts, spec_flops_per_sample
from specbench.accounting.quality import spec_outcome
from specbench.scoring.aggregate import Aggregate, aggregate
from specbench.scoring.listed import RULE_TITLES, placement
from specbench.scoring.metrics import RunScore
from specbench.scoring.reproduction import Claim, ReproductionStatus, Rerun, Side, judge, rank_block
from specbench.scoring.status import brief_noncompliant, brief_profile, entry_power_reasons, run_power_reason
from specbench.spec.models import Spec
from specbench.validator.model import BenchmarkData, Report, RunData


@dataclass(frozen=True)
class GroupKey:
    spec_id: str
    spec_version: str
    kind: str
    level: str
    profile: str
    scope: str
    variant: str = ""
    """The model variant (llm-gpt 800M, 13B, ...): different variants are different problems."""
    scaling: str = ""
    """`weak` for imported MLPerf HPC weak-scaling results (another metric: models per minute), never grouped
    with a time to train."""
    rule: str = ""
    """The rule the runs followed (a scoring method), on the board of a spec that lists other specs' results
    (scoring/listed.py): a run that stopped at the target is never ranked with one that trained the whole budget."""
    via: str = ""
    """The spec the entries were validated by, where they are listed under another's id (`mlperf-hpc-deepcam 1.0.0`)."""

    def title(self) -> str:
        variant = f" · model {self.variant}" if self.variant else ""
        scaling = f" · MLPerf HPC {self.scaling} scaling" if self.scaling else ""
        listed = (f" · imported as {self.via}" if self.via else "") + (
            f" · {RULE_TITLES.get(self.rule, self.rule)}" if self.rule else ""
        )
        return (
            f"{self.spec_id} {self.spec_version}{variant}{scaling}{listed} · {self.kind} · level {self.level} · profile "
            f"{self.profile} · power scope {self.scope}"
        )

    def slug(self) -> str:
        variant = f"-{self.variant}" if self.variant else ""
        scaling = f"-{self.scaling}" if self.scaling else ""
        listed = "".join(f"-{part.replace(' ', '-')}" for part in (self.via, self.rule) if part)
        return (
            f"{self.spec_id}-{self.spec_version}{variant}{scaling}{listed}-{self.level}-{self.profile}-{self.scope}"
        ).replace(".", "_")


_SLUG_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass
class Entry:
    """One benchmark of one submission, scored."""

    submitter: str
    system: str
    benchmark: str
    path: str
    key: GroupKey
    ranked_profile: bool
    compliant: bool
    runs: list[RunScore]
    aggregate: Aggregate
    findings: list[dict[str, Any]]
    power_measured: bool
    report: Report | None = None
    bench: BenchmarkData | None = None
    rank: int | None = None
    rank_per_w: int | None = None
    unranked: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    folder: str = ""
    """The folder as the board shows it: relative to the scored root, under the root's name."""
    unranked_brief: list[str] = field(default_factory=list)
    """`unranked` in a few words each, for the tables."""
    power_brief: list[str] = field(default_factory=list)
    """Why the completed runs measured no energy, in a few words ('not measured: no meter (NVML: no GPU)')."""
    power_reasons: list[str] = field(default_factory=list)
    """The same reasons in full, as the runs give them."""
    reproduction: ReproductionStatus | None = None
    """What the re-runs of `score --reproductions` say of it (scoring/reproduction.py); None where none names it."""

    @property
    def slug(self) -> str:
        """The entry's page name: the names with each character but letters, digits, '.', '_' and '-' as '_'."""
        return _SLUG_UNSAFE.sub("_", f"{self.submitter}--{self.system}--{self.benchmark}")

    def value(self, metric: str) -> float | None:
        return self.aggregate.values.get(metric)

    @property
    def flops_stated(self) -> bool:
        """Whether the entry's spec states FLOPs per sample (so Valid FLOPS ranks it), as MLPerf imports often do not."""
        bench = self.bench
        if bench is None or bench.spec is None:
            return True
        hyperparameters = bench.meta.hyperparameters if bench.meta is not None else {}
        return spec_flops_per_sample(bench.spec, hyperparameters) is not None

    @property
    def target(self) -> float | None:
        """The spec's target quality (time-to-quality specs), shown beside what the runs achieved."""
        spec = self.bench.spec.spec if self.bench is not None and self.bench.spec is not None else None
        return spec.quality.target if spec is not None and spec.quality is not None else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "submitter": self.submitter,
            "system": self.system,
            "benchmark": self.benchmark,
            "path": self.path,
            "folder": self.folder,
            "group": self.key.__dict__,
            "compliant": self.compliant,
            "rank": self.rank,
            "rank_per_w": self.rank_per_w,
            "unranked": self.unranked,
            "notes": self.notes,
            "status": self.status_lines(),
            "reproduction": self.reproduction.to_dict() if self.reproduction is not None else None,
            "power_measured": self.power_measured,
            "power_reasons": self.power_reasons,
            "aggregate": {
                "values": self.aggregate.values,
                "runs_used": self.aggregate.used,
                "runs_dropped": self.aggregate.dropped,
                "spread": dict(zip(("min", "median", "max"), self.aggregate.spread, strict=False))
                if self.aggregate.spread
                else None,
                "spread_metric": self.aggregate.spread_metric,
                "problem": self.aggregate.problem,
            },
            "runs": [{**r.to_dict(), "power_reason": self.run_power_reason(r.run)} for r in self.runs],
            "findings": self.findings,
        }

    def status_lines(self) -> list[str]:
        """The entry's status in brief lines: ranked or why not, and why power was not measured."""
        if self.unranked_brief:
            lines = list(self.unranked_brief)
        elif self.rank is None:
            lines = ["not ranked: no value to rank by"]
        else:
            lines = ["ranked" if self.rank_per_w is not None else "ranked, not per watt"]
        if not self.power_measured:
            lines.extend(self.power_brief or ["not measured"])
        if self.reproduction is not None:
            lines.append(self.reproduction.line())
        return lines

    def side(self) -> Side | None:
        """Its numbers as a reproduction compares them (scoring/reproduction.py); None without a spec."""
        spec = self.bench.spec.spec if self.bench is not None and self.bench.spec is not None else None
        if spec is None:
            return None
        return Side(spec.kind, self.aggregate.values, self.runs, spec.measurement.runs.max_failed, spec.quality)

    def run_power_reason(self, run: str) -> str | None:
        """Why the run `run` has no energy, in full (None when it has one)."""
        data = next((r for r in self.bench.runs if r.name == run), None) if self.bench is not None else None
        return run_power_reason(self.path, data) if data is not None else None


@dataclass
class Group:
    key: GroupKey
    entries: list[Entry]

    @property
    def primary(self) -> str:
        """What ranks: samples/s (throughput), Valid FLOPS; or, for an imported MLPerf benchmark whose spec states no
        FLOPs per sample, MLPerf's own metric, the time to train (lowest first)."""
        if self.key.kind == "throughput":
            return "samples_per_s"
        if self.entries and not any(e.flops_stated for e in self.entries):
            return "time_s"
        return "valid_flops_per_s"


@dataclass
class Leaderboard:
    groups: list[Group]
    unusable: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "format_version": 1,
            "groups": [
                {"title": g.key.title(), "key": g.key.__dict__, "entries": [e.to_dict() for e in g.entries]}
                for g in self.groups
            ],
            "unusable": self.unusable,
        }


def _run_score(root: str, run: RunData, spec: Spec) -> RunScore:
    """A run's score: only the numbers validation recomputed from the evidence, never result.json's."""
    accounts = run.accounts if run.accounts is not None else EMPTY
    if accounts.credited is None and spec.kind == "throughput" and spec.quality is not None:
        accounts = replace(accounts, credited=_logged_quality(run, spec))
    return RunScore.of(accounts, run=run.name, status=run.status, reason=run.reason)


def _logged_quality(run: RunData, spec: Spec) -> float | None:
    """The quality a throughput run's log shows (its eval_accuracy events), credited by the spec's rule.

    Throughput specs rank by rate, never by quality; it is shown beside the rate where the spec has one.
    Validation keeps no evaluations of a throughput run, but the log's accuracy values, read once there.
    """
    values = [e.value for e in run.evaluations] or list(run.logged_accuracy)
    return spec_outcome(spec, values).credited if values else None


EMPTY = Accounts(*([None] * len(fields(Accounts))))


def _benchmark_findings(report: Report, bench: BenchmarkData) -> list[dict[str, Any]]:
    """Findings of this benchmark's files, and those of the shared files (system.yaml, manifest)."""
    own = []
    for finding in report.findings:
        file = finding.location.file or ""
        first = file.split("/", 1)[0]
        if first == bench.name or "/" not in file:
            own.append(finding.to_dict())
    return own


def _entry(report: Report, bench: BenchmarkData) -> Entry | None:
    if bench.spec is None or bench.meta is None:
        return None
    spec = bench.spec.spec
    runs = [_run_score(report.root, run, spec) for run in bench.runs]
    measurement = spec.measurement
    order = spec.scoring if spec.trains_whole_budget else spec.kind
    agg = aggregate(
        runs, measurement.runs.aggregation, order or spec.kind, measurement.runs.max_failed, measurement.runs.count
    )
    findings = _benchmark_findings(report, bench)
    errors = [f for f in findings if f["severity"] == "error"]
    completed = [r for r in runs if r.status == "success"]
    entry = Entry(
        submitter=bench.meta.submitter,
        system=bench.meta.system,
        benchmark=bench.name,
        path=report.root,
        key=GroupKey(
            spec.id,
            spec.version,
            spec.kind,
            bench.spec.level,
            bench.spec.profile,
            measurement.power.scope,
            bench.meta.variant or "",
            "weak" if bench.mlperf_weak_scaling else "",
        ),
        ranked_profile=bench.spec.ranked,
        compliant=not errors,
        runs=runs,
        aggregate=agg,
        findings=findings,
        power_measured=bool(completed) and all(r.energy_j is not None for r in completed),
        report=report,
        bench=bench,
    )
    if bench.mlperf_scaling_factor is not None:
        _scale_time(entry, bench.mlperf_scaling_factor)
    if bench.mlperf_weak_scaling:
        _weak_scaling(entry)
    _place(entry, bench)
    if errors:
        entry.unranked.append(
            f"non-compliant: {errors[0]['code']} {errors[0]['message']}"
            + (f" (+{len(errors) - 1} more)" if len(errors) > 1 else "")
        )
        entry.unranked_brief.append(brief_noncompliant(errors[0]["code"], len(errors) - 1))
    if not entry.ranked_profile:
        entry.unranked.append(f"profile {bench.spec.profile!r} is never ranked")
        entry.unranked_brief.append(brief_profile(bench.spec.profile))
    if agg.problem and not bench.mlperf_weak_scaling:
        entry.unranked.append(agg.problem)
        entry.unranked_brief.append("not ranked: " + (agg.brief or agg.problem))
    if not entry.power_measured:
        entry.power_brief, entry.power_reasons = entry_power_reasons(report.root, bench)
    return entry


def _place(entry: Entry, bench: BenchmarkData) -> None:
    """An entry listed on another spec's board (scoring/listed.py) goes to that spec's group of its rule, unranked
    where the comparison is not sound; an entry of such a board's own spec says which rule its runs followed."""
    place = placement(bench)
    if place is None:
        return
    entry.key = replace(
        entry.key,
        spec_id=place.spec_id,
        spec_version=place.spec_version,
        variant=place.variant,
        rule=place.rule,
        via=place.via,
    )
    for reason, brief in place.unranked:
        entry.unranked.append(reason)
        entry.unranked_brief.append(brief)


WEAK_SCALING_UNRANKED = (
    "MLPerf HPC weak scaling: its runs are model instances trained at once, which MLPerf scores together in "
    "models per minute (import.json: benchmarks.<name>.published), a metric no spec states; not ranked, and "
    "never against a time to train"
)


def _weak_scaling(entry: Entry) -> None:
    """An imported MLPerf HPC weak-scaling result, listed unranked in its own group with no aggregate: an olympic
    mean over concurrently trained instances would be no time to train."""
    entry.aggregate = Aggregate({}, [], [], None, spread_metric=entry.aggregate.spread_metric)
    entry.unranked.append(WEAK_SCALING_UNRANKED)
    entry.unranked_brief.append("not ranked: MLPerf HPC weak scaling (models per minute)")


def _scale_time(entry: Entry, factor: float) -> None:
    """An imported MLPerf result's time to train as MLPerf publishes it: the olympic mean x scaling.json's factor."""
    values = entry.aggregate.values
    raw = values.get("time_s")
    values["time_s_unscaled"] = raw
    values["mlperf_scaling_factor"] = factor
    if raw is not None:
        values["time_s"] = raw * factor
        entry.notes.append(
            f"time to train = olympic mean {raw:,.2f} s x MLPerf's scaling factor {factor:.6g} (scaling.json)"
        )


def shown_folder(path: str, roots: Sequence[str | Path]) -> str:
    """`path` relative to the scored root that holds it, under that root's name (as given when none does)."""
    target = Path(path).resolve()
    for root in sorted((Path(r).resolve() for r in roots), key=lambda r: -len(r.parts)):
        if target == root or root in target.parents:
            return os.path.join(root.name or str(root), *target.relative_to(root).parts)
    return path


def build(reports: Sequence[Report], roots: Sequence[str | Path] = (), reruns: Sequence[Rerun] = ()) -> Leaderboard:
    """Score every benchmark of every report and rank within each group; `roots` are the folders scored,
    `reruns` the reproductions that may reproduce or contradict them (`score --reproductions`)."""
    groups: dict[GroupKey, list[Entry]] = {}
    unusable = []
    for report in reports:
        if not report.usable:
            unusable.append(
                {
                    "path": report.path,
                    "folder": shown_folder(report.path, roots),
                    "findings": [f.to_dict() for f in report.findings],
                }
            )
            continue
        for bench in report.benchmarks:
            entry = _entry(report, bench)
            if entry is None:
                path = f"{report.path}/{bench.name}"
                findings = [f.to_dict() for f in report.findings]
                unusable.append({"path": path, "folder": shown_folder(path, roots), "findings": findings})
                continue
            entry.folder = shown_folder(entry.path, roots)
            _settle_reproduction(entry, reruns)
            groups.setdefault(entry.key, []).append(entry)
    ordered = []
    for key in sorted(
        groups,
        key=lambda k: (k.spec_id, k.spec_version, k.variant, k.level, k.profile, k.scope, k.scaling, k.via, k.rule),
    ):
        group = Group(key, groups[key])
        _rank(group)
        ordered.append(group)
    return Leaderboard(ordered, unusable)


def _settle_reproduction(entry: Entry, reruns: Sequence[Rerun]) -> None:
    """The entry's reproduction status, and the rank it bars: contradicted, or unconfirmed and not reproduced."""
    side = entry.side()
    meta = entry.bench.meta if entry.bench is not None else None
    if reruns and side is not None and meta is not None:
        digest = entry.report.manifest_sha256 if entry.report is not None else None
        hardware = entry.report.system.layers.get("hardware", {}) if entry.report and entry.report.system else {}
        claim = Claim(digest, entry.benchmark, meta, side, hardware)
        entry.reproduction = judge(claim, reruns)
    block = rank_block(entry.reproduction, {str(f["code"]) for f in entry.findings})
    if block is not None:
        entry.unranked.append(block[0])
        entry.unranked_brief.append(block[1])


def _rank(group: Group) -> None:
    """Competition ranks by the primary metric and per watt: equal values share a rank (1, 1, 3), and rows
    that tie are ordered by name (`_names`), never by the order the reports came in."""
    primary = group.primary
    rankable = [e for e in group.entries if not e.unranked and e.value(primary) is not None]
    for entry, rank in _competition(rankable, primary):
        entry.rank = rank
    per_w = [e for e in rankable if e.power_measured and e.value("valid_flops_per_w") is not None]
    for entry, rank in _competition(per_w, "valid_flops_per_w"):
        entry.rank_per_w = rank
    for entry in group.entries:
        if entry in rankable and entry not in per_w:
            entry.notes.append("power not measured: not ranked per watt")
    sign = 1.0 if primary in LOWER_IS_BETTER else -1.0
    group.entries.sort(key=lambda e: (e.rank is None, e.rank or 0, _ordered(e.value(primary), sign), *_names(e)))


def _ordered(value: float | None, sign: float) -> float:
    """A value as the sort key of its rows: best first, a missing value last."""
    return sign * value if value is not None else math.inf


def _names(entry: Entry) -> tuple[str, str, str, str]:
    """The order of rows with equal values: submitter, system, benchmark, then the folder shown."""
    return (entry.submitter, entry.system, entry.benchmark, entry.folder)


LOWER_IS_BETTER = frozenset({"time_s"})


def _competition(entries: list[Entry], metric: str) -> list[tuple[Entry, int]]:
    """Each entry with its rank by `metric`, best first (highest; lowest for a time): 1 + the number better."""
    sign = 1.0 if metric in LOWER_IS_BETTER else -1.0
    ranked: list[tuple[Entry, int]] = []
    for position, entry in enumerate(
        sorted(entries, key=lambda e: (sign * (e.value(metric) or 0.0), *_names(e))), start=1
    ):
        tied = bool(ranked) and ranked[-1][0].value(metric) == entry.value(metric)
        ranked.append((entry, ranked[-1][1] if tied else position))
    return ranked
