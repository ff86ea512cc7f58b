"""Leaderboard output: terminal table, Markdown, CSV and JSON (full precision). HTML lives in html.py."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from dataclasses import dataclass

from tabulate import tabulate

from specbench.scoring.leaderboard import Entry, Group, Leaderboard


@dataclass(frozen=True)
class Column:
    header: str
    key: str
    get: Callable[[Entry], object]
    fmt: str = "{:,.3g}"

    def text(self, entry: Entry) -> str:
        value = self.get(entry)
        if value is None:
            return "n/a"
        if isinstance(value, float):
            return self.fmt.format(value)
        return str(value)


def _v(metric: str, scale: float = 1.0) -> Callable[[Entry], object]:
    def get(entry: Entry) -> object:
        value = entry.value(metric)
        return None if value is None else value * scale

    return get


SPREADS = {
    "time_s": ("time min/median/max (s)", 1.0),
    "samples_per_s": ("samples/s min/median/max", 1.0),
    "valid_flops_per_s": ("Valid FLOPS min/median/max (TFLOP/s)", 1e-12),
}
"""Header and scale of the spread column, by the metric that orders the runs."""


def _spread(entry: Entry) -> object:
    spread = entry.aggregate.spread
    scale = SPREADS.get(entry.aggregate.spread_metric, ("", 1.0))[1]
    return None if spread is None else "{:.4g} / {:.4g} / {:.4g}".format(*(v * scale for v in spread))


def _status(entry: Entry) -> str:
    return "; ".join(entry.unranked) if entry.unranked else "; ".join(["ranked", *entry.notes])


COMMON = [
    Column("rank", "rank", lambda e: e.rank if e.rank is not None else "-"),
    Column("rank per W", "rank_per_w", lambda e: e.rank_per_w if e.rank_per_w is not None else "-"),
    Column("submitter/system", "system", lambda e: f"{e.submitter}/{e.system}"),
    Column("benchmark", "benchmark", lambda e: e.benchmark),
]
TIME_TO_QUALITY = [
    Column("time to quality (s)", "time_s", _v("time_s"), "{:,.2f}"),
    Column("quality achieved", "achieved", _v("achieved"), "{:.4f}"),
    Column("target", "target", lambda e: e.target, "{:g}"),
    Column("penalty factor", "penalty_factor", _v("penalty_factor"), "{:.4f}"),
    Column("Valid FLOPS (TFLOP/s)", "valid_flops_per_s", _v("valid_flops_per_s", 1e-12), "{:,.4g}"),
    Column("FLOPS (TFLOP/s)", "flops_per_s", _v("flops_per_s", 1e-12), "{:,.4g}"),
    Column("Valid FLOPS/W (GFLOP/s/W)", "valid_flops_per_w", _v("valid_flops_per_w", 1e-9), "{:,.4g}"),
    Column("energy to solution (kJ)", "energy_j", _v("energy_j", 1e-3), "{:,.4g}"),
    Column("mean power (W)", "mean_power_w", _v("mean_power_w"), "{:,.1f}"),
    Column(SPREADS["time_s"][0], "spread", _spread),
]
THROUGHPUT = [
    Column("throughput (samples/s)", "samples_per_s", _v("samples_per_s"), "{:,.1f}"),
    Column("TFLOP/s per device", "tflops_per_device", _v("tflops_per_device"), "{:,.4g}"),
    Column("MFU (%)", "mfu", _v("mfu", 100.0), "{:.1f}"),
    Column("energy per sample (J)", "energy_per_sample_j", _v("energy_per_sample_j"), "{:.4g}"),
    Column("mean power (W)", "mean_power_w", _v("mean_power_w"), "{:,.1f}"),
    Column("FLOPS/W (GFLOP/s/W)", "valid_flops_per_w", _v("valid_flops_per_w", 1e-9), "{:,.4g}"),
    Column(SPREADS["samples_per_s"][0], "spread", _spread),
]
TAIL = [Column("status", "status", _status)]


def columns(group: Group) -> list[Column]:
    middle = THROUGHPUT if group.key.kind == "throughput" else TIME_TO_QUALITY
    metric = group.entries[0].aggregate.spread_metric if group.entries else None
    if metric == "valid_flops_per_s":  # HPC AI500: the whole budget is timed, runs ordered by Valid FLOPS
        relabel = {"time_s": "time (s)", "spread": SPREADS[metric][0]}
        middle = [Column(relabel.get(c.key, c.header), c.key, c.get, c.fmt) for c in middle]
    if group.key.kind == "throughput" and group.entries and group.entries[0].bench and group.entries[0].bench.spec:
        unit = group.entries[0].bench.spec.spec.workload.sample_unit
        middle = [
            Column(c.header.replace("samples", f"{unit}s").replace("sample", unit), c.key, c.get, c.fmt) for c in middle
        ]
    return [*COMMON, *middle, *TAIL]


def render_table(board: Leaderboard, fmt: str = "simple") -> str:
    """One table per group (tabulate's `simple` for terminals, `github` for Markdown)."""
    parts = []
    for group in board.groups:
        cols = columns(group)
        rows = [[c.text(e) for c in cols] for e in group.entries]
        title = group.key.title()
        parts.append(
            (f"## {title}" if fmt == "github" else title)
            + "\n\n"
            + tabulate(rows, headers=[c.header for c in cols], tablefmt=fmt)
        )
    if board.unusable:
        lines = [
            f"- {u['path']}: " + "; ".join(f"{f['code']} {f['message']}" for f in u["findings"][:3])
            for u in board.unusable
        ]
        parts.append(
            ("## Unusable submissions" if fmt == "github" else "Unusable submissions") + "\n\n" + "\n".join(lines)
        )
    if not parts:
        return "no submissions found\n"
    return "\n\n".join(parts) + "\n"


CSV_FIELDS = [
    "group", "spec_id", "spec_version", "level", "profile", "power_scope", "submitter", "system", "benchmark",
    "rank", "rank_per_w", "compliant", "status",
    "time_s", "achieved", "flops_per_s", "valid_flops_per_s", "valid_flops_per_w", "energy_j", "mean_power_w",
    "samples_per_s", "tflops_per_device", "mfu", "energy_per_sample_j", "spread_min", "spread_median", "spread_max",
]  # fmt: skip


def render_csv(board: Leaderboard) -> str:
    """One row per entry, values in SI units at full precision (units in the column names)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for group in board.groups:
        for entry in group.entries:
            spread = entry.aggregate.spread or (None, None, None)
            row = {
                "group": group.key.title(),
                "spec_id": group.key.spec_id,
                "spec_version": group.key.spec_version,
                "level": group.key.level,
                "profile": group.key.profile,
                "power_scope": group.key.scope,
                "submitter": entry.submitter,
                "system": entry.system,
                "benchmark": entry.benchmark,
                "rank": entry.rank,
                "rank_per_w": entry.rank_per_w,
                "compliant": entry.compliant,
                "status": _status(entry),
                "spread_min": spread[0],
                "spread_median": spread[1],
                "spread_max": spread[2],
            }
            for name in CSV_FIELDS:
                if name not in row:
                    value = entry.value(name)
                    row[name] = repr(value) if isinstance(value, float) else value
            writer.writerow(row)
    return out.getvalue()


def render_json(board: Leaderboard) -> str:
    return json.dumps(board.to_dict(), indent=2, allow_nan=False) + "\n"
