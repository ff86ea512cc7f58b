"""Best-known per-device training rates: the fastest public or committed result of each workload and device.

The table lives in best_known.yaml next to this module. A row names the spec ids that train one
model on the same samples, the model variant where the spec has several, a device (a row name of
devices.yaml), the rate per device in the spec's sample unit per second, and its source. The
validator calls a ranked claim beyond rate x (1 + margin) *unconfirmed*: it is not ranked until
`specbench reproduce` confirms it (docs/devices.md). Pure Python, like the device table.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import Field, PositiveFloat, model_validator

from specbench.errors import InputError, Location, Problem
from specbench.spec.loader import validate_model
from specbench.spec.models import Strict
from specbench.spec.yamlio import load_yaml

BEST_KNOWN_FILE = Path(__file__).resolve().parent / "best_known.yaml"


class RateSource(Strict):
    """Where a rate comes from: a public URL, a file of this repository, or both; and what it gives."""

    title: str = Field(min_length=1)
    url: str | None = Field(None, pattern=r"^https://\S+$")
    path: str | None = Field(None, min_length=1, description="A file of this repository (a committed result).")
    gives: str = Field(min_length=1, description="The figures the source gives and how the rate follows.")
    read_at: str | None = Field(None, description="Where the file was read, when not at `url` itself.")

    @model_validator(mode="after")
    def _somewhere(self) -> RateSource:
        if self.url is None and self.path is None:
            raise ValueError("expected a url or a path, found neither")
        return self


class BestKnownRate(Strict):
    """The best-known per-device rate of one workload on one device."""

    specs: list[str] = Field(min_length=1, description="Spec ids that train this model on these samples.")
    variant: str | None = Field(
        None, description="The model variant (hyperparameter `model`), where a spec has several."
    )
    device: str = Field(min_length=1, description="A row name of devices.yaml.")
    samples_per_s: PositiveFloat = Field(description="Samples (the spec's sample unit) per second per device.")
    source: RateSource

    def describe(self) -> str:
        """The workload and device in a few words, for messages."""
        variant = f" {self.variant}" if self.variant else ""
        return f"{'/'.join(self.specs)}{variant} on {self.device}"


class BestKnownTable(Strict):
    """best_known.yaml: the format version, the margin and the rows."""

    format_version: Literal[1]
    margin: float = Field(gt=0, lt=1, description="A claim beyond rate x (1 + margin) per device is unconfirmed.")
    rates: list[BestKnownRate] = Field(min_length=1)

    @model_validator(mode="after")
    def _one_row_each(self) -> BestKnownTable:
        seen: set[tuple[str, str | None, str]] = set()
        for row in self.rates:
            for spec in row.specs:
                key = (spec, row.variant, row.device)
                if key in seen:
                    raise ValueError(f"expected one row per spec, variant and device, found {key} twice")
                seen.add(key)
        return self

    def limit(self, row: BestKnownRate) -> float:
        """The fastest per-device rate confirmed without a re-run: the row's rate x (1 + margin)."""
        return row.samples_per_s * (1 + self.margin)


@cache
def _load(path: str, mtime_ns: int) -> tuple[BestKnownTable, dict[tuple[str, str | None, str], BestKnownRate]]:
    table: BestKnownTable = validate_model(BestKnownTable, load_yaml(Path(path)))
    index = {(spec, row.variant, row.device): row for row in table.rates for spec in row.specs}
    return table, index


def _cached(path: Path | None) -> tuple[BestKnownTable, dict[tuple[str, str | None, str], BestKnownRate]]:
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
    return _cached(path)[0]


def best_known(spec_id: str, variant: str | None, device: str | None, path: Path | None = None) -> BestKnownRate | None:
    """The row of a spec id, model variant and device row name; None when the table has none (or no device)."""
    if device is None:
        return None
    return _cached(path)[1].get((spec_id, variant, device))


def markdown_rates(table: BestKnownTable) -> str:
    """The table as docs/devices.md shows it (a test keeps the page and the file in sync)."""
    lines = [
        "| specs | variant | device | best per device /s | unconfirmed above | source |",
        "| --- | --- | --- | ---: | ---: | --- |",
    ]
    for row in table.rates:
        source = row.source
        where = f"[{source.title}]({source.url})" if source.url else f"{source.title} (`{source.path}`)"
        lines.append(
            f"| {', '.join(f'`{s}`' for s in row.specs)} | {row.variant or '–'} | {row.device} "
            f"| {row.samples_per_s:,.2f} | {table.limit(row):,.2f} | {where}: {source.gives} |"
        )
    return "\n".join(lines) + "\n"
