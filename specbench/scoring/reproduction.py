"""A submitted benchmark against its re-run: the metrics compared, their tolerances, the verdict, and the devices.

`specbench reproduce` calls `compare` to write its record; `specbench score --reproductions` calls it
again on the two folders' evidence, so a record whose verdict its own runs do not support is rejected.
Every tolerance is here, once, with its reason in docs/reproduce.md:

- time or throughput: the re-run's best run may fall short of the claim (the spec's aggregate of its
  runs) by RATE_TOLERANCE; other work on a host only slows a run, so the best run is the fairest;
- quality: a time-to-quality spec's quality factor ((achieved/target)^n, capped as the spec says),
  which Valid FLOPS multiplies the rate by, within the same tolerance; a throughput spec's target must
  be met by the re-run where the claim meets it;
- energy per sample: the re-run's lowest within ENERGY_TOLERANCE, the rate's tolerance compounded with
  the power reading's accuracy;
- failed runs: no more than the spec's `max_failed`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from specbench.formats.reproduction import MetricCheck, MetricVerdict, ReproductionRecord, Verdict
from specbench.scoring.metrics import RunScore
from specbench.spec.models import Quality
from specbench.spec.system import SubmissionMeta
from specbench.validator.bounds import UNCONFIRMED_CODES

RATE_TOLERANCE = 0.10
"""How far the re-run's best time or throughput may fall short of the claim (docs/reproduce.md)."""
METER_ACCURACY = 0.05
"""NVML's stated accuracy of a power reading, +/- 5% of the draw (nvmlDeviceGetPowerUsage)."""
ENERGY_TOLERANCE = (1.0 + RATE_TOLERANCE) * (1.0 + METER_ACCURACY) - 1.0
"""Energy per sample is power x time per sample: the rate's tolerance compounded with the reading's accuracy."""
RATE_SOURCE = "docs/reproduce.md: 10% on the same device model and count"
QUALITY_SOURCE = "docs/reproduce.md: the quality factor multiplies the rate in Valid FLOPS, so the rate's 10%"
ENERGY_SOURCE = "docs/reproduce.md: (1 + 10%) x (1 + NVML's 5%) - 1"
Better = Literal["higher", "lower"]
Status = Literal["reproduced", "contradicted", "rejected"]
STATUS_ORDER: tuple[Status, ...] = ("contradicted", "reproduced", "rejected")
"""Which status an entry takes when its re-runs disagree: one contradiction outweighs every reproduction."""


@dataclass(frozen=True)
class Side:
    """One benchmark as scoring saw it: its kind, the spec's aggregate of its runs, each run's score, and the
    spec's quality target and failures allowed."""

    kind: str
    values: Mapping[str, float | None]
    runs: Sequence[RunScore]
    max_failed: int
    quality: Quality | None

    def successes(self) -> list[RunScore]:
        return [run for run in self.runs if run.status == "success"]

    def best(self, metric: str, better: Better) -> float | None:
        """The best value of `metric` among the successful runs (the highest or the lowest)."""
        values = [v for run in self.successes() if (v := getattr(run, metric)) is not None]
        if not values:
            return None
        return max(values) if better == "higher" else min(values)


@dataclass(frozen=True)
class Comparison:
    """Every metric compared, the verdict, and what the re-run could not settle (a claim it has no value for)."""

    metrics: list[MetricCheck]
    verdict: Verdict
    reasons: list[str]
    unsettled: list[str] = field(default_factory=list)


def compare(claim: Side, rerun: Side) -> Comparison:
    """The submission's claim against its re-run, metric by metric (see the module's docstring)."""
    checks = [_speed(claim, rerun), *_quality(claim, rerun), _energy(claim, rerun), _failures(claim, rerun)]
    metrics = [check for check, _ in checks if check is not None]
    unsettled = [reason for _, reason in checks if reason]
    reasons = [_reason(m) for m in metrics if m.verdict == "contradicted"]
    return Comparison(metrics, "contradicted" if reasons else "reproduced", reasons, unsettled)


Check = tuple[MetricCheck | None, str | None]
"""A metric compared (None where it does not apply) and why the re-run could not settle it (None where it could)."""


def _speed(claim: Side, rerun: Side) -> Check:
    if claim.kind == "throughput":
        return _within("samples_per_s", "samples/s", "higher", claim, rerun, RATE_TOLERANCE, RATE_SOURCE)
    return _within("time_s", "s", "lower", claim, rerun, RATE_TOLERANCE, RATE_SOURCE)


