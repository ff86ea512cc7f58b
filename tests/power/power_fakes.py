"""Fakes for power tests: a clock that moves only when told, a scripted meter, NVML and AMD SMI mocks.

Imported by the test modules as `power_fakes` (a unique name: tests/conftest.py is also a conftest)."""

from __future__ import annotations

import enum
import threading
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import pytest

from specbench.power.base import Device, Meter, PowerValues


class FakeClock:
    """Monotonic time that moves only by `advance`, by waiting for a deadline, or by a meter's read cost.

    With `end`, waiting for a deadline at or past it signals `finished` and blocks until the
    sampler is stopped, so a test sees exactly the sweeps scheduled before `end`.
    """

    def __init__(self, start: float = 1000.0, end: float | None = None) -> None:
        self.now = start
        self.end = end
        self.finished = threading.Event()
        self.waits: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def wall(self) -> float:
        return 1_800_000_000.0 + self.now

    def wait_until(self, deadline: float, stop: threading.Event) -> bool:
        self.waits.append(deadline)
        self.now = max(self.now, deadline)
        if self.end is not None and self.now >= self.end:
            self.finished.set()
            stop.wait()
            return True
        return stop.is_set()

    def advance(self, seconds: float) -> None:
        self.now += seconds


class ScriptedMeter(Meter):
    """One device whose power and counter are functions of the fake clock; each read costs `latency(n)`."""

    kind = "scripted"

    def __init__(
        self,
        clock: FakeClock,
        *,
        power_w: Callable[[float], float | None] = lambda t: 100.0,
        energy_j: Callable[[float], float | None] = lambda t: 100.0 * t,
        latency_s: Callable[[int], float] = lambda n: 0.0,
        fail_reads: tuple[int, ...] = (),
        device: Device | None = None,
    ) -> None:
        self.clock = clock
        self.power_w = power_w
        self.energy_j = energy_j
        self.latency_s = latency_s
        self.fail_reads = fail_reads
        self.reads = 0
        super().__init__([device or Device(key="fake:0", meter=self.kind, scope="accelerator", energy_counter="fake")])

    def read(self) -> list[PowerValues]:
        n = self.reads
        self.reads += 1
        if n in self.fail_reads:
            raise RuntimeError(f"scripted failure on read {n}")
        t = self.clock.now
        self.clock.advance(self.latency_s(n))
        return [PowerValues(power_instant_w=self.power_w(t), power_average_w=None, energy_j=self.energy_j(t))]


# NVML: every function the meter calls is an autospec of the real pynvml function.

NVML_FUNCTIONS = (
    "nvmlInit",
    "nvmlShutdown",
    "nvmlDeviceGetCount",
    "nvmlDeviceGetHandleByIndex",
    "nvmlDeviceGetUUID",
    "nvmlDeviceGetName",
    "nvmlDeviceGetPciInfo",
    "nvmlDeviceGetMigMode",
    "nvmlDeviceGetFieldValues",
    "nvmlDeviceGetPowerUsage",
    "nvmlDeviceGetArchitecture",
    "nvmlDeviceGetTotalEnergyConsumption",
    "nvmlDeviceGetEnforcedPowerLimit",
    "nvmlDeviceGetClockInfo",
    "nvmlSystemGetDriverVersion",
    "nvmlSystemGetNVMLVersion",
)


@dataclass
class FakeGpu:
    uuid: str
    name: str = "NVIDIA H200"
    bus_id: str = "00000000:19:00.0"
    instant_mw: int = 250_000
    average_mw: int = 240_000
    energy_mj: int = 5_000_000
    fields_supported: bool = True
    energy_supported: bool = True
    mig_enabled: bool = False
    arch: int = 9
    limit_mw: int = 700_000
    field_calls: list[list[int]] = field(default_factory=list)


def make_nvml(gpus: list[FakeGpu], *, init_error: bool = False) -> Any:
    """A stand-in for the pynvml module: real constants and error classes, autospec'd functions."""
    pynvml = pytest.importorskip("pynvml", reason="nvidia-ml-py gives the real signatures this mock copies")
    fake = types.SimpleNamespace(
        **{name: getattr(pynvml, name) for name in dir(pynvml) if name.startswith(("NVML_", "NVMLError"))}
    )

    def init() -> None:
        if init_error:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)

    def field_values(handle: FakeGpu, field_ids: list[int]) -> Any:
        handle.field_calls.append(list(field_ids))
        values = (pynvml.c_nvmlFieldValue_t * len(field_ids))()
        for slot, field_id in zip(values, field_ids, strict=True):
            slot.fieldId = field_id
            slot.valueType = pynvml.NVML_VALUE_TYPE_UNSIGNED_INT
            if not handle.fields_supported:
                slot.nvmlReturn = pynvml.NVML_ERROR_NOT_SUPPORTED
                continue
            slot.nvmlReturn = pynvml.NVML_SUCCESS
            instant = field_id == pynvml.NVML_FI_DEV_POWER_INSTANT
            slot.value.uiVal = handle.instant_mw if instant else handle.average_mw
        return values

    def energy(handle: FakeGpu) -> int:
        if not handle.energy_supported:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return handle.energy_mj

    def clock_info(handle: FakeGpu, kind: int) -> int:
        return 1980 if kind == pynvml.NVML_CLOCK_SM else 3201

    behaviour: dict[str, Callable[..., Any]] = {
        "nvmlInit": init,
        "nvmlShutdown": lambda: None,
        "nvmlDeviceGetCount": lambda: len(gpus),
        "nvmlDeviceGetHandleByIndex": lambda index: gpus[index],
        "nvmlDeviceGetUUID": lambda handle: handle.uuid,
        "nvmlDeviceGetName": lambda handle: handle.name.encode(),
        "nvmlDeviceGetPciInfo": lambda handle: types.SimpleNamespace(busId=handle.bus_id.encode()),
        "nvmlDeviceGetMigMode": lambda handle: [int(handle.mig_enabled), int(handle.mig_enabled)],
        "nvmlDeviceGetFieldValues": field_values,
        "nvmlDeviceGetPowerUsage": lambda handle: handle.average_mw,
        "nvmlDeviceGetArchitecture": lambda handle: handle.arch,
        "nvmlDeviceGetTotalEnergyConsumption": energy,
        "nvmlDeviceGetEnforcedPowerLimit": lambda handle: handle.limit_mw,
        "nvmlDeviceGetClockInfo": clock_info,
        "nvmlSystemGetDriverVersion": lambda: "580.159.04",
        "nvmlSystemGetNVMLVersion": lambda: "13.580.159.04",
    }
    for name in NVML_FUNCTIONS:
        setattr(fake, name, mock.create_autospec(getattr(pynvml, name), side_effect=behaviour[name]))
    return fake


