"""Device facts: datasheet peak rates, bandwidth, power limit, idle floor and least energy per FLOP.

The table lives in devices.yaml next to this module. Rows are found by the model name that
system.yaml records (NVML's device name, amdsmi's market name, hl-smi's product name); an
unknown name gives None, never a guess. Pure Python: the validator and scorer import it.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import Field, PositiveFloat, PositiveInt, model_validator

from specbench.errors import InputError, Location, Problem
from specbench.spec.builtin import DEVICES_FILE
from specbench.spec.loader import validate_model
from specbench.spec.models import Strict
from specbench.spec.parsed import load_builtin_yaml
from specbench.spec.yamlio import load_yaml

DEVICES_FORMAT_VERSION = 1
TERA = 1e12
GIGA = 1e9

Precision = Literal["fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8"]
PRECISIONS: tuple[Precision, ...] = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8")

PRECISION_NAMES: dict[str, Precision] = {
    **{name: "fp64" for name in ("fp64", "float64", "double")},
    **{name: "fp32" for name in ("fp32", "float32", "float", "single")},
    **{name: "tf32" for name in ("tf32", "tensorfloat32")},
    **{name: "bf16" for name in ("bf16", "bfloat16", "amp_bf16", "bf16_mixed", "bf16-mixed", "mixed_bf16")},
    **{name: "fp16" for name in ("fp16", "float16", "half", "amp_fp16", "fp16_mixed", "16-mixed", "mixed_fp16")},
    **{name: "fp8" for name in ("fp8", "float8", "fp8_e4m3", "fp8_e5m2", "e4m3", "e5m2")},
    **{name: "int8" for name in ("int8",)},
}
"""The precision names specs, settings and hyperparameters use, mapped to the datasheet column."""

FALLBACK: dict[Precision, Precision] = {"tf32": "fp32"}
"""A precision a part lacks that frameworks run in a wider one: TF32 math is FP32 without TF32 units."""

FLOATING: tuple[Precision, ...] = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8")
"""The columns that count floating-point operations (int8 counts integer operations)."""

ENERGY_MARGIN = 0.5
"""Least energy per FLOP = this x power_limit_w / the fastest dense floating-point peak (docs/devices.md).

limit / peak is the energy per FLOP of a part running its fastest unit flat out at its board limit;
the most efficient published run (Green500, June 2024: JEDI, GH200, 72.7 GFLOPS/W on FP64 HPL,
13.8 pJ/FLOP for the whole system) is within 10 % of its part's limit / peak (1000 W / 67 TFLOP/s =
14.9 pJ/FLOP), so half of limit / peak leaves a factor of two for lower clocks and better kernels.
"""

IdleBasis = Literal["measured", "published", "rule"]


class Source(Strict):
    """Where a row's figures come from: the document, and what it gives."""

    title: str = Field(min_length=1)
    url: str = Field(pattern=r"^https://\S+$")
    gives: str = Field(min_length=1, description="The figures this document gives.")
    read_at: str | None = Field(None, description="Where the figures were read, when not at `url` itself.")


class PeakTflops(Strict):
    """Dense (no sparsity) peak rate per package in TFLOP/s (TOPS for int8); a missing key is not listed."""

    fp64: PositiveFloat | None = None
    fp32: PositiveFloat | None = None
    tf32: PositiveFloat | None = None
    bf16: PositiveFloat | None = None
    fp16: PositiveFloat | None = None
    fp8: PositiveFloat | None = None
    int8: PositiveFloat | None = None

    @model_validator(mode="after")
    def _some(self) -> PeakTflops:
        if all(getattr(self, p) is None for p in PRECISIONS):
            raise ValueError(f"expected at least one of {', '.join(PRECISIONS)}, found none")
        return self


class DeviceFacts(Strict):
    """One accelerator part: the names it is reported under, its physical limits, and their sources."""

    name: str = Field(min_length=1)
    vendor: Literal["NVIDIA", "AMD", "Intel"]
    aliases: list[str] = Field(min_length=1, description="Exact model names system.yaml records for this part.")
    peak_tflops: PeakTflops
    memory_bandwidth_gb_s: PositiveFloat
    power_limit_w: PositiveFloat = Field(description="Maximum TDP/TBP of the part (per package).")
    idle_floor_w: PositiveFloat = Field(
        description="Lowest power the part plausibly reads, idle or training (per package): 0.8 x the lowest "
        "idle reading measured or published, else a rule on power_limit_w (docs/devices.md)."
    )
    idle_floor_basis: IdleBasis = Field("rule", description="Whether idle_floor_w is measured, a reading or a rule.")
    idle_floor_from: str | None = Field(
        None, min_length=1, description="The reading or rule idle_floor_w comes from, and where (every shipped row)."
    )
    logical_devices: PositiveInt = Field(1, description="Devices the driver lists per package (MI250X: 2 GCDs).")
    power_limit_varies_by_board: bool = Field(False, description="Partner boards ship with higher power limits.")
    notes: str | None = None
    sources: list[Source] = Field(min_length=1)

    @model_validator(mode="after")
    def _floor_below_limit(self) -> DeviceFacts:
        if self.idle_floor_w >= self.power_limit_w:
            raise ValueError(
                f"expected idle_floor_w below power_limit_w ({self.power_limit_w:g} W), found {self.idle_floor_w:g} W"
            )
        return self

    @property
    def memory_bandwidth_bytes_per_s(self) -> float:
        return self.memory_bandwidth_gb_s * GIGA

    @property
    def least_energy_j_per_flop(self) -> float | None:
        """ENERGY_MARGIN x power_limit_w / the fastest dense floating-point peak; None without a float column.

        Per package and per listed device alike (both the power and the peak are per package).
        """
        fastest = max((getattr(self.peak_tflops, p) or 0.0 for p in FLOATING), default=0.0)
        return ENERGY_MARGIN * self.power_limit_w / (fastest * TERA) if fastest > 0 else None

    def peak_flops_per_s(self) -> dict[Precision, float]:
        """Dense peak FLOP/s per package of every precision the datasheet lists."""
        out: dict[Precision, float] = {}
        for precision in PRECISIONS:
            value = getattr(self.peak_tflops, precision)
            if value is not None:
                out[precision] = value * TERA
        return out


