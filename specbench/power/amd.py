"""AMD GPUs through AMD SMI (module `amdsmi` of ROCm), imported only when used.

Energy: `amdsmi_get_energy_count` (accumulator x resolution in uJ). Power:
`amdsmi_get_power_info` (socket power in W). Known ROCm counter bugs (stuck or mis-scaled
counters) are checked at start against power x time and again per window, falling back to the
power integral. MI250: the secondary die reads 0 W and the primary reports the package, so
both dies are one device, attributed per package.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from specbench.power.base import Device, DeviceState, Meter, MeterUnavailable, PowerError, PowerValues, number, text
from specbench.power.energy import PLAUSIBLE_RATIO

ENERGY_API = "amdsmi_get_energy_count"
VISIBILITY_VARIABLES = ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")


def load_amdsmi() -> Any:
    try:
        import amdsmi
    except ImportError as err:
        raise MeterUnavailable(
            "the amdsmi meter needs the amdsmi module of ROCm: pip install 'specbench[amd]' "
            "(or put /opt/rocm/share/amd_smi on PYTHONPATH)"
        ) from err
    return amdsmi


@dataclass(frozen=True)
class _Package:
    handle: Any
    index: int
    instant_supported: bool


class AmdSmiMeter(Meter):
    """Every AMD GPU package this process may use (ROCR/HIP_VISIBLE_DEVICES), or those in `gpus`."""

    kind = "amdsmi"

    def __init__(
        self,
        gpus: Sequence[str] | None = None,
        *,
        amdsmi: Any = None,
        environ: Mapping[str, str] | None = None,
        check_s: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lib = amdsmi if amdsmi is not None else load_amdsmi()
        try:
            self._lib.amdsmi_init()
        except self._lib.AmdSmiException as err:
            raise MeterUnavailable(f"AMD SMI did not start ({err}): no amdgpu driver, or no GPU") from err
        try:
            handles = list(self._lib.amdsmi_get_processor_handles())
            if not handles:
                raise MeterUnavailable("AMD SMI sees no GPU in this machine")
            indices = self._select(handles, gpus, environ if environ is not None else {})
            probed = self._packages(handles, indices)
            devices = self._check_counters(probed, check_s, sleep, monotonic)
        except BaseException:
            self._lib.amdsmi_shut_down()
            raise
        self._packages_list = [package for package, _ in probed]
        self._open = True
        super().__init__(devices)

    def _select(self, handles: list[Any], gpus: Sequence[str] | None, environ: Mapping[str, str]) -> list[int]:
        source = f"gpus={list(gpus)}" if gpus is not None else None
        if gpus is None:
            for variable in VISIBILITY_VARIABLES:
                if variable in environ:
                    source = f"{variable}={environ[variable]!r}"
                    gpus = [item.strip() for item in environ[variable].split(",") if item.strip()]
                    break
        if gpus is None:
            return list(range(len(handles)))
        if not gpus:
            raise MeterUnavailable(f"{source} hides every GPU from this process")
        uuids = [text(self._lib.amdsmi_get_gpu_device_uuid(h)).lower() for h in handles]
        chosen: list[int] = []
        for selector in gpus:
            if selector.isdigit() and int(selector) < len(handles):
                index = int(selector)
            else:
                wanted = selector.lower().removeprefix("gpu-")
                matches = [i for i, uuid in enumerate(uuids) if wanted and wanted in uuid]
                if len(matches) != 1:
                    raise PowerError(f"{source}: {selector!r} names no single GPU; UUIDs here: {', '.join(uuids)}")
                index = matches[0]
            if index not in chosen:
                chosen.append(index)
        return chosen

    def _packages(self, handles: list[Any], indices: list[int]) -> list[tuple[_Package, Device]]:
        lib = self._lib
        probed: dict[int, tuple[_Package, Device]] = {}
        for index in indices:
            model = text(lib.amdsmi_get_gpu_asic_info(handles[index]).get("market_name", "unknown AMD GPU"))
            primary, members, notes = index, [index], []
            if "MI250" in model:
                primary = index - index % 2
                secondary = primary + 1
                readings = self._power(handles[secondary]) if secondary < len(handles) else ()
                secondary_w = max((w for w in readings if w is not None), default=None)
                if secondary < len(handles) and not secondary_w:
                    members = [primary, secondary]
                    notes.append(f"MI250: die {primary} reports both dies, die {secondary} reads 0 W; one device")
                else:
                    primary = index
                    notes.append("MI250 secondary die reports its own power here: measured per die")
            if primary in probed:
                continue
            handle = handles[primary]
            instant_w, average_w = self._power(handle)
            instant_supported = bool(instant_w) or (instant_w is not None and not average_w)
            probed[primary] = (
                _Package(handle, primary, instant_supported),
                Device(
                    key=f"amdsmi:{primary}",
                    meter=self.kind,
                    scope="accelerator",
                    vendor="AMD",
                    model=model,
                    uuid=text(lib.amdsmi_get_gpu_device_uuid(handle)),
                    pci_bus_id=text(lib.amdsmi_get_gpu_device_bdf(handle)),
                    index=primary,
                    power_source="amdsmi_get_power_info("
                    + ("current_socket_power, " if instant_supported else "")
                    + "average_socket_power)",
                    energy_counter=ENERGY_API,
                    verify_counter=True,
                    members=tuple(text(lib.amdsmi_get_gpu_device_bdf(handles[m])) for m in members),
                    notes=tuple(notes),
                ),
            )
        return list(probed.values())

    def _check_counters(
        self,
        probed: list[tuple[_Package, Device]],
        check_s: float,
        sleep: Callable[[float], None],
        monotonic: Callable[[], float],
    ) -> list[Device]:
        """Compare each counter with power x time over `check_s`; distrust stuck or implausible ones."""
        t0 = monotonic()
        first = [self._read_one(package) for package, _ in probed]
        sleep(check_s)
        t1 = monotonic()
        devices = []
        for (package, device), before in zip(probed, first, strict=True):
            after = self._read_one(package)
            problem = _counter_problem(before, after, t1 - t0)
            devices.append(replace(device, counter_problem=problem) if problem else device)
        return devices

    def _power(self, handle: Any) -> tuple[float | None, float | None]:
        info = self._lib.amdsmi_get_power_info(handle)
        instant = number(info.get("socket_power"))
        if instant is None:
            instant = number(info.get("current_socket_power"))
        return instant, number(info.get("average_socket_power"))

    def _read_one(self, package: _Package) -> PowerValues:
        instant_w, average_w = self._power(package.handle)
        count = self._lib.amdsmi_get_energy_count(package.handle)
        ticks = count.get("energy_accumulator", count.get("power"))
        resolution_uj = number(count.get("counter_resolution"))
        energy_j = None
        if number(ticks) is not None and resolution_uj is not None:
            energy_j = float(ticks) * resolution_uj / 1e6
        return PowerValues(instant_w if package.instant_supported else None, average_w, energy_j)

    def read(self) -> list[PowerValues]:
        return [self._read_one(package) for package in self._packages_list]

    def states(self) -> list[DeviceState]:
        lib = self._lib
        states = []
        for package in self._packages_list:
            cap = self._try(lib.amdsmi_get_power_cap_info, package.handle)
            gfx = self._try(lib.amdsmi_get_clock_info, package.handle, lib.AmdSmiClkType.GFX)
            mem = self._try(lib.amdsmi_get_clock_info, package.handle, lib.AmdSmiClkType.MEM)
            cap_w = number(cap.get("power_cap")) if isinstance(cap, dict) else None
            states.append(
                DeviceState(
                    power_limit_w=cap_w / 1e6 if cap_w is not None else None,
                    sm_clock_mhz=_clock(gfx),
                    memory_clock_mhz=_clock(mem),
                )
            )
        return states

    def info(self) -> dict[str, str]:
        lib = self._lib
        info: dict[str, str] = {}
        version = self._try(lib.amdsmi_get_lib_version)
        if isinstance(version, dict):
            info["library"] = "amdsmi " + ".".join(
                str(version[k]) for k in ("major", "minor", "release") if k in version
            )
        elif version is not None:
            info["library"] = f"amdsmi {version}"
        if self._packages_list:
            driver = self._try(lib.amdsmi_get_gpu_driver_info, self._packages_list[0].handle)
            if isinstance(driver, dict) and "driver_version" in driver:
                info["driver_version"] = text(driver["driver_version"])
        return info

    def _try(self, call: Callable[..., Any], *args: Any) -> Any:
        try:
            return call(*args)
        except self._lib.AmdSmiException:
            return None

    def _shutdown(self) -> None:
        if self._open:
            self._open = False
            self._try(self._lib.amdsmi_shut_down)


def _clock(info: Any) -> float | None:
    """Current clock in MHz from amdsmi_get_clock_info ('clk' in ROCm 6, 'cur_clk' in others)."""
    if not isinstance(info, Mapping):
        return None
    return number(info.get("clk", info.get("cur_clk")))


def _counter_problem(before: PowerValues, after: PowerValues, dt: float) -> str | None:
    if before.energy_j is None or after.energy_j is None:
        return "amdsmi_get_energy_count gave no counter value"
    powers = [p for p in (before.power_instant_w, after.power_instant_w) if p is not None] or [
        p for p in (before.power_average_w, after.power_average_w) if p is not None
    ]
    if not powers or dt <= 0:
        return None
    power_w = sum(powers) / len(powers)
    counter_w = (after.energy_j - before.energy_j) / dt
    if power_w > 0 and counter_w <= 0:
        return f"energy counter did not advance in {dt:.2f} s while power read {power_w:.1f} W (stuck counter)"
    low, high = PLAUSIBLE_RATIO
    if power_w > 0 and not low <= counter_w / power_w <= high:
        return (
            f"energy counter rate {counter_w:.1f} W against {power_w:.1f} W read as power at start "
            f"(ratio {counter_w / power_w:.2f}, plausible {low}-{high}): counter not trusted"
        )
    return None
