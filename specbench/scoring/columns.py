"""The leaderboard's columns: the quantities each spec kind shows, with their units and each group's scales.

Time-to-quality tables show the quality, its penalty and Valid FLOPS; throughput tables show rates per
sample and device, and the quality only where the spec evaluates one (llm-gpt's smoke loss). A group's
scales (the SI prefix of each quantity) are chosen once from every entry and run of the group, so the
index and the entries' pages print each quantity in the same unit. Titles and headers say in words what
the spec names by id (`time_to_quality`: time to quality; `top1_accuracy`: top-1 accuracy); JSON and CSV keep
the ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from specbench.scoring.leaderboard import Entry, Group, GroupKey
from specbench.scoring.units import Scale, Scaling, scale_for
from specbench.spec.models import Spec

POWER_KEYS = frozenset({"energy_j", "mean_power_w", "valid_flops_per_w", "energy_per_sample_j"})
"""Quantities that need a power measurement: 'not measured' where it is missing, never 'n/a'."""


@dataclass(frozen=True)
class Quantity:
    """One number of an entry (aggregated) and of each of its runs, under its report key."""

    key: str
    label: str
    unit: str = ""
    scaling: Scaling = "si"
    factor: float = 1.0
    """Report value x factor = the value in `unit` (tflops_per_device is reported in TFLOP/s)."""
    terminal: bool = True
    short: str = ""
    """The terminal header's first line, where `label` is too long."""
    note: str = ""
    """What follows the unit in the header (the quality target)."""
    digits: int | None = None
    """Significant digits, where the scale's default (4; 3 for percentages) is too few."""

    def of(self, values: Mapping[str, Any]) -> float | None:
        value = values.get(self.key)
        return None if value is None else float(value) * self.factor

    def header(self, scale: Scale, terminal: bool = False) -> str:
        inside = "; ".join(part for part in (scale.unit, self.note) if part)
        if terminal:
            return f"{self.short or self.label}\n{inside}" if inside else self.short or self.label
        return f"{self.label} ({inside})" if inside else self.label

    def missing(self) -> str:
        return "not measured" if self.key in POWER_KEYS else "n/a"


KIND_WORDS = {"time_to_quality": "time to quality", "throughput": "throughput"}
METRIC_WORDS = {
    "top1_accuracy": "top-1 accuracy", "top5_accuracy": "top-5 accuracy", "mean_iou": "mean IoU",
    "mean_dice": "mean Dice", "auc": "AUC", "map": "mAP", "fid": "FID", "mae": "MAE", "force_mae": "force MAE",
    "lddt_ca": "lDDT-Cα", "mlm_accuracy": "MLM accuracy",
}  # fmt: skip
"""What a title or header calls a spec kind or quality metric; other ids read with spaces for underscores."""


def words(name: str) -> str:
    """A kind or metric id in words (`top1_accuracy`: top-1 accuracy, `eval_loss`: eval loss)."""
    return KIND_WORDS.get(name) or METRIC_WORDS.get(name) or name.replace("_", " ")


def heading(key: GroupKey) -> str:
    """A group's title as a reader sees it: its kind in words (`GroupKey.title` keeps the id for JSON and CSV)."""
    return replace(key, kind=words(key.kind)).title()


def spec_of(group: Group) -> Spec | None:
    for entry in group.entries:
        if entry.bench is not None and entry.bench.spec is not None:
            return entry.bench.spec.spec
    return None


def _quality(spec: Spec | None, terminal: bool = True) -> list[Quantity]:
    if spec is None or spec.quality is None:
        return []
    q = spec.quality
    unit = "" if q.unit == "fraction" else q.unit
    target = f"target {'≥' if q.direction == 'higher' else '≤'} {q.target:g}"
    return [Quantity("achieved", words(q.metric), unit, "plain", note=target, terminal=terminal)]


def _unit(spec: Spec | None) -> str:
    return spec.workload.sample_unit if spec is not None else "sample"


def trains_whole_budget(group: Group) -> bool:
    """HPC AI500 tables time the whole budget (not a time to quality) and order runs by Valid FLOPS."""
    return any(e.aggregate.spread_metric == "valid_flops_per_s" for e in group.entries)


def index_quantities(group: Group) -> list[Quantity]:
    """The numbers of the group's index table, by its spec's kind."""
    spec = spec_of(group)
    if group.key.kind == "throughput":
        unit = _unit(spec)
        return [
            Quantity("samples_per_s", "throughput", f"{unit}/s", "count", short="rate"),
            Quantity("tflops_per_device", "per device", "FLOP/s", "count", factor=1e12, short="/device"),
            Quantity("mfu", "MFU", scaling="percent"),
            Quantity("energy_per_sample_j", "energy", f"J/{unit}"),
            Quantity("mean_power_w", "mean power", "W", short="power"),
            Quantity("valid_flops_per_w", "FLOPS/W", "FLOP/s/W", "count"),
            *_quality(spec),
        ]
    time_label = "time" if trains_whole_budget(group) else "time to quality"
    return [
        Quantity("time_s", time_label, scaling="time", short="time"),
        *_quality(spec),
        Quantity("penalty_factor", "penalty factor", scaling="plain", short="penalty"),
        Quantity("valid_flops_per_s", "Valid FLOPS", "FLOP/s", "count"),
        Quantity("valid_flops_per_w", "Valid FLOPS/W", "FLOP/s/W", "count", short="Valid/W"),
        Quantity("energy_j", "energy to solution", "J", short="energy"),
        Quantity("mean_power_w", "mean power", "W", terminal=False),
    ]


