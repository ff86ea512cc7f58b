"""A measured window: every device's energy between the sampler's synchronized `window_start` and `window_stop`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from specbench.power.energy import DeviceEnergy


@dataclass(frozen=True)
class Window:
    """Energy of every device between `window_start()` and `window_stop()`."""

    start_mono_s: float
    stop_mono_s: float
    start_wall_s: float
    stop_wall_s: float
    devices: tuple[DeviceEnergy, ...]

    @property
    def duration_s(self) -> float:
        return self.stop_mono_s - self.start_mono_s

    def device(self, key: str) -> DeviceEnergy:
        for energy in self.devices:
            if energy.device == key:
                return energy
        raise KeyError(f"no device {key!r} in this window; devices: {[e.device for e in self.devices]}")

    def energy_j(self, scope: str) -> float | None:
        """Total energy of one scope, or None when any device of that scope was not measured."""
        members = [e.energy_j for e in self.devices if e.scope == scope]
        if not members or any(e is None for e in members):
            return None
        return math.fsum(e for e in members if e is not None)

    def totals_by_scope(self) -> dict[str, float | None]:
        return {scope: self.energy_j(scope) for scope in dict.fromkeys(e.scope for e in self.devices)}

    def to_dict(self) -> dict[str, Any]:
        return {
            "start_mono_s": self.start_mono_s,
            "stop_mono_s": self.stop_mono_s,
            "start_wall": iso_utc(self.start_wall_s),
            "stop_wall": iso_utc(self.stop_wall_s),
            "duration_s": self.duration_s,
            "devices": [e.to_dict() for e in self.devices],
            "energy_j_by_scope": self.totals_by_scope(),
        }


def iso_utc(wall_s: float) -> str:
    """A wall-clock time (seconds since the epoch) as ISO 8601 in UTC, the labels power.json carries."""
    return datetime.fromtimestamp(wall_s, tz=timezone.utc).isoformat()
