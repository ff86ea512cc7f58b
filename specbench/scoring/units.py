"""Numbers as the leaderboard prints them: one notation, an SI prefix chosen per column, the unit in the header.

A column's prefix is chosen once from every value it shows (the largest reads between 1 and 1000), so
values compare at a glance; each value keeps four significant digits in plain decimal notation, never
an exponent and never a thousands separator. Counts (samples, tokens, FLOPs and their rates) take no
prefix below one: 0.8506 image/s, never 850.6 mimage/s.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Scaling = Literal["si", "count", "time", "percent", "plain"]

PREFIXES = {-15: "f", -12: "p", -9: "n", -6: "µ", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
TIME_UNITS = (("s", 1.0), ("min", 60.0), ("h", 3600.0))
SIGNIFICANT = 4
MAX_DECIMALS = 6


def significant(value: float, digits: int = SIGNIFICANT) -> str:
    """`value` with `digits` significant digits in plain decimal notation (123.4, 12.34, 0.1234)."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    decimals = digits - 1 - math.floor(math.log10(abs(value)))
    text = f"{value:.{min(max(decimals, 0), MAX_DECIMALS)}f}"
    return "0" if float(text) == 0 and decimals > MAX_DECIMALS else text


def _finite(values: Iterable[float | None]) -> list[float]:
    return [abs(v) for v in values if v is not None and math.isfinite(v) and v != 0]


@dataclass(frozen=True)
class Scale:
    """How one column shows its values: divide by `divisor`, print in `unit` (prefix included)."""

    unit: str
    divisor: float = 1.0
    digits: int = SIGNIFICANT

    def number(self, value: float) -> str:
        """The value in this scale's unit, without the unit."""
        return significant(value / self.divisor, self.digits)

    def text(self, value: float | None, missing: str = "n/a") -> str:
        return missing if value is None else self.number(value)

    def with_unit(self, value: float | None, missing: str = "n/a") -> str:
        """The value and its unit (`151.5 k token/s`), for aggregate tables and axis labels."""
        if value is None:
            return missing
        return f"{self.number(value)} {self.unit}".rstrip()


def si_scale(values: Iterable[float | None], unit: str, lowest: int = min(PREFIXES)) -> Scale:
    """The SI prefix that puts the largest of `values` between 1 and 1000 (no prefix when there are none), none
    below 10**`lowest`."""
    present = _finite(values)
    if not present:
        return Scale(unit)
    exponent = 3 * math.floor(math.log10(max(present)) / 3 + 1e-9)
    exponent = min(max(exponent, lowest, min(PREFIXES)), max(PREFIXES))
    return Scale(f"{PREFIXES[exponent]}{unit}", 10.0**exponent)


def time_scale(values: Iterable[float | None]) -> Scale:
    """Seconds, minutes or hours: the first in which the longest of `values` stays below 1000."""
    longest = max(_finite(values), default=0.0)
    for unit, seconds in TIME_UNITS:
        if longest / seconds < 1000:
            return Scale(unit, seconds)
    return Scale(*TIME_UNITS[-1])


def scale_for(scaling: Scaling, values: Iterable[float | None], unit: str) -> Scale:
    """The scale of a column of `values` whose base unit is `unit`."""
    if scaling == "si":
        return si_scale(values, unit)
    if scaling == "count":
        return si_scale(values, unit, lowest=0)
    if scaling == "time":
        return time_scale(values)
    if scaling == "percent":
        return Scale("%", 0.01, digits=3)
    return Scale(unit)


BINARY = (("B", 1), ("KiB", 2**10), ("MiB", 2**20), ("GiB", 2**30), ("TiB", 2**40), ("PiB", 2**50))


def binary_bytes(count: float) -> str:
    """A byte count in binary units: 23.54 GiB."""
    unit, size = next(((u, s) for u, s in BINARY if abs(count) < s * 1024), BINARY[-1])
    return f"{count:.0f} B" if size == 1 else f"{significant(count / size)} {unit}"


def compact(value: float, digits: int = SIGNIFICANT) -> str:
    """A parameter as a reader takes it in: `digits` significant digits (the integer part whole), no trailing
    zeros, an exponent only below 0.0001 or from 10**15 (0.875, 700, 50257, 3.052e-5)."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    if 1e-4 <= abs(value) < 1e15:
        text = significant(value, digits)
        return text.rstrip("0").rstrip(".") if "." in text else text
    mantissa, _, power = f"{value:.{digits - 1}e}".partition("e")
    mantissa = mantissa.rstrip("0").rstrip(".") if "." in mantissa else mantissa
    return f"{mantissa}e{int(power)}"
