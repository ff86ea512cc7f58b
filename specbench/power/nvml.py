"""NVIDIA GPUs through NVML (package nvidia-ml-py, module `pynvml`), imported only when used.

Energy: `nvmlDeviceGetTotalEnergyConsumption` (mJ since the driver loaded). Power: the
POWER_INSTANT and POWER_AVERAGE field values; `nvmlDeviceGetPowerUsage` only where the fields
are unsupported (on Ampere and newer it is a 1 s moving average, so it lands in the average
column). Devices follow CUDA_VISIBLE_DEVICES, matched by UUID; MIG slices are refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Any, TypeVar

from specbench.power.base import Device, DeviceState, Meter, MeterUnavailable, PowerError, PowerValues, text

ENERGY_API = "nvmlDeviceGetTotalEnergyConsumption"
T = TypeVar("T")
_VALUE_MEMBERS = {
    "NVML_VALUE_TYPE_DOUBLE": "dVal",
    "NVML_VALUE_TYPE_UNSIGNED_INT": "uiVal",
    "NVML_VALUE_TYPE_UNSIGNED_LONG": "ulVal",
    "NVML_VALUE_TYPE_UNSIGNED_LONG_LONG": "ullVal",
    "NVML_VALUE_TYPE_SIGNED_LONG_LONG": "sllVal",
    "NVML_VALUE_TYPE_SIGNED_INT": "siVal",
    "NVML_VALUE_TYPE_UNSIGNED_SHORT": "usVal",
}


def load_pynvml() -> Any:
    try:
        import pynvml
    except ImportError as err:
        raise MeterUnavailable(
            "the nvml meter needs the pynvml module: pip install 'specbench[run]' (it brings nvidia-ml-py)"
        ) from err
    return pynvml


@dataclass(frozen=True)
class _Gpu:
    handle: Any
    fields: tuple[tuple[str, int], ...]
    usage_column: str | None
    has_energy: bool


class NvmlMeter(Meter):
    """Every NVIDIA GPU this process may use (CUDA_VISIBLE_DEVICES), or those named in `gpus`."""

    kind = "nvml"

    def __init__(
        self, gpus: Sequence[str] | None = None, *, nvml: Any = None, environ: Mapping[str, str] | None = None
    ) -> None:
        self._nvml = nvml if nvml is not None else load_pynvml()
        try:
            self._nvml.nvmlInit()
        except self._nvml.NVMLError as err:
            raise MeterUnavailable(f"NVML did not start ({err}): no NVIDIA driver, or no GPU in this machine") from err
        try:
            indices = select_gpus(self._nvml, gpus, environ if environ is not None else {})
            probed = [self._probe(index) for index in indices]
        except BaseException:
            self._nvml.nvmlShutdown()
            raise
        self._gpus = [gpu for gpu, _ in probed]
        self._open = True
        super().__init__([device for _, device in probed])

    def _probe(self, index: int) -> tuple[_Gpu, Device]:
        nvml = self._nvml
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        uuid = text(nvml.nvmlDeviceGetUUID(handle))
        self._refuse_mig(handle, index, uuid)
        fields = self._supported_fields(handle)
        usage_column = None if fields else self._power_usage_column(handle)
        has_energy = self._try(nvml.nvmlDeviceGetTotalEnergyConsumption, handle) is not None
        notes: list[str] = []
        if fields:
            source = "nvmlDeviceGetFieldValues(" + ", ".join(f"POWER_{name.upper()}" for name, _ in fields) + ")"
        elif usage_column:
            source = f"nvmlDeviceGetPowerUsage (as {usage_column} power)"
            notes.append(
                "power fields unsupported; nvmlDeviceGetPowerUsage is a 1 s moving average on Ampere and newer"
            )
        else:
            source = None
            notes.append("NVML gives no power reading for this GPU")
        if not has_energy:
            notes.append(f"{ENERGY_API} unsupported (before Volta): energy is integrated from power")
        pci = self._try(nvml.nvmlDeviceGetPciInfo, handle)
        device = Device(
            key=f"nvml:{index}",
            meter=self.kind,
            scope="accelerator",
            vendor="NVIDIA",
            model=text(nvml.nvmlDeviceGetName(handle)),
            uuid=uuid,
            pci_bus_id=text(pci.busId) if pci is not None else None,
            index=index,
            power_source=source,
            energy_counter=ENERGY_API if has_energy else None,
            notes=tuple(notes),
        )
        return _Gpu(handle, fields, usage_column, has_energy), device

    def _refuse_mig(self, handle: Any, index: int, uuid: str) -> None:
        modes = self._try(self._nvml.nvmlDeviceGetMigMode, handle)
        if modes is not None and modes[0] == self._nvml.NVML_DEVICE_MIG_ENABLE:
            raise PowerError(
                f"GPU {index} ({uuid}) is in MIG mode: NVML measures power and energy of the whole GPU only, "
                f"never of a MIG slice. Measure on a GPU with MIG disabled, or leave NVML out (--meters null)"
            )

    def _supported_fields(self, handle: Any) -> tuple[tuple[str, int], ...]:
        nvml = self._nvml
        wanted = (("instant", nvml.NVML_FI_DEV_POWER_INSTANT), ("average", nvml.NVML_FI_DEV_POWER_AVERAGE))
        values = self._try(nvml.nvmlDeviceGetFieldValues, handle, [field for _, field in wanted])
        if values is None:
            return ()
        return tuple(pair for pair, value in zip(wanted, values, strict=True) if value.nvmlReturn == nvml.NVML_SUCCESS)

    def _power_usage_column(self, handle: Any) -> str | None:
        nvml = self._nvml
        if self._try(nvml.nvmlDeviceGetPowerUsage, handle) is None:
            return None
        arch = self._try(nvml.nvmlDeviceGetArchitecture, handle)
        averaged = arch is not None and nvml.NVML_DEVICE_ARCH_AMPERE <= arch < nvml.NVML_DEVICE_ARCH_UNKNOWN
        return "average" if averaged else "instant"

    def _try(self, call: Callable[..., T], *args: Any) -> T | None:
        try:
            return call(*args)
        except self._nvml.NVMLError:
            return None

    def read(self) -> list[PowerValues]:
        nvml = self._nvml
        readings = []
        for gpu in self._gpus:
            power: dict[str, float | None] = {"instant": None, "average": None}
            if gpu.fields:
                values = nvml.nvmlDeviceGetFieldValues(gpu.handle, [field for _, field in gpu.fields])
                for (name, _), value in zip(gpu.fields, values, strict=True):
                    if value.nvmlReturn == nvml.NVML_SUCCESS:
                        power[name] = field_number(nvml, value) / 1000
            elif gpu.usage_column is not None:
                power[gpu.usage_column] = nvml.nvmlDeviceGetPowerUsage(gpu.handle) / 1000
            energy_j = nvml.nvmlDeviceGetTotalEnergyConsumption(gpu.handle) / 1000 if gpu.has_energy else None
            readings.append(PowerValues(power["instant"], power["average"], energy_j))
        return readings

    def states(self) -> list[DeviceState]:
        nvml = self._nvml
        states = []
        for gpu in self._gpus:
            limit_mw = self._try(nvml.nvmlDeviceGetEnforcedPowerLimit, gpu.handle)
            sm = self._try(nvml.nvmlDeviceGetClockInfo, gpu.handle, nvml.NVML_CLOCK_SM)
            mem = self._try(nvml.nvmlDeviceGetClockInfo, gpu.handle, nvml.NVML_CLOCK_MEM)
            states.append(
                DeviceState(
                    power_limit_w=limit_mw / 1000 if limit_mw is not None else None,
                    sm_clock_mhz=float(sm) if sm is not None else None,
                    memory_clock_mhz=float(mem) if mem is not None else None,
                )
            )
        return states

    def info(self) -> dict[str, str]:
        nvml = self._nvml
        info = {"library": f"nvidia-ml-py {_package_version('nvidia-ml-py')}"}
        for name, call in (
            ("driver_version", "nvmlSystemGetDriverVersion"),
            ("nvml_version", "nvmlSystemGetNVMLVersion"),
        ):
            value = self._try(getattr(nvml, call))
            if value is not None:
                info[name] = text(value)
        return info

    def _shutdown(self) -> None:
        if self._open:
            self._open = False
            self._try(self._nvml.nvmlShutdown)


def field_number(nvml: Any, value: Any) -> float:
    """The number in an nvmlFieldValue_t, read from the union member its valueType names."""
    for constant, member in _VALUE_MEMBERS.items():
        if value.valueType == getattr(nvml, constant):
            return float(getattr(value.value, member))
    raise PowerError(f"NVML field {value.fieldId} has unknown value type {value.valueType}")


def _package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "unknown"


def select_gpus(nvml: Any, gpus: Sequence[str] | None, environ: Mapping[str, str]) -> list[int]:
    """NVML indices of the GPUs named by `gpus` or CUDA_VISIBLE_DEVICES (indices or UUIDs), else all."""
    count = nvml.nvmlDeviceGetCount()
    if count == 0:
        raise MeterUnavailable("NVML sees no GPU in this machine")
    if gpus is None:
        raw = environ.get("CUDA_VISIBLE_DEVICES")
        if raw is None:
            return list(range(count))
        source = f"CUDA_VISIBLE_DEVICES={raw!r}"
        gpus = [item.strip() for item in raw.split(",") if item.strip()]
        if not gpus:
            raise MeterUnavailable(f"{source} hides every GPU from this process")
    else:
        source = f"gpus={list(gpus)}"
    handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
    uuids = [text(nvml.nvmlDeviceGetUUID(h)) for h in handles]
    if any(g.isdigit() for g in gpus) and environ.get("CUDA_DEVICE_ORDER") != "PCI_BUS_ID":
        models = {text(nvml.nvmlDeviceGetName(h)) for h in handles}
        if len(models) > 1:
            raise PowerError(
                f"{source} names GPUs by index, but this machine mixes models ({', '.join(sorted(models))}): "
                f"CUDA numbers them fastest first, NVML by PCI bus. "
                f"Set CUDA_DEVICE_ORDER=PCI_BUS_ID or name GPUs by UUID"
            )
    chosen: list[int] = []
    for selector in gpus:
        index = _resolve(selector, uuids, source)
        if index not in chosen:
            chosen.append(index)
    return chosen


def _resolve(selector: str, uuids: list[str], source: str) -> int:
    if selector.upper().startswith("MIG-"):
        raise PowerError(
            f"{source} names the MIG slice {selector}: NVML cannot measure the power or energy of a MIG slice, "
            f"only of a whole GPU. Measure on a whole GPU, or leave NVML out (--meters null)"
        )
    if selector.isdigit():
        index = int(selector)
        if index >= len(uuids):
            raise PowerError(f"{source}: GPU index {index} does not exist; NVML sees {len(uuids)} GPU(s)")
        return index
    wanted = selector if selector.startswith("GPU-") else f"GPU-{selector}"
    matches = [i for i, uuid in enumerate(uuids) if uuid.startswith(wanted)]
    if len(matches) != 1:
        found = "no GPU" if not matches else f"{len(matches)} GPUs"
        raise PowerError(f"{source}: {selector!r} matches {found}; UUIDs here: {', '.join(uuids)}")
    return matches[0]