class DeviceTable(Strict):
    """devices.yaml: the format version and the rows."""

    format_version: Literal[1]
    devices: list[DeviceFacts] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_aliases(self) -> DeviceTable:
        seen: dict[str, str] = {}
        for row in self.devices:
            for alias in row.aliases:
                key = normalise_name(alias)
                if key in seen and seen[key] != row.name:
                    raise ValueError(
                        f"expected each alias in one row, found {alias!r} in {seen[key]!r} and {row.name!r}"
                    )
                seen[key] = row.name
        return self


def normalise_name(name: str) -> str:
    """A model name compared without case, repeated whitespace, or spaces around '/'."""
    return re.sub(r"\s*/\s*", "/", " ".join(name.split())).casefold()


@cache
def _load(path: str, mtime_ns: int) -> tuple[DeviceTable, dict[str, DeviceFacts]]:
    doc = load_builtin_yaml(Path(path)) if Path(path) == DEVICES_FILE else load_yaml(Path(path))
    table: DeviceTable = validate_model(DeviceTable, doc)
    index = {normalise_name(alias): row for row in table.devices for alias in row.aliases}
    return table, index


def _cached(path: Path | None) -> tuple[DeviceTable, dict[str, DeviceFacts]]:
    target = DEVICES_FILE if path is None else Path(path)
    try:
        mtime = target.stat().st_mtime_ns
    except OSError as err:
        raise InputError([Problem(Location(str(target), 1, 1), f"cannot read the device table: {err}")]) from err
    return _load(str(target), mtime)


def load_devices(path: Path | None = None) -> DeviceTable:
    """The validated device table (the shipped one by default), cached per file and modification time.

    Raises InputError with every located problem when the file is malformed.
    """
    return _cached(path)[0]


def lookup(model_name: str | None, path: Path | None = None) -> DeviceFacts | None:
    """The row whose aliases include `model_name` (case and whitespace ignored), or None."""
    if not model_name:
        return None
    return _cached(path)[1].get(normalise_name(model_name))


def precision_column(precision: str | None) -> Precision | None:
    """The datasheet column of a precision name (e.g. 'amp_bf16' -> 'bf16'), or None when unknown."""
    if not precision:
        return None
    return PRECISION_NAMES.get(precision.strip().casefold())


def peak_flops(facts: DeviceFacts, precision: str | None) -> float | None:
    """Dense peak FLOP/s of one listed device (a package divided by its logical devices) at a precision.

    None when the precision name is unknown or the datasheet lists no figure for it; tf32 on a
    part without TF32 falls back to its fp32 figure, the math frameworks run instead.
    """
    column = precision_column(precision)
    if column is None:
        return None
    rates = facts.peak_flops_per_s()
    rate = rates.get(column)
    if rate is None and column in FALLBACK:
        rate = rates.get(FALLBACK[column])
    return None if rate is None else rate / facts.logical_devices


def markdown_table(table: DeviceTable) -> str:
    """The table as docs/devices.md shows it (a test keeps the page and the file in sync)."""

    def cell(value: float | None) -> str:
        return "–" if value is None else f"{value:g}"

    lines = [
        "| part | reported as | "
        + " | ".join(PRECISIONS)
        + " | GB/s | limit W | floor W | floor from | least pJ/FLOP |",
        "| --- | --- | " + " | ".join("---:" for _ in PRECISIONS) + " | ---: | ---: | ---: | --- | ---: |",
    ]
    for row in table.devices:
        names = "<br>".join(f"`{alias}`" for alias in row.aliases)
        rates = " | ".join(cell(getattr(row.peak_tflops, p)) for p in PRECISIONS)
        least = row.least_energy_j_per_flop
        lines.append(
            f"| {row.name} | {names} | {rates} | {row.memory_bandwidth_gb_s:g} | {row.power_limit_w:g} "
            f"| {row.idle_floor_w:g} | {row.idle_floor_basis} | {cell(None if least is None else round(least * TERA, 3))} |"
        )
    return "\n".join(lines) + "\n"


def markdown_sources(table: DeviceTable) -> str:
    """Every row's sources as a Markdown list, in table order (docs/devices.md)."""
    lines: list[str] = []
    for row in table.devices:
        lines.append(f"- **{row.name}**")
        if row.idle_floor_from:
            lines.append(f"  - idle floor {row.idle_floor_w:g} W ({row.idle_floor_basis}): {row.idle_floor_from}.")
        for source in row.sources:
            where = f" Read at: {source.read_at}." if source.read_at else ""
            lines.append(f"  - [{source.title}]({source.url}): {source.gives}.{where}")
    return "\n".join(lines) + "\n"
