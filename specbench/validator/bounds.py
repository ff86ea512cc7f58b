"""Physical and best-known bounds on a run's claim: energy floor, idle from the trace, best-known rate and energy.

A forged submission can be made self-consistent (every file agrees, the manifest is re-signed), so
these checks compare the claim with facts outside it: the device table's least energy per FLOP and
idle floor (docs/devices.md), the device's own idle power in the trace before run_start, and the
best-known per-device rate and energy per sample of each workload and device. A rate beyond the
best-known one, an energy per sample below it, or either without a best-known row, is
*unconfirmed*: not ranked until `specbench reproduce` settles it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import pairwise

from specbench.accounting.accounts import spec_flops_per_sample
from specbench.physics import (
    BestKnownEnergy,
    BestKnownRate,
    DeviceFacts,
    best_known,
    best_known_energy,
    load_best_known,
)
from specbench.power.csvread import Series
from specbench.validator.context import Context
from specbench.validator.evidence import SystemDevices
from specbench.validator.findings import Findings
from specbench.validator.model import BenchmarkData, RunData
from specbench.validator.physics import DevicePhysics
from specbench.validator.powermeta import power_files, read_metadata, read_samples
from specbench.validator.powerwindow import LOG_CLOCK_SLACK_S

UNCONFIRMED_CODES: frozenset[str] = frozenset({"SB-BND-005", "SB-BND-006", "SB-BND-007", "SB-BND-008"})
"""Codes meaning "beyond (or without) a best-known result: unconfirmed, not ranked until reproduced"."""

IDLE_QUANTILE = 0.1
"""A device's idle before run_start is the lower decile of its readings there: the samples may include
warm-up steps at full load, and one low glitch among ten readings does not set it."""
LOAD_TOLERANCE = 0.10
"""The window's mean power may sit this much under the idle before run_start: where warm-up steps ran
before run_start the lower decile is a load reading, and a load's mean varies by some per cent."""


@dataclass(frozen=True)
class EnergyFloor:
    """A run's measured accelerator energy, and the least its work and its time allow."""

    measured_j: float
    flops: float
    share: float
    """The part of the run's FLOPs the measured devices did (measured / trained devices, at most 1)."""
    least_j_per_flop: float
    idle_floor_w: float
    device_seconds: float
    """The window's duration summed over the measured devices."""
    devices: int

    @property
    def work_j(self) -> float:
        return self.flops * self.share * self.least_j_per_flop

    @property
    def idle_j(self) -> float:
        return self.idle_floor_w * self.device_seconds

    @property
    def floor_j(self) -> float:
        return self.work_j + self.idle_j


@dataclass(frozen=True)
class TraceIdle:
    """One accelerator's readings before run_start: how many, and the idle they show (None without any)."""

    device: str
    readings: int
    idle_w: float | None


@dataclass(frozen=True)
class RateClaim:
    """A run's samples per second per device, and the best-known rate it is compared with."""

    samples_per_s: float
    samples: int
    time_s: float
    devices: int


@dataclass(frozen=True)
class MeasuredShare:
    """A run's measured accelerators: their energy over the window and their share of the trained devices' work."""

    energy_j: float
    share: float
    """Measured devices (x logical devices per package) / trained devices, at most 1."""
    devices: int
    device_seconds: float
    """The window's duration summed over the measured devices."""


@dataclass(frozen=True)
class EnergyClaim:
    """A run's accelerator energy per sample, per device as the rate is: the measured devices' energy over
    their share of the samples (the recomputed accounts' samples of the timed window)."""

    energy_j_per_sample: float
    energy_j: float
    samples: int
    share: float
    devices: int


@dataclass(frozen=True)
class RunBounds:
    run: str
    energy: EnergyFloor | None
    idle: tuple[TraceIdle, ...]
    rate: RateClaim | None
    energy_per_sample: EnergyClaim | None


@dataclass(frozen=True)
class BenchmarkBounds:
    """What the bounds checks found for one benchmark: its best-known rows (None: none) and each run's facts."""

    best: BestKnownRate | None
    best_energy: BestKnownEnergy | None
    runs: tuple[RunBounds, ...]


