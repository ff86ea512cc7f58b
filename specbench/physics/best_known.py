"""Best-known training results per device: the fastest rate and the lowest energy per sample of each workload and device.

The table lives in best_known.yaml next to this module. A row names the spec ids that train one
model on the same samples, the model variant where the spec has several, a device (a row name of
devices.yaml), the figure (a rate per device in the spec's sample unit per second, or accelerator
energy in joules per sample) and its source. The validator calls a ranked claim beyond rate x
(1 + margin), or below energy x (1 - energy_margin), *unconfirmed*: it is not ranked until
`specbench reproduce` confirms it (docs/devices.md). Pure Python, like the device table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import Field, PositiveFloat, model_validator

from specbench.errors import InputError, Location, Problem
from specbench.spec.builtin import BEST_KNOWN_FILE
from specbench.spec.loader import validate_model
from specbench.spec.models import Strict
from specbench.spec.parsed import load_builtin_yaml
from specbench.spec.yamlio import load_yaml


class RateSource(Strict):
    """Where a figure comes from: a public URL, a file of this repository, or both; and what it gives."""

    title: str = Field(min_length=1)
    url: str | None = Field(None, pattern=r"^https://\S+$")
    path: str | None = Field(None, min_length=1, description="A file of this repository (a committed result).")
    gives: str = Field(min_length=1, description="The figures the source gives and how the row's figure follows.")
    read_at: str | None = Field(None, description="Where the file was read, when not at `url` itself.")

    @model_validator(mode="after")
    def _somewhere(self) -> RateSource:
        if self.url is None and self.path is None:
            raise ValueError("expected a url or a path, found neither")
        return self


class BestKnownRow(Strict):
    """What every best-known row names: the workload (spec ids and variant), the device and the source."""

    specs: list[str] = Field(min_length=1, description="Spec ids that train this model on these samples.")
    variant: str | None = Field(
        None, description="The model variant (hyperparameter `model`), where a spec has several."
    )
    device: str = Field(min_length=1, description="A row name of devices.yaml.")
    source: RateSource

    def describe(self) -> str:
        """The workload and device in a few words, for messages."""
        variant = f" {self.variant}" if self.variant else ""
        return f"{'/'.join(self.specs)}{variant} on {self.device}"


class BestKnownRate(BestKnownRow):
    """The best-known per-device rate of one workload on one device."""

    samples_per_s: PositiveFloat = Field(description="Samples (the spec's sample unit) per second per device.")


class BestKnownEnergy(BestKnownRow):
    """The best-known (lowest) accelerator energy per sample of one workload on one device."""

    energy_j_per_sample: PositiveFloat = Field(
        description="Accelerator energy in joules per sample (the spec's sample unit), as the trace measures it."
    )


Key = tuple[str, str | None, str]
"""A row's lookup key: spec id, model variant (None: the spec has none) and device row name."""


def _keys(rows: Sequence[BestKnownRow], what: str) -> None:
    """Raise ValueError where two rows of one list name the same spec, variant and device."""
    seen: set[Key] = set()
    for row in rows:
        for spec in row.specs:
            key = (spec, row.variant, row.device)
            if key in seen:
                raise ValueError(f"expected one {what} row per spec, variant and device, found {key} twice")
            seen.add(key)


class BestKnownTable(Strict):
    """best_known.yaml: the format version, the two margins and the rows of rates and of energies."""

    format_version: Literal[1]
    margin: float = Field(gt=0, lt=1, description="A claim beyond rate x (1 + margin) per device is unconfirmed.")
    energy_margin: float = Field(
        gt=0, lt=1, description="A claim below energy per sample x (1 - energy_margin) is unconfirmed."
    )
    rates: list[BestKnownRate] = Field(min_length=1)
    energies: list[BestKnownEnergy] = Field(min_length=1)

    @model_validator(mode="after")
    def _one_row_each(self) -> BestKnownTable:
        _keys(self.rates, "rate")
        _keys(self.energies, "energy")
        return self

    def limit(self, row: BestKnownRate) -> float:
        """The fastest per-device rate confirmed without a re-run: the row's rate x (1 + margin)."""
        return row.samples_per_s * (1 + self.margin)

    def energy_limit(self, row: BestKnownEnergy) -> float:
        """The lowest energy per sample confirmed without a re-run: the row's energy x (1 - energy_margin)."""
        return row.energy_j_per_sample * (1 - self.energy_margin)


