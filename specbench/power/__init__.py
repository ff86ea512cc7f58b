"""Power and energy measurement: meters behind one interface, a fixed-period sampler, traces on disk.

Standard library only at import time; vendor libraries (pynvml, amdsmi) load when a meter opens.
Typical use by an executor (the caller synchronizes its device before each window edge):

    meters = open_meters("auto")
    with PowerSampler(meters, interval_s=0.1, trace_dir=run_dir) as sampler:
        torch.cuda.synchronize(); sampler.window_start()
        train()
        torch.cuda.synchronize(); window = sampler.window_stop()
    close_meters(meters)
    window.energy_j("accelerator")
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from specbench.power.amd import AmdSmiMeter
    from specbench.power.base import (
        NOT_MEASURED,
        SCOPES,
        Device,
        DeviceState,
        Meter,
        MeterUnavailable,
        PowerError,
        PowerValues,
    )
    from specbench.power.csvread import Trace, read_trace
    from specbench.power.energy import CounterEvent, DeviceEnergy
    from specbench.power.hwmon import HwmonMeter
    from specbench.power.null import NullMeter
    from specbench.power.nvml import NvmlMeter
    from specbench.power.owner import Ownership, power_owner
    from specbench.power.rapl import RaplMeter
    from specbench.power.replay import ReplayMeter
    from specbench.power.run import MeasuredCommand, measure_command
    from specbench.power.sampler import DEFAULT_INTERVAL_S, PowerSampler
    from specbench.power.schedule import Clock, SystemClock
    from specbench.power.select import METERS, close_meters, open_meters, probe_meters
    from specbench.power.trace import FORMAT, FORMAT_VERSION, MIN_INTERVAL_S, Sample
    from specbench.power.window import Window

_WHERE = {
    "AmdSmiMeter": "specbench.power.amd",
    "Clock": "specbench.power.schedule",
    "CounterEvent": "specbench.power.energy",
    "DEFAULT_INTERVAL_S": "specbench.power.sampler",
    "Device": "specbench.power.base",
    "DeviceEnergy": "specbench.power.energy",
    "DeviceState": "specbench.power.base",
    "FORMAT": "specbench.power.trace",
    "FORMAT_VERSION": "specbench.power.trace",
    "HwmonMeter": "specbench.power.hwmon",
    "METERS": "specbench.power.select",
    "MIN_INTERVAL_S": "specbench.power.trace",
    "MeasuredCommand": "specbench.power.run",
    "Meter": "specbench.power.base",
    "MeterUnavailable": "specbench.power.base",
    "NOT_MEASURED": "specbench.power.base",
    "NullMeter": "specbench.power.null",
    "NvmlMeter": "specbench.power.nvml",
    "Ownership": "specbench.power.owner",
    "PowerError": "specbench.power.base",
    "PowerSampler": "specbench.power.sampler",
    "PowerValues": "specbench.power.base",
    "RaplMeter": "specbench.power.rapl",
    "ReplayMeter": "specbench.power.replay",
    "SCOPES": "specbench.power.base",
    "Sample": "specbench.power.trace",
    "SystemClock": "specbench.power.schedule",
    "Trace": "specbench.power.csvread",
    "Window": "specbench.power.window",
    "close_meters": "specbench.power.select",
    "measure_command": "specbench.power.run",
    "open_meters": "specbench.power.select",
    "power_owner": "specbench.power.owner",
    "probe_meters": "specbench.power.select",
    "read_trace": "specbench.power.csvread",
}
"""Where each name lives: a submodule is imported when one of its names is first used, so that
importing one submodule (the validator imports specbench.power.energy) loads no meter code."""


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value


__all__ = [
    "DEFAULT_INTERVAL_S",
    "FORMAT",
    "FORMAT_VERSION",
    "METERS",
    "MIN_INTERVAL_S",
    "NOT_MEASURED",
    "SCOPES",
    "AmdSmiMeter",
    "Clock",
    "CounterEvent",
    "Device",
    "DeviceEnergy",
    "DeviceState",
    "HwmonMeter",
    "MeasuredCommand",
    "Meter",
    "MeterUnavailable",
    "NullMeter",
    "NvmlMeter",
    "Ownership",
    "PowerError",
    "PowerSampler",
    "PowerValues",
    "RaplMeter",
    "ReplayMeter",
    "Sample",
    "SystemClock",
    "Trace",
    "Window",
    "close_meters",
    "measure_command",
    "open_meters",
    "power_owner",
    "probe_meters",
    "read_trace",
]
