"""CPU package and DRAM energy from Linux powercap RAPL (`/sys/class/powercap/intel-rapl:*`).

Top-level zones (package-N, psys) and their 'dram' subzones are measured; 'core' and 'uncore'
subzones are skipped because the package already includes them, and the duplicate
`intel-rapl-mmio` zones are skipped for the same reason. Counters wrap at
`max_energy_range_uj`; the sampler corrects that from `energy_range_j`.
"""

from __future__ import annotations

import re
from pathlib import Path

from specbench.power.base import Device, Meter, MeterUnavailable, PowerValues

POWERCAP_ROOT = Path("/sys/class/powercap")
_ZONE = re.compile(r"^intel-rapl:(\d+)(?::(\d+))?$")


def _scope(name: str) -> str | None:
    if name.startswith("package"):
        return "cpu_package"
    if name == "dram":
        return "dram"
    if name == "psys":
        return "platform"
    return None


def _permission_message(path: Path) -> str:
    return (
        f"cannot read {path}: permission denied. Since Linux 5.10 RAPL energy counters are readable "
        f"by root only. Fix: run as root, or let this user read them until the next boot with "
        f"`sudo chmod o+r /sys/class/powercap/intel-rapl:*/energy_uj /sys/class/powercap/intel-rapl:*:*/energy_uj`, "
        f"or leave RAPL out (--meters nvml)"
    )


def _read_int(path: Path) -> int:
    try:
        return int(path.read_text().strip())
    except PermissionError:
        raise MeterUnavailable(_permission_message(path)) from None


class RaplMeter(Meter):
    """Energy counters of CPU packages, DRAM and the platform (psys); RAPL gives no power values."""

    kind = "rapl"

    def __init__(self, root: Path = POWERCAP_ROOT) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise MeterUnavailable(f"{self.root} does not exist: this kernel exposes no powercap RAPL zones")
        self._files: list[Path] = []
        devices: list[Device] = []
        for zone in sorted(self.root.iterdir(), key=lambda p: _zone_order(p.name)):
            match = _ZONE.match(zone.name)
            if match is None or not (zone / "energy_uj").exists():
                continue
            name = (zone / "name").read_text().strip() if (zone / "name").exists() else zone.name
            scope = _scope(name)
            is_subzone = match.group(2) is not None
            if scope is None or (is_subzone and scope != "dram"):
                continue
            key = f"rapl:package-{match.group(1)}/dram" if is_subzone else f"rapl:{name}"
            energy_file = zone / "energy_uj"
            _read_int(energy_file)
            range_file = zone / "max_energy_range_uj"
            range_j = _read_int(range_file) / 1e6 if range_file.exists() else None
            notes = () if range_j else ("max_energy_range_uj missing: a wrap will read as a reset",)
            devices.append(
                Device(
                    key=key,
                    meter=self.kind,
                    scope=scope,
                    vendor=None,
                    model=f"RAPL {name}",
                    index=int(match.group(1)),
                    power_source=None,
                    energy_counter=str(energy_file),
                    energy_range_j=range_j,
                    notes=notes,
                )
            )
            self._files.append(energy_file)
        if not devices:
            raise MeterUnavailable(f"no RAPL package, dram or psys zones under {self.root}")
        super().__init__(devices)

    def read(self) -> list[PowerValues]:
        return [PowerValues(energy_j=_read_int(path) / 1e6) for path in self._files]

    def info(self) -> dict[str, str]:
        return {"powercap_root": str(self.root)}


def _zone_order(name: str) -> tuple[int, ...]:
    match = _ZONE.match(name)
    if match is None:
        return (1_000_000,)
    return tuple(int(g) for g in match.groups() if g is not None)