def _energy(claim: Side, rerun: Side) -> Check:
    return _within("energy_per_sample_j", "J/sample", "lower", claim, rerun, ENERGY_TOLERANCE, ENERGY_SOURCE)


def _within(metric: str, unit: str, better: Better, claim: Side, rerun: Side, tolerance: float, source: str) -> Check:
    """The claim's aggregate against the re-run's best run, allowed to fall short by `tolerance`."""
    submitted, reproduced = claim.values.get(metric), rerun.best(metric, better)
    check = _pending(metric, unit, better, submitted, reproduced, tolerance, source)
    if submitted is None:
        return check("not compared", "the submission has no value"), None
    if reproduced is None:
        if not rerun.successes():
            return check("contradicted", "no run of the re-run succeeded"), None
        return check("not compared", "the re-run has no value"), f"{metric}: the re-run measured none"
    ratio = reproduced / submitted
    short = ratio < 1.0 - tolerance if better == "higher" else ratio > 1.0 + tolerance
    beyond = ratio > 1.0 + tolerance if better == "higher" else ratio < 1.0 - tolerance
    note = f"the re-run's best of {len(rerun.successes())}"
    if beyond:
        note += "; better than the claim beyond the tolerance (a claim may understate)"
    return check("contradicted" if short else "reproduced", note), None


def _pending(
    metric: str,
    unit: str,
    better: Better,
    submitted: float | None,
    reproduced: float | None,
    tolerance: float | None,
    source: str,
) -> Callable[[MetricVerdict, str], MetricCheck]:
    """A MetricCheck of these values, waiting for its verdict and note."""
    ratio = reproduced / submitted if submitted and reproduced is not None else None

    def finish(verdict: MetricVerdict, note: str) -> MetricCheck:
        return MetricCheck(
            metric=metric, unit=unit, better=better, submitted=submitted, reproduced=reproduced, ratio=ratio,
            tolerance=tolerance, source=source, verdict=verdict, note=note,
        )  # fmt: skip

    return finish


def _quality(claim: Side, rerun: Side) -> list[Check]:
    """Time to quality: the quality factor within the rate's tolerance; throughput: the target met as claimed."""
    if claim.quality is None:
        return []
    if claim.kind == "time_to_quality":
        return [_quality_factor(claim, rerun, claim.quality)]
    return [_target_met(claim, rerun, claim.quality)]


def _quality_factor(claim: Side, rerun: Side, quality: Quality) -> Check:
    """(achieved / target)^n as Valid FLOPS applies it, the spec's aggregate of each side, within RATE_TOLERANCE."""
    submitted, reproduced = claim.values.get("penalty_factor"), rerun.values.get("penalty_factor")
    check = _pending("penalty_factor", "1", "higher", submitted, reproduced, RATE_TOLERANCE, QUALITY_SOURCE)
    achieved = f"achieved {_show(claim.values.get('achieved'))} claimed, {_show(rerun.values.get('achieved'))} re-run"
    note = f"{achieved} (target {quality.target:g} {quality.unit}, the spec's aggregate of each)"
    if submitted is None:
        return check("not compared", note), None
    if reproduced is None:
        return check("contradicted", note + "; the re-run has no quality"), None
    return check("contradicted" if reproduced < submitted * (1.0 - RATE_TOLERANCE) else "reproduced", note), None


def _target_met(claim: Side, rerun: Side, quality: Quality) -> Check:
    """A throughput spec's quality: where the claim meets the spec's target, the re-run must meet it too."""
    submitted, reproduced = claim.values.get("achieved"), rerun.values.get("achieved")
    source = f"the spec's target ({quality.metric} {quality.direction} is better, {quality.target:g} {quality.unit})"
    check = _pending("achieved", quality.unit, quality.direction, submitted, reproduced, None, source)
    if submitted is None or not _meets(submitted, quality):
        return check("not compared", "the claim does not meet the target"), None
    if reproduced is None:
        return check("contradicted", "the re-run has no quality"), None
    met = _meets(reproduced, quality)
    return check("reproduced" if met else "contradicted", "the claim meets the target; the re-run must"), None


def _meets(value: float, quality: Quality) -> bool:
    return value >= quality.target if quality.direction == "higher" else value <= quality.target