def run_quantities(group: Group) -> list[Quantity]:
    """The numbers of each run on an entry's page, by its spec's kind."""
    spec = spec_of(group)
    if group.key.kind == "throughput":
        unit = _unit(spec)
        return [
            Quantity("time_s", "timed window", scaling="time"),
            Quantity("samples_per_s", "throughput", f"{unit}/s", "count"),
            Quantity("tflops_per_device", "per device", "FLOP/s", "count", factor=1e12),
            Quantity("mfu", "MFU", scaling="percent"),
            Quantity("energy_j", "energy", "J"),
            Quantity("energy_per_sample_j", "energy", f"J/{unit}"),
            Quantity("mean_power_w", "mean power", "W"),
            Quantity("valid_flops_per_w", "FLOPS/W", "FLOP/s/W", "count"),
            *_quality(spec),
        ]
    time_label = "time" if trains_whole_budget(group) else "time to quality"
    return [
        Quantity("time_s", time_label, scaling="time"),
        *_quality(spec),
        Quantity("penalty_factor", "penalty factor", scaling="plain"),
        Quantity("flops_per_s", "FLOPS", "FLOP/s", "count"),
        Quantity("valid_flops_per_s", "Valid FLOPS", "FLOP/s", "count"),
        Quantity("energy_j", "energy to solution", "J"),
        Quantity("mean_power_w", "mean power", "W"),
        Quantity("valid_flops_per_w", "Valid FLOPS/W", "FLOP/s/W", "count"),
    ]


def aggregate_quantities(group: Group, mlperf_scaled: bool = False) -> list[Quantity]:
    """The rows of an entry's aggregate table: its runs' numbers, the FLOPs counted, and what applies beside."""
    rows = run_quantities(group)
    extra = [Quantity("model_flops", "FLOPs counted", "FLOP", "count")]
    if group.key.kind != "throughput":
        extra.insert(0, Quantity("quality_ratio", "quality ratio", scaling="plain"))
        unit = _unit(spec_of(group))
        extra += [
            Quantity("samples_per_s", "throughput", f"{unit}/s", "count"),
            Quantity("tflops_per_device", "per device", "FLOP/s", "count", factor=1e12),
            Quantity("mfu", "MFU", scaling="percent"),
            Quantity("energy_per_sample_j", "energy", f"J/{unit}"),
        ]
    if mlperf_scaled:
        extra += [
            Quantity("time_s_unscaled", "olympic mean before MLPerf's scaling", scaling="time"),
            Quantity("mlperf_scaling_factor", "MLPerf scaling factor (scaling.json)", scaling="plain", digits=6),
        ]
    return rows + extra


def _values(entry: Entry) -> Iterable[Mapping[str, Any]]:
    yield entry.aggregate.values
    for run in entry.runs:
        yield run.to_dict()


def group_scales(group: Group) -> dict[str, Scale]:
    """One scale per quantity key, from every value of the group (entries and runs)."""
    quantities: dict[str, Quantity] = {}
    for q in [*index_quantities(group), *run_quantities(group), *aggregate_quantities(group, mlperf_scaled=True)]:
        quantities.setdefault(q.key, q)
    scales = {}
    for key, q in quantities.items():
        values = [q.of(v) for entry in group.entries for v in _values(entry)]
        scale = scale_for(q.scaling, values, q.unit)
        scales[key] = scale if q.digits is None else replace(scale, digits=q.digits)
    scales["time_s_unscaled"] = scales["time_s"]
    return scales


def spread_text(entry: Entry, scale: Scale) -> str:
    """min / median / max of the metric that orders the runs, in its column's unit ('n/a' without runs)."""
    spread = entry.aggregate.spread
    if spread is None:
        return "n/a"
    return " / ".join(scale.number(v) for v in spread)


def spread_percent(entry: Entry) -> str:
    """Half the range of the runs about their median, in percent (the terminal's one-word spread)."""
    spread = entry.aggregate.spread
    if spread is None or not spread[1]:
        return "-"
    return f"±{(spread[2] - spread[0]) / 2 / abs(spread[1]) * 100:.1f}"


SPREAD_LABELS = {"time_s": "time", "samples_per_s": "throughput", "valid_flops_per_s": "Valid FLOPS"}