@dataclass(frozen=True)
class _Indexed:
    """The validated table and its rows by key."""

    table: BestKnownTable
    rates: dict[Key, BestKnownRate]
    energies: dict[Key, BestKnownEnergy]


@cache
def _load(path: str, mtime_ns: int) -> _Indexed:
    doc = load_builtin_yaml(Path(path)) if Path(path) == BEST_KNOWN_FILE else load_yaml(Path(path))
    table: BestKnownTable = validate_model(BestKnownTable, doc)
    return _Indexed(
        table,
        {(spec, row.variant, row.device): row for row in table.rates for spec in row.specs},
        {(spec, row.variant, row.device): row for row in table.energies for spec in row.specs},
    )


def _cached(path: Path | None) -> _Indexed:
    target = BEST_KNOWN_FILE if path is None else Path(path)
    try:
        mtime = target.stat().st_mtime_ns
    except OSError as err:
        raise InputError([Problem(Location(str(target), 1, 1), f"cannot read the best-known table: {err}")]) from err
    return _load(str(target), mtime)


def load_best_known(path: Path | None = None) -> BestKnownTable:
    """The validated best-known table (the shipped one by default), cached per file and modification time.

    Raises InputError with every located problem when the file is malformed.
    """
    return _cached(path).table


def best_known(spec_id: str, variant: str | None, device: str | None, path: Path | None = None) -> BestKnownRate | None:
    """The rate row of a spec id, model variant and device row name; None when the table has none (or no device)."""
    if device is None:
        return None
    return _cached(path).rates.get((spec_id, variant, device))


def best_known_energy(
    spec_id: str, variant: str | None, device: str | None, path: Path | None = None
) -> BestKnownEnergy | None:
    """The energy row of a spec id, model variant and device row name; None when the table has none (or no device)."""
    if device is None:
        return None
    return _cached(path).energies.get((spec_id, variant, device))


def markdown_rates(table: BestKnownTable) -> str:
    """The rate rows as docs/devices.md shows them (a test keeps the page and the file in sync)."""
    lines = [
        "| specs | variant | device | best per device /s | unconfirmed above | source |",
        "| --- | --- | --- | ---: | ---: | --- |",
    ]
    for row in table.rates:
        lines.append(f"{_workload(row)} | {row.samples_per_s:,.2f} | {table.limit(row):,.2f} | {_source(row)} |")
    return "\n".join(lines) + "\n"


def markdown_energies(table: BestKnownTable) -> str:
    """The energy rows as docs/devices.md shows them (a test keeps the page and the file in sync)."""
    lines = [
        "| specs | variant | device | best J per sample | unconfirmed below | source |",
        "| --- | --- | --- | ---: | ---: | --- |",
    ]
    for row in table.energies:
        lines.append(
            f"{_workload(row)} | {row.energy_j_per_sample:.5g} | {table.energy_limit(row):.5g} | {_source(row)} |"
        )
    return "\n".join(lines) + "\n"


def _workload(row: BestKnownRow) -> str:
    return f"| {', '.join(f'`{s}`' for s in row.specs)} | {row.variant or '–'} | {row.device}"


def _source(row: BestKnownRow) -> str:
    source = row.source
    where = f"[{source.title}]({source.url})" if source.url else f"{source.title} (`{source.path}`)"
    return f"{where}: {source.gives}"