def check_bounds(ctx: Context, bench: BenchmarkData, physics: DevicePhysics, devices: SystemDevices) -> BenchmarkBounds:
    """Every run's energy floor, idle from its trace, rate and energy per sample against the best-known ones;
    findings for each."""
    findings, facts = ctx.findings, physics.facts
    ranked = bench.spec is not None and bench.spec.ranked
    key = (bench.meta.spec_id, _variant(bench), facts.name if facts else None) if bench.meta else None
    best = best_known(*key) if key else None
    best_energy = best_known_energy(*key) if key else None
    claims = [energy_claim(run, facts, devices) for run in bench.runs]
    if ranked and best is None and bench.meta is not None:
        _no_best_known(findings, bench, physics)
    if ranked and best_energy is None and bench.meta is not None and any(c is not None for c in claims):
        _no_best_energy(findings, bench, physics)
    runs = []
    for run, claim in zip(bench.runs, claims, strict=True):
        energy = check_energy(findings, run, bench, facts, devices) if facts is not None else None
        idle = trace_idles(ctx, run)
        check_trace_idle(findings, run, facts, idle, ranked)
        rate = rate_claim(run, devices)
        if ranked and rate is not None and best is not None:
            check_rate(findings, run, rate, best)
        if ranked and claim is not None and best_energy is not None:
            check_energy_per_sample(findings, run, claim, best_energy)
        runs.append(RunBounds(run.name, energy, idle, rate, claim))
    return BenchmarkBounds(best, best_energy, tuple(runs))


def check_energy(
    findings: Findings, run: RunData, bench: BenchmarkData, facts: DeviceFacts, devices: SystemDevices
) -> EnergyFloor | None:
    """The run's energy floor, with an error where the measured energy is below it."""
    energy = energy_floor(run, bench, facts, devices)
    if energy is not None and energy.measured_j < energy.floor_j:
        _below_floor(findings, run, energy, facts)
    return energy


def energy_floor(run: RunData, bench: BenchmarkData, facts: DeviceFacts, devices: SystemDevices) -> EnergyFloor | None:
    """The least energy the run's FLOPs and window allow its measured accelerators; None where unknown.

    FLOPs are the ones computed (the spec's FLOPs per sample x the samples the log shows), whatever the
    spec's accounting ranks; the measured devices' share of them is measured / trained devices.
    """
    if run.accounts is None or bench.spec is None or bench.meta is None:
        return None
    per_sample = spec_flops_per_sample(bench.spec, bench.meta.hyperparameters)
    least = facts.least_energy_j_per_flop
    samples = run.accounts.samples
    measured = measured_share(run, facts.logical_devices, devices)
    if per_sample is None or least is None or samples is None or measured is None:
        return None
    return EnergyFloor(
        measured_j=measured.energy_j,
        flops=per_sample * samples,
        share=measured.share,
        least_j_per_flop=least,
        idle_floor_w=facts.idle_floor_w,
        device_seconds=measured.device_seconds,
        devices=measured.devices,
    )


def measured_share(run: RunData, logical_devices: int, devices: SystemDevices) -> MeasuredShare | None:
    """The run's measured accelerators over its window (the trace's recomputed energy); None without any.

    Their share of the work is measured devices x logical devices per package / trained devices, at most 1:
    a device measured beyond those that trained adds its energy and no samples.
    """
    if run.power is None:
        return None
    measured = [e for e in run.power.devices if e.scope == "accelerator" and e.energy_j is not None]
    if not measured:
        return None
    listed = len(measured) * logical_devices
    trained = devices.trained or listed
    return MeasuredShare(
        energy_j=math.fsum(e.energy_j or 0.0 for e in measured),
        share=min(1.0, listed / trained),
        devices=len(measured),
        device_seconds=math.fsum(e.duration_s for e in measured),
    )


def energy_claim(run: RunData, facts: DeviceFacts | None, devices: SystemDevices) -> EnergyClaim | None:
    """The run's accelerator energy per sample: measured energy / (samples x the measured devices' share).

    Samples are the recomputed accounts' (the log's, over the window the trace's energy covers); None where the
    run has no measured accelerator or no samples.
    """
    accounts = run.accounts
    if accounts is None or accounts.samples is None or accounts.samples <= 0:
        return None
    measured = measured_share(run, facts.logical_devices if facts is not None else 1, devices)
    if measured is None:
        return None
    per_sample = measured.energy_j / (accounts.samples * measured.share)
    return EnergyClaim(per_sample, measured.energy_j, accounts.samples, measured.share, measured.devices)


