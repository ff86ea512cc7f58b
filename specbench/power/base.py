"""The meter interface: devices with stable identities, and their power and energy readings.

Units are in the names: `_w` watts, `_j` joules, `_mhz` megahertz, `_s` seconds. A value the
hardware or API does not give is None ("not measured"), never zero.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, ClassVar

from specbench.errors import SpecbenchError

SCOPES = ("accelerator", "cpu_package", "dram", "platform", "module", "cpu", "sysio", "wall", "other", "none")
"""What a device's power covers. Totals are made per scope and never added across scopes,
because scopes nest (a Grace Hopper module includes its GPU, RAPL psys includes the package,
a meter at the outlet (`wall`) includes everything behind it)."""


class PowerError(SpecbenchError):
    """A meter, sampler or power trace cannot be used; the message names the cause and the fix."""


class MeterUnavailable(PowerError):
    """A meter cannot run on this machine: missing library, no device, no permission."""


@dataclass(frozen=True)
class Device:
    """One measured device: a stable identity plus where its power and energy values come from.

    `key` is unique within one trace ("nvml:0", "rapl:package-0"). `energy_counter` names the
    API of the hardware energy counter, or is None where there is none (energy is then the
    integral of power). `energy_range_j` is the counter's wrap modulus where it is known.
    `counter_problem` says why a counter that exists is not trusted (energy is then integrated).
    """

    key: str
    meter: str
    scope: str
    vendor: str | None = None
    model: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    index: int | None = None
    power_source: str | None = None
    energy_counter: str | None = None
    energy_range_j: float | None = None
    verify_counter: bool = False
    counter_problem: str | None = None
    members: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.scope not in SCOPES:
            raise ValueError(f"device {self.key!r}: scope {self.scope!r} is not one of {', '.join(SCOPES)}")

    @property
    def identity(self) -> str:
        """The most stable host-wide name of the device: UUID, else PCI bus id, else key."""
        return self.uuid or self.pci_bus_id or self.key

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["members"] = list(self.members)
        data["notes"] = list(self.notes)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Device:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise PowerError(f"device entry has unknown fields {unknown}; expected a subset of {sorted(known)}")
        values = dict(data)
        values["members"] = tuple(values.get("members", ()))
        values["notes"] = tuple(values.get("notes", ()))
        return cls(**values)


@dataclass(frozen=True)
class PowerValues:
    """One reading of one device. None means the API does not give that value."""

    power_instant_w: float | None = None
    power_average_w: float | None = None
    energy_j: float | None = None


NOT_MEASURED = PowerValues()


@dataclass(frozen=True)
class DeviceState:
    """Settings that change what a measurement means, recorded at the start and end of sampling."""

    power_limit_w: float | None = None
    sm_clock_mhz: float | None = None
    memory_clock_mhz: float | None = None

    def to_dict(self) -> dict[str, float | None]:
        return dataclasses.asdict(self)


class Meter(ABC):
    """A source of power readings for a fixed list of devices (set once, in the constructor)."""

    kind: ClassVar[str]

    def __init__(self, devices: list[Device]) -> None:
        self.devices = devices
        self._releases: list[Any] = []

    @abstractmethod
    def read(self) -> list[PowerValues]:
        """Read every device now; one PowerValues per device, in the order of `devices`."""

    def states(self) -> list[DeviceState]:
        """Power limit and clocks of every device now; None where the API does not say."""
        return [DeviceState() for _ in self.devices]

    def info(self) -> dict[str, str]:
        """Library and driver versions, for the trace's metadata."""
        return {}

    def hold(self, release: Any) -> None:
        """Keep an object with a `release()` method (a device claim) until the meter is closed."""
        self._releases.append(release)

    def close(self) -> None:
        """Release the library and any device claims. Safe to call twice."""
        try:
            self._shutdown()
        finally:
            while self._releases:
                self._releases.pop().release()

    def _shutdown(self) -> None:  # noqa: B027 (an optional hook, not abstract)
        """Release the vendor library; meters that open one override this."""

    def __enter__(self) -> Meter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def text(value: object) -> str:
    """A vendor string as str (NVML returns bytes from some versions)."""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def number(value: object) -> float | None:
    """A vendor number as float, or None for the 'N/A' strings and other non-numbers some APIs return."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)
