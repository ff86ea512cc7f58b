"""Grace Hopper and Grace Blackwell power from hwmon (`powerN_average`, labelled by `powerN_oem_info`).

Labels look like 'Module Power Socket 0', 'Grace Power Socket 0', 'CPU Power Socket 0' and
'SysIO Power Socket 0'. Module power already includes the GPU, the CPU and the memory of the
superchip, so each label family is its own scope ('module', 'cpu', 'sysio') and totals are
never added across scopes or with the NVML 'accelerator' scope. There is no energy counter:
energy is the integral of the averaged power.
"""

from __future__ import annotations

import re
from pathlib import Path

from specbench.power.base import Device, Meter, MeterUnavailable, PowerValues

HWMON_ROOT = Path("/sys/class/hwmon")
_POWER_LABEL = re.compile(r"^power(\d+)_oem_info$")


def _scope(label: str) -> str:
    head = label.lower().split()[0] if label.strip() else ""
    return {"module": "module", "grace": "cpu", "cpu": "cpu", "sysio": "sysio"}.get(head, "other")


def _slug(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")


class HwmonMeter(Meter):
    """Averaged power of every labelled hwmon power sensor (Grace superchips)."""

    kind = "hwmon"

    def __init__(self, root: Path = HWMON_ROOT) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise MeterUnavailable(f"{self.root} does not exist: no hwmon sensors on this machine")
        self._files: list[Path] = []
        devices: list[Device] = []
        for chip in sorted(self.root.iterdir()):
            for label_file in sorted(chip.glob("power*_oem_info")):
                match = _POWER_LABEL.match(label_file.name)
                if match is None:
                    continue
                sensor = f"power{match.group(1)}"
                average = chip / f"{sensor}_average"
                if not average.exists():
                    continue
                label = label_file.read_text().strip()
                try:
                    int(average.read_text().strip())
                except PermissionError:
                    raise MeterUnavailable(
                        f"cannot read {average}: permission denied; run as a user in the group that owns it, or as root"
                    ) from None
                interval = chip / f"{sensor}_average_interval"
                notes = (f"averaging interval {interval.read_text().strip()} ms",) if interval.exists() else ()
                if _scope(label) == "module":
                    notes = (*notes, "module power includes the GPU, CPU and memory of the superchip")
                devices.append(
                    Device(
                        key=f"hwmon:{_slug(label)}",
                        meter=self.kind,
                        scope=_scope(label),
                        vendor="NVIDIA",
                        model=label,
                        power_source=str(average),
                        energy_counter=None,
                        notes=notes,
                    )
                )
                self._files.append(average)
        if not devices:
            raise MeterUnavailable(f"no hwmon power sensors labelled by powerN_oem_info under {self.root}")
        super().__init__(devices)

    def read(self) -> list[PowerValues]:
        return [PowerValues(power_average_w=int(path.read_text().strip()) / 1e6) for path in self._files]

    def info(self) -> dict[str, str]:
        return {"hwmon_root": str(self.root)}