def trace_idles(ctx: Context, run: RunData) -> tuple[TraceIdle, ...]:
    """Each measured accelerator's readings before run_start in power.csv (read again, findings discarded).

    Only for a run whose trace the power checks accepted (run.power is set), so nothing is reported twice.
    """
    if run.power is None or run.run_start_ms is None:
        return ()
    csv_rel, json_rel = power_files(run.folder)
    scratch = Findings()
    meta = read_metadata(ctx.tree, json_rel, scratch)
    trace = read_samples(ctx.tree, csv_rel, meta, scratch) if meta is not None else None
    if meta is None or trace is None:
        return ()
    start_s = run.run_start_ms / 1000.0 - LOG_CLOCK_SLACK_S
    idles = []
    for device in meta.devices:
        series = trace.series.get(device.key)
        if device.scope != "accelerator" or series is None or not series.measured:
            continue
        readings = readings_before(series, start_s)
        idles.append(TraceIdle(device.key, len(readings), lower_decile(readings)))
    return tuple(idles)


def readings_before(series: Series, start_s: float) -> list[float]:
    """Power readings (instant, else average) of the unmarked samples before `start_s`; counter steps without them."""
    before = [i for i, t in enumerate(series.t_wall_s) if t < start_s and not series.mark[i]]
    readings = [
        p
        for p in (
            series.power_instant_w[i] if series.power_instant_w[i] is not None else series.power_average_w[i]
            for i in before
        )
        if p is not None
    ]
    if readings:
        return readings
    steps = []
    for a, b in pairwise(before):
        first, last = series.energy_counter_j[a], series.energy_counter_j[b]
        seconds = series.t_mono_s[b] - series.t_mono_s[a]
        if first is not None and last is not None and last >= first and seconds > 0:
            steps.append((last - first) / seconds)
    return steps


def lower_decile(values: list[float]) -> float | None:
    """The IDLE_QUANTILE quantile by nearest rank below (the least value for fewer than 11), or None."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[int(IDLE_QUANTILE * (len(ordered) - 1))]


def check_trace_idle(
    findings: Findings, run: RunData, facts: DeviceFacts | None, idles: tuple[TraceIdle, ...], ranked: bool
) -> None:
    """Training draws at least the device's own idle, and that idle is at least the part's idle floor."""
    if run.power is None:
        return
    csv_rel = power_files(run.folder)[0]
    means = {e.device: e.mean_power_w for e in run.power.devices if e.scope == "accelerator"}
    for idle in idles:
        if idle.idle_w is None:
            if ranked:
                findings.add(
                    "SB-BND-004",
                    csv_rel,
                    f"expected readings of {idle.device} before run_start (its idle power), found none",
                )
            continue
        mean = means.get(idle.device)
        least = idle.idle_w * (1 - LOAD_TOLERANCE)
        if mean is not None and mean < least:
            findings.add(
                "SB-BND-002",
                csv_rel,
                f"expected the mean power of {idle.device} over the window at least {least:.1f} W (its idle "
                f"before run_start, {idle.idle_w:.1f} W, the lower decile of {idle.readings} readings, "
                f"- {LOAD_TOLERANCE:.0%}), found {mean:.1f} W",
            )
        if facts is not None and facts.logical_devices == 1 and idle.idle_w < facts.idle_floor_w:
            findings.add(
                "SB-BND-003",
                csv_rel,
                f"expected the idle power of {idle.device} before run_start at least {facts.idle_floor_w:g} W "
                f"(idle floor of {facts.name}), found {idle.idle_w:.1f} W (the lower decile of {idle.readings} "
                "readings)",
            )


def rate_claim(run: RunData, devices: SystemDevices) -> RateClaim | None:
    """The run's samples per second per trained device, from the recomputed accounts; None where unknown."""
    accounts = run.accounts
    if accounts is None or accounts.samples is None or not accounts.time_s or accounts.time_s <= 0:
        return None
    count = devices.trained or 1
    return RateClaim(accounts.samples / accounts.time_s / count, accounts.samples, accounts.time_s, count)


