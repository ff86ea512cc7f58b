"""Physics bounds every claim: no device computes above its dense peak or draws power outside its range.

The device facts (specbench/physics/devices.yaml, docs/devices.md, or a maintainer's table given with
`--devices`) are found by the accelerator model system.yaml records. The rate compared with the peak
is the one the run computed (FLOPs per sample x samples / time), whatever the spec's accounting ranks.
Bounds fail closed: on a ranked profile, a device the table does not know (in system.yaml or in a
power trace) is an error, so no ranked number escapes its bound.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specbench.accounting.accounts import computed_flops_per_s, spec_flops_per_sample
from specbench.physics import PRECISIONS, DeviceFacts, lookup, peak_flops
from specbench.spec.system import SubmissionMeta, SystemDescription
from specbench.validator.documents import Loaded
from specbench.validator.evidence import SystemDevices
from specbench.validator.findings import Findings
from specbench.validator.model import BenchmarkData, RunData, SeriesFacts
from specbench.validator.provenance import ACCELERATOR_METERS

LIMIT_MARGIN = 0.10
"""Mean power may exceed the board limit by this much (readings' error, short boosts)."""
FLOAT_COLUMNS = tuple(p for p in PRECISIONS if p != "int8")
"""Datasheet columns of floating-point math: the bound without a usable precision is the highest of them."""


def declared_precision(meta: SubmissionMeta | None) -> str | None:
    """The precision a benchmark declares: a hyperparameter (layer 8) or a layer-7 choice."""
    if meta is None:
        return None
    value: Any = meta.hyperparameters.get("precision") or meta.layers.get("parallelism_precision", {}).get("precision")
    return value if isinstance(value, str) else None


def is_ranked(bench: BenchmarkData) -> bool:
    """Whether the benchmark's profile is ranked; a benchmark whose spec did not resolve counts as ranked."""
    return bench.spec.ranked if bench.spec is not None else True


def table_name(table: Path | None) -> str:
    """The device table as messages name it."""
    return str(table) if table is not None else "specbench/physics/devices.yaml"


@dataclass(frozen=True)
class DevicePhysics:
    """The facts of a submission's accelerators from the device table, or why there are none."""

    facts: DeviceFacts | None
    model: str | None
    """accelerator_model of system.yaml; None when it is missing or not text."""
    accelerators: int | None
    """accelerator_count of system.yaml (0 on a CPU run); None when it is missing or not a count."""
    table: Path | None = None
    """The device table used: None for the shipped one, else the file given with --devices."""

    @classmethod
    def of(cls, system: SystemDescription | None, table: Path | None = None) -> DevicePhysics:
        hardware = system.layers.get("hardware", {}) if system else {}
        count = hardware.get("accelerator_count")
        model = hardware.get("accelerator_model")
        accelerators = count if isinstance(count, int) and not isinstance(count, bool) and count >= 0 else None
        text = model if isinstance(model, str) else None
        facts = lookup(text, table) if accelerators else None
        return cls(facts, text, accelerators, table)

    def knows(self, model: str | None) -> bool:
        """Whether the device table has a row for this model name."""
        return lookup(model, self.table) is not None

    def peak(self, meta: SubmissionMeta | None) -> float | None:
        """Dense peak per device at the declared precision (the MFU's denominator); None when it has no column."""
        return peak_flops(self.facts, declared_precision(meta)) if self.facts is not None else None

    def bound(self, meta: SubmissionMeta | None) -> tuple[float, str] | None:
        """The FLOP rate per device no run can exceed, and what it is: the declared precision's dense peak, or
        the device's highest dense floating-point rate where the precision is missing, unknown or not listed."""
        if self.facts is None:
            return None
        peak = self.peak(meta)
        if peak is not None:
            return peak, f"dense {declared_precision(meta)} peak"
        rates = self.facts.peak_flops_per_s()
        floats = [rates[p] for p in FLOAT_COLUMNS if p in rates]
        if not floats:
            return None
        return max(floats) / self.facts.logical_devices, "highest dense floating-point rate"


def trace_accelerators(run: RunData) -> list[SeriesFacts]:
    """The accelerators a run's power trace lists: accelerator scope, or read by an accelerator meter."""
    if run.power is None:
        return []
    return [s for s in run.power.series if s.scope == "accelerator" or s.meter in ACCELERATOR_METERS]


def check_devices(
    findings: Findings, physics: DevicePhysics, benchmarks: Sequence[BenchmarkData], system_file: Loaded
) -> None:
    """system.yaml's accelerator must be in the device table: an error where a benchmark is ranked, else a warning.

    A run without accelerators (a CPU run) has no row either: its rate has no peak to stay under.
    """
    if physics.facts is not None:
        return
    ranked = [bench.name for bench in benchmarks if is_ranked(bench)]
    if not physics.accelerators:
        if not ranked:
            return  # a CPU run on an unranked profile: nothing to bound
        where = system_file.locate("layers", "hardware", "accelerator_count")
        count = "no accelerator_count" if physics.accelerators is None else "accelerator_count 0"
        found = f"no accelerator ({count}), which has no peak to bound its rate"
    else:
        where = system_file.locate("layers", "hardware", "accelerator_model")
        found = repr(physics.model) if physics.model is not None else "no accelerator_model"
    expected = f"expected an accelerator model that the device table ({table_name(physics.table)}) lists"
    if ranked:
        findings.add(
            "SB-PHY-004",
            system_file.file,
            f"{expected}, found {found}; {', '.join(ranked)} is on a ranked profile",
            **where,
        )
    else:
        findings.add("SB-PHY-003", system_file.file, f"{expected}, found {found}", **where)


def check_trace_devices(findings: Findings, run: RunData, physics: DevicePhysics, ranked: bool) -> None:
    """On a ranked profile, every accelerator the power trace lists must be a model the device table knows."""
    if not ranked:
        return
    for series in trace_accelerators(run):
        if not physics.knows(series.model):
            findings.add(
                "SB-PHY-005",
                f"{run.folder}/power.json",
                f"expected a model that the device table ({table_name(physics.table)}) lists for {series.device} "
                f"(the driver's name in the trace), found {series.model!r}",
                json_path="meters[].devices[].model",
            )


def check_run(
    findings: Findings, run: RunData, bench: BenchmarkData, physics: DevicePhysics, devices: SystemDevices
) -> None:
    """The run's computed FLOP rate per device against its bound; each device's mean power against its range."""
    facts = physics.facts
    if facts is None:
        return
    bound = physics.bound(bench.meta)
    accounts = run.accounts
    per_sample = spec_flops_per_sample(bench.spec, bench.meta.hyperparameters) if bench.spec and bench.meta else None
    if bound is not None and accounts is not None:
        peak, what = bound
        count = devices.trained or 1
        rate = computed_flops_per_s(per_sample, accounts.samples, accounts.time_s, count)
        if rate is not None and rate > peak:
            findings.add(
                "SB-PHY-001",
                f"{run.folder}/log.txt",
                f"expected at most {peak / 1e12:,.1f} TFLOP/s per device ({facts.name}, {what}), "
                f"found {rate / 1e12:,.1f} TFLOP/s ({accounts.samples} samples in {accounts.time_s:.3f} s on {count} "
                "device(s))",
            )
    if run.power is None or facts.logical_devices != 1:
        return
    limit = facts.power_limit_w * (1 + LIMIT_MARGIN)
    for energy in run.power.devices:
        mean = energy.mean_power_w
        if energy.scope != "accelerator" or mean is None:
            continue
        if mean < facts.idle_floor_w or mean > limit:
            findings.add(
                "SB-PHY-002",
                f"{run.folder}/power.csv",
                f"expected the mean power of {energy.device} between {facts.idle_floor_w:g} W (idle floor of "
                f"{facts.name}) and {limit:g} W (board limit + {LIMIT_MARGIN:.0%}), found {mean:.1f} W",
            )