def _failures(claim: Side, rerun: Side) -> Check:
    failed = float(len(rerun.runs) - len(rerun.successes()))
    submitted = float(len(claim.runs) - len(claim.successes()))
    source = f"the spec's measurement.runs.max_failed ({claim.max_failed})"
    check = _pending("failed_runs", "runs", "lower", submitted, failed, None, source)
    verdict: MetricVerdict = "contradicted" if failed > claim.max_failed else "reproduced"
    return check(verdict, f"{int(failed)} of the re-run's {len(rerun.runs)} runs did not succeed"), None


def _show(value: float | None) -> str:
    return "none" if value is None else f"{value:.4g}"


def _reason(check: MetricCheck) -> str:
    """Why a metric contradicts the claim, in one line."""
    if check.metric == "failed_runs":
        return f"{int(check.reproduced or 0)} re-runs failed; {check.source}"
    if check.ratio is None:
        return f"{check.metric}: {check.note}"
    tolerance = f"{check.tolerance:.1%}" if check.tolerance is not None else check.source
    return (
        f"{check.metric}: re-run {_show(check.reproduced)} {check.unit} is {check.ratio:.3f}x the claimed "
        f"{_show(check.submitted)} {check.unit} (tolerance {tolerance}, {check.better} is better)"
    )


def device_mismatch(
    submitted: Mapping[str, Any], here: Mapping[str, Any], here_is: str = "the re-run ran on"
) -> str | None:
    """Why two hosts' devices differ (system.yaml's `layers.hardware`), or None where they are the same.

    Accelerators by model and count; on a host without one (a CPU run), the CPU by model and core count.
    `here_is` introduces the second host in the message.
    """
    keys = ["accelerator_model", "accelerator_count"]
    if not submitted.get("accelerator_count") and not here.get("accelerator_count"):
        keys += ["cpu_model", "cpu_count"]
    differing = [key for key in keys if submitted.get(key) != here.get(key)]
    if not differing:
        return None
    devices = f"the submission ran on {_devices(submitted)}, {here_is} {_devices(here)}"
    return f"{devices} ({', '.join(differing)} differ)"


def configuration_mismatch(submitted: SubmissionMeta, rerun: SubmissionMeta) -> str | None:
    """Why a re-run is not of the submission's configuration: another spec (by digest), profile or level, another
    value of a submitted hyperparameter, or other data (the dataset's facts, its path aside); None where it is.

    Settings of the other layers are not compared: an executor's option may have been renamed or dropped for
    the configuration since (reproduce records that as a note).
    """
    for key in ("spec_sha256", "profile", "level"):
        if getattr(submitted, key) != getattr(rerun, key):
            return f"{key} differs: {getattr(submitted, key)!r} submitted, {getattr(rerun, key)!r} re-run"
    for key, value in submitted.hyperparameters.items():
        if rerun.hyperparameters.get(key) != value:
            return f"hyperparameter {key} differs: {value!r} submitted, {rerun.hyperparameters.get(key)!r} re-run"
    data, rerun_data = _without_path(submitted.dataset), _without_path(rerun.dataset)
    differing = sorted(k for k in {*data, *rerun_data} if data.get(k) != rerun_data.get(k))
    if differing:
        return f"the data differ ({', '.join(differing)} of submission.yaml's dataset)"
    return None


def _without_path(dataset: Mapping[str, Any] | None) -> dict[str, Any]:
    """A dataset's facts without its path, which names where a copy lies, not what it holds."""
    return {k: v for k, v in (dataset or {}).items() if k != "path"}


def _devices(hardware: Mapping[str, Any]) -> str:
    if hardware.get("accelerator_count"):
        return f"{hardware.get('accelerator_count')} x {hardware.get('accelerator_model')}"
    return f"the CPU ({hardware.get('cpu_count')} cores of {hardware.get('cpu_model')}, no accelerator)"


@dataclass(frozen=True)
class Rerun:
    """A re-run folder found under `score --reproductions`: its record, its scored benchmark and its hardware,
    or why it cannot be used."""

    folder: str
    record: ReproductionRecord | None
    side: Side | None
    hardware: Mapping[str, Any]
    meta: SubmissionMeta | None = None
    problem: str | None = None


