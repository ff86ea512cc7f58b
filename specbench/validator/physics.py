"""Physics bounds every claim: no device computes above its dense peak or draws power outside its range.

The device facts (specbench/physics/devices.yaml, docs/devices.md) are found by the accelerator model
system.yaml records. The rate compared with the peak is the one the run computed (FLOPs per sample x
samples / time), whatever the spec's accounting ranks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from specbench.accounting.accounts import computed_flops_per_s, spec_flops_per_sample
from specbench.physics import DeviceFacts, lookup, peak_flops
from specbench.spec.system import SubmissionMeta, SystemDescription
from specbench.validator.evidence import SystemDevices
from specbench.validator.findings import Findings
from specbench.validator.model import BenchmarkData, RunData

LIMIT_MARGIN = 0.10
"""Mean power may exceed the board limit by this much (readings' error, short boosts)."""


def declared_precision(meta: SubmissionMeta | None) -> str | None:
    """The precision a benchmark declares: a hyperparameter (layer 8) or a layer-7 choice."""
    if meta is None:
        return None
    value: Any = meta.hyperparameters.get("precision") or meta.layers.get("parallelism_precision", {}).get("precision")
    return value if isinstance(value, str) else None


@dataclass
class DevicePhysics:
    """The facts of a submission's accelerators, or why there are none."""

    facts: DeviceFacts | None
    model: str | None

    @classmethod
    def of(cls, system: SystemDescription | None) -> DevicePhysics:
        hardware = system.layers.get("hardware", {}) if system else {}
        count = hardware.get("accelerator_count")
        model = hardware.get("accelerator_model")
        if not isinstance(model, str) or not isinstance(count, int) or count < 1:
            return cls(None, None)
        return cls(lookup(model), model)

    def peak(self, meta: SubmissionMeta | None) -> float | None:
        return peak_flops(self.facts, declared_precision(meta)) if self.facts is not None else None


def check_unknown(findings: Findings, physics: DevicePhysics) -> None:
    if physics.model is not None and physics.facts is None:
        findings.add(
            "SB-PHY-003",
            "system.yaml",
            f"expected an accelerator model of the device facts table (docs/devices.md), found {physics.model!r}",
        )


def check_run(
    findings: Findings, run: RunData, bench: BenchmarkData, physics: DevicePhysics, devices: SystemDevices
) -> None:
    """The run's computed FLOP rate per device against the peak; each device's mean power against its range."""
    facts = physics.facts
    if facts is None:
        return
    peak = physics.peak(bench.meta)
    accounts = run.accounts
    per_sample = spec_flops_per_sample(bench.spec, bench.meta.hyperparameters) if bench.spec and bench.meta else None
    if peak is not None and accounts is not None:
        count = devices.trained or 1
        rate = computed_flops_per_s(per_sample, accounts.samples, accounts.time_s, count)
        if rate is not None and rate > peak:
            precision = declared_precision(bench.meta) or "its highest precision"
            findings.add(
                "SB-PHY-001",
                f"{run.folder}/log.txt",
                f"expected at most {peak / 1e12:,.1f} TFLOP/s per device ({facts.name}, dense {precision} peak), "
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
