"""Choosing meters by name ('auto', 'nvml,rapl', 'replay:DIR'), with ownership and device claims."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from specbench.errors import UsageError
from specbench.power.amd import AmdSmiMeter
from specbench.power.base import Meter, MeterUnavailable
from specbench.power.hwmon import HWMON_ROOT, HwmonMeter
from specbench.power.null import NullMeter
from specbench.power.nvml import NvmlMeter
from specbench.power.owner import claim_device, default_claim_dir, power_owner
from specbench.power.rapl import POWERCAP_ROOT, RaplMeter
from specbench.power.replay import ReplayMeter
from specbench.registry import Registry

AUTO = ("nvml", "amdsmi", "rapl", "hwmon")
"""What 'auto' tries, in order; each one that is unavailable here is skipped with its reason."""


@dataclass(frozen=True)
class MeterOptions:
    """What the meter factories may use: the GPUs to measure, the environment, sysfs roots."""

    gpus: Sequence[str] | None = None
    environ: Mapping[str, str] = field(default_factory=dict)
    powercap_root: Path = POWERCAP_ROOT
    hwmon_root: Path = HWMON_ROOT
    argument: str | None = None


MeterFactory = Callable[[MeterOptions], Meter]


def _replay(options: MeterOptions) -> Meter:
    if not options.argument:
        raise UsageError("the replay meter needs a trace folder: --meters replay:DIR")
    return ReplayMeter(options.argument)


METERS: Registry[MeterFactory] = Registry("power meter")
METERS.register("nvml", lambda o: NvmlMeter(o.gpus, environ=o.environ))
METERS.register("amdsmi", lambda o: AmdSmiMeter(o.gpus, environ=o.environ))
METERS.register("rapl", lambda o: RaplMeter(o.powercap_root))
METERS.register("hwmon", lambda o: HwmonMeter(o.hwmon_root))
METERS.register("null", lambda o: NullMeter("measurement switched off (--meters null)"))
METERS.register("replay", _replay)
_CLAIMLESS = ("null", "replay")


def parse_meter_spec(spec: str) -> list[tuple[str, str | None]]:
    """'auto' or a comma list of registered names, 'replay:DIR' taking a folder."""
    parts = [part.strip() for part in spec.split(",") if part.strip()]
    if not parts:
        raise UsageError(f"no meter named in {spec!r}; use 'auto' or a comma list of {', '.join(METERS.names())}")
    if "auto" in parts:
        if len(parts) > 1:
            raise UsageError(f"'auto' stands alone; got {spec!r}")
        return [(name, None) for name in AUTO]
    chosen: list[tuple[str, str | None]] = []
    for part in parts:
        name, colon, argument = part.partition(":")
        METERS.get(name)
        if colon and name != "replay":
            raise UsageError(f"meter {name!r} takes no argument; got {part!r}")
        if name in (n for n, _ in chosen):
            raise UsageError(f"meter {name!r} is named twice in {spec!r}")
        chosen.append((name, argument or None))
    return chosen


def probe_meters(
    spec: str = "auto",
    *,
    owner: bool | None = None,
    gpus: Sequence[str] | None = None,
    environ: Mapping[str, str] | None = None,
    claim_dir: Path | None = None,
    powercap_root: Path = POWERCAP_ROOT,
    hwmon_root: Path = HWMON_ROOT,
) -> tuple[list[Meter], dict[str, str]]:
    """Open the meters `spec` names; also return why each meter 'auto' skipped was unavailable."""
    env = dict(os.environ) if environ is None else dict(environ)
    auto = spec.strip() == "auto"
    names = parse_meter_spec(spec)
    ownership = power_owner(env)
    if owner is False or (owner is None and not ownership.owner):
        reason = "not the power owner: " + (ownership.reason if owner is None else "owner=False")
        return [NullMeter(reason)], {}
    meters: list[Meter] = []
    skipped: dict[str, str] = {}
    directory = claim_dir or default_claim_dir(env)
    try:
        for name, argument in names:
            options = MeterOptions(gpus, env, powercap_root, hwmon_root, argument)
            try:
                meter = METERS.get(name)(options)
            except MeterUnavailable as err:
                if not auto:
                    raise
                skipped[name] = str(err)
                continue
            meters.append(meter)
            if name not in _CLAIMLESS:
                for device in meter.devices:
                    meter.hold(claim_device(device.identity, directory))
    except BaseException:
        for meter in meters:
            meter.close()
        raise
    if not meters:
        meters.append(
            NullMeter("no power meter is available here: " + "; ".join(f"{k}: {v}" for k, v in skipped.items()))
        )
    return meters, skipped


def open_meters(
    spec: str = "auto",
    *,
    owner: bool | None = None,
    gpus: Sequence[str] | None = None,
    environ: Mapping[str, str] | None = None,
    claim_dir: Path | None = None,
) -> list[Meter]:
    """Open the meters `spec` names ('auto': every one available here) for the devices this process owns.

    owner: None decides from SPECBENCH_POWER_OWNER or the local rank (rank 0 measures); a
    non-owner gets one NullMeter. gpus: device indices or UUIDs (default: CUDA_VISIBLE_DEVICES).
    """
    meters, _ = probe_meters(spec, owner=owner, gpus=gpus, environ=environ, claim_dir=claim_dir)
    return meters


def close_meters(meters: Sequence[Meter]) -> None:
    for meter in meters:
        meter.close()