@dataclass(frozen=True)
class Claim:
    """What identifies a scored benchmark to its reproductions, and its numbers."""

    manifest_sha256: str | None
    benchmark: str
    meta: SubmissionMeta
    side: Side
    hardware: Mapping[str, Any]


@dataclass(frozen=True)
class ReproductionStatus:
    """What the reproductions of one entry say: reproduced, contradicted, or rejected (with why), and by which."""

    status: Status
    folders: tuple[str, ...]
    """The re-runs that say `status`."""
    detail: str
    named_by: tuple[str, ...] = ()
    """Every re-run whose record names the entry, whatever it says."""

    def line(self) -> str:
        """The status line the boards show."""
        by = ", ".join(self.folders)
        if self.status == "rejected":
            return f"reproduction rejected ({by}): {self.detail}"
        return f"{self.status} by a re-run ({by}): {self.detail}"

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "folders": list(self.folders), "detail": self.detail}


def judge(claim: Claim, reruns: Sequence[Rerun]) -> ReproductionStatus | None:
    """The status of a claim from the re-runs whose record names it (its manifest's sha256 and benchmark).

    Each record's verdict is recomputed from the two folders' evidence: a record it does not match, a
    re-run on other devices or of another configuration is rejected. One contradiction outweighs any
    number of reproductions.
    """
    settled = [(rerun.folder, *_settle(claim, rerun, rerun.record)) for rerun in reruns if _names(claim, rerun)]
    for status in STATUS_ORDER:
        hits = [(folder, detail) for folder, found, detail in settled if found == status]
        if hits:
            details = "; ".join(dict.fromkeys(detail for _, detail in hits))
            named_by = tuple(folder for folder, _, _ in settled)
            return ReproductionStatus(status, tuple(folder for folder, _ in hits), details, named_by)
    return None


def _names(claim: Claim, rerun: Rerun) -> bool:
    """Whether the re-run's record names this claim: its manifest's sha256 and its benchmark."""
    if rerun.record is None or claim.manifest_sha256 is None:
        return False
    named = rerun.record.submission
    return (named.manifest_sha256, named.benchmark) == (claim.manifest_sha256, claim.benchmark)


def _settle(claim: Claim, rerun: Rerun, record: ReproductionRecord | None) -> tuple[Status, str]:
    """One re-run's word on the claim: its record's verdict where the evidence supports it, else rejected."""
    if record is None:
        return "rejected", rerun.problem or "no record"
    if rerun.problem is not None or rerun.side is None or rerun.meta is None:
        return "rejected", rerun.problem or "the re-run could not be scored"
    mismatch = configuration_mismatch(claim.meta, rerun.meta) or device_mismatch(claim.hardware, rerun.hardware)
    if mismatch is not None:
        return "rejected", f"the re-run is not of the submission's configuration and devices: {mismatch}"
    comparison = compare(claim.side, rerun.side)
    if comparison.unsettled:
        return "rejected", "the re-run cannot settle " + "; ".join(comparison.unsettled)
    if comparison.verdict != record.verdict:
        return "rejected", f"the record says {record.verdict}, its runs say {comparison.verdict}"
    return comparison.verdict, summary(comparison)


def summary(comparison: Comparison) -> str:
    """The ratios in a few words ('samples_per_s 0.98x, energy_per_sample_j 1.01x'), or why contradicted."""
    if comparison.reasons:
        return "; ".join(comparison.reasons)
    ratios = [f"{m.metric} {m.ratio:.3f}x" for m in comparison.metrics if m.ratio is not None and m.tolerance]
    return ", ".join(ratios) or "every compared metric within its tolerance"


def rank_block(status: ReproductionStatus | None, codes: set[str]) -> tuple[str, str] | None:
    """Why an entry may not be ranked because of its reproduction, in full and in brief; None where it may.

    A contradicted entry is never ranked; an entry with a finding in UNCONFIRMED_CODES only once a
    re-run reproduced it.
    """
    if status is not None and status.status == "contradicted":
        return f"contradicted by a re-run ({', '.join(status.folders)}): {status.detail}", "not ranked: contradicted"
    unconfirmed = sorted(codes & UNCONFIRMED_CODES)
    if unconfirmed and (status is None or status.status != "reproduced"):
        return (
            f"unconfirmed ({', '.join(unconfirmed)}): not ranked until a re-run reproduces it (specbench reproduce)",
            "not ranked: unconfirmed, not reproduced",
        )
    return None