# AMD SMI: a spec class mirroring the real amdsmi functions the meter calls.


class AmdSmiException(Exception):
    pass


class AmdSmiClkType(enum.IntEnum):
    SYS = 0
    GFX = 0
    DF = 1
    DCEF = 2
    SOC = 3
    MEM = 4


class AmdSmiSpec:
    """Signatures of amdsmi's Python interface (ROCm 6.x amdsmi_interface.py) used by AmdSmiMeter."""

    AmdSmiException = AmdSmiException
    AmdSmiClkType = AmdSmiClkType

    def amdsmi_init(self, flag: int = 0) -> None:
        raise NotImplementedError

    def amdsmi_shut_down(self) -> None:
        raise NotImplementedError

    def amdsmi_get_processor_handles(self) -> list[Any]:
        raise NotImplementedError

    def amdsmi_get_gpu_asic_info(self, processor_handle: Any) -> dict[str, Any]:
        raise NotImplementedError

    def amdsmi_get_gpu_device_uuid(self, processor_handle: Any) -> str:
        raise NotImplementedError

    def amdsmi_get_gpu_device_bdf(self, processor_handle: Any) -> str:
        raise NotImplementedError

    def amdsmi_get_power_info(self, processor_handle: Any) -> dict[str, Any]:
        raise NotImplementedError

    def amdsmi_get_energy_count(self, processor_handle: Any) -> dict[str, Any]:
        raise NotImplementedError

    def amdsmi_get_power_cap_info(self, processor_handle: Any) -> dict[str, Any]:
        raise NotImplementedError

    def amdsmi_get_clock_info(self, processor_handle: Any, clock_type: int) -> dict[str, Any]:
        raise NotImplementedError

    def amdsmi_get_lib_version(self) -> dict[str, Any]:
        raise NotImplementedError

    def amdsmi_get_gpu_driver_info(self, processor_handle: Any) -> dict[str, Any]:
        raise NotImplementedError


@dataclass
class FakeAmdGpu:
    uuid: str
    bdf: str
    model: str = "AMD Instinct MI300X"
    socket_w: float | str = 300.0
    average_w: float | str = 295.0
    ticks: int = 1_000_000
    resolution_uj: float = 15.3
    ticks_per_s: float = 300.0 / 15.3e-6
    energy_key: str = "energy_accumulator"


def make_amdsmi(gpus: list[FakeAmdGpu], clock: FakeClock) -> Any:
    """An autospec'd amdsmi whose counters advance with the fake clock at `ticks_per_s`."""
    fake = mock.create_autospec(AmdSmiSpec, instance=True)
    fake.AmdSmiException = AmdSmiException
    fake.AmdSmiClkType = AmdSmiClkType
    start = clock.now
    fake.amdsmi_get_processor_handles.side_effect = lambda: list(gpus)
    fake.amdsmi_get_gpu_asic_info.side_effect = lambda h: {"market_name": h.model, "vendor_id": 0x1002}
    fake.amdsmi_get_gpu_device_uuid.side_effect = lambda h: h.uuid
    fake.amdsmi_get_gpu_device_bdf.side_effect = lambda h: h.bdf
    fake.amdsmi_get_power_info.side_effect = lambda h: {
        "current_socket_power": h.socket_w,
        "average_socket_power": h.average_w,
        "gfx_voltage": 800,
        "soc_voltage": 900,
        "mem_voltage": 1000,
        "power_limit": 750_000_000,
    }
    fake.amdsmi_get_energy_count.side_effect = lambda h: {
        h.energy_key: int(h.ticks + h.ticks_per_s * (clock.now - start)),
        "counter_resolution": h.resolution_uj,
        "timestamp": int(clock.now * 1e9),
    }
    fake.amdsmi_get_power_cap_info.side_effect = lambda h: {"power_cap": 750_000_000, "dpm_cap": 0}
    fake.amdsmi_get_clock_info.side_effect = lambda h, kind: {"clk": 2100 if kind == AmdSmiClkType.GFX else 1300}
    fake.amdsmi_get_lib_version.side_effect = lambda: {"major": 25, "minor": 3, "release": 0, "build": 0}
    fake.amdsmi_get_gpu_driver_info.side_effect = lambda h: {"driver_name": "amdgpu", "driver_version": "6.10.5"}
    return fake