def check_rate(findings: Findings, run: RunData, rate: RateClaim, best: BestKnownRate) -> None:
    """A per-device rate beyond the best-known one x (1 + margin) is unconfirmed."""
    limit = load_best_known().limit(best)
    if rate.samples_per_s <= limit:
        return
    margin = load_best_known().margin
    findings.add(
        "SB-BND-005",
        f"{run.folder}/log.txt",
        f"expected at most {limit:,.1f} samples/s per device ({best.samples_per_s:,.1f}, the best known for "
        f"{best.describe()}, + {margin:.0%}; {best.source.title}), found {rate.samples_per_s:,.1f} "
        f"({rate.samples} samples in {rate.time_s:.3f} s on {rate.devices} device(s)): unconfirmed, not ranked "
        "until `specbench reproduce` confirms it",
    )


def check_energy_per_sample(findings: Findings, run: RunData, claim: EnergyClaim, best: BestKnownEnergy) -> None:
    """Energy per sample below the best-known one x (1 - energy margin) is unconfirmed."""
    table = load_best_known()
    limit = table.energy_limit(best)
    if claim.energy_j_per_sample >= limit:
        return
    share = f" x {claim.share:.3g} (measured / trained devices)" if claim.share < 1 else ""
    findings.add(
        "SB-BND-007",
        f"{run.folder}/power.csv",
        f"expected at least {limit:.5g} J per sample ({best.energy_j_per_sample:.5g}, the best known for "
        f"{best.describe()}, - {table.energy_margin:.0%}; {best.source.title}), found {claim.energy_j_per_sample:.5g} "
        f"({claim.energy_j:,.1f} J on {claim.devices} measured device(s) / {claim.samples} samples{share}): "
        "unconfirmed, not ranked until `specbench reproduce` confirms it",
    )


def _variant(bench: BenchmarkData) -> str | None:
    """The model variant the hyperparameters choose, where the spec has variants."""
    if bench.spec is None or bench.meta is None or not bench.spec.spec.workload.variants:
        return None
    model = bench.meta.hyperparameters.get("model")
    return model if isinstance(model, str) else None


def _workload_on_device(bench: BenchmarkData, physics: DevicePhysics) -> str:
    """'SPEC (VARIANT) on DEVICE' for the messages of a missing best-known row."""
    assert bench.meta is not None
    variant = _variant(bench)
    workload = bench.meta.spec_id + (f" ({variant})" if variant else "")
    if physics.facts is not None:
        device = physics.facts.name
    elif physics.model is not None:
        device = f"{physics.model!r}, which the device table does not list"
    else:
        device = "no accelerator"
    return f"{workload} on {device}"


def _no_best_known(findings: Findings, bench: BenchmarkData, physics: DevicePhysics) -> None:
    findings.add(
        "SB-BND-006",
        f"{bench.name}/submission.yaml",
        f"expected a best-known rate for {_workload_on_device(bench, physics)} (specbench/physics/best_known.yaml), "
        "found none: unconfirmed, not ranked until `specbench reproduce` confirms it",
    )


def _no_best_energy(findings: Findings, bench: BenchmarkData, physics: DevicePhysics) -> None:
    findings.add(
        "SB-BND-008",
        f"{bench.name}/submission.yaml",
        f"expected a best-known energy per sample for {_workload_on_device(bench, physics)} "
        "(specbench/physics/best_known.yaml), found none: unconfirmed, not ranked until `specbench reproduce` "
        "confirms it",
    )


def _below_floor(findings: Findings, run: RunData, energy: EnergyFloor, facts: DeviceFacts) -> None:
    findings.add(
        "SB-BND-001",
        f"{run.folder}/power.csv",
        f"expected at least {energy.floor_j:,.0f} J for {energy.devices} device(s) of {facts.name} "
        f"({energy.flops:.4g} FLOPs x {energy.share:.3g} x {energy.least_j_per_flop * 1e12:.3f} pJ/FLOP = "
        f"{energy.work_j:,.0f} J, + {energy.idle_floor_w:g} W idle floor x {energy.device_seconds:.3f} device-s = "
        f"{energy.idle_j:,.0f} J), found {energy.measured_j:,.0f} J",
    )
