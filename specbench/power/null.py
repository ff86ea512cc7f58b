"""The null meter: one pseudo-device that is 'not measured', with the reason, never zeros."""

from __future__ import annotations

from specbench.power.base import NOT_MEASURED, Device, Meter, PowerValues


class NullMeter(Meter):
    """Stands in where nothing can be measured (no meter here, or another process owns the devices)."""

    kind = "null"

    def __init__(self, reason: str = "no power meter was asked for") -> None:
        self.reason = reason
        super().__init__([Device(key="null", meter=self.kind, scope="none", notes=(reason,))])

    def read(self) -> list[PowerValues]:
        return [NOT_MEASURED]

    def info(self) -> dict[str, str]:
        return {"reason": self.reason}
