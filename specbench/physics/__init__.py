"""Physical bounds on results: datasheet facts of accelerators (peak rates, bandwidth, power), best-known results."""

from __future__ import annotations

from specbench.physics.best_known import (
    BEST_KNOWN_FILE,
    BestKnownEnergy,
    BestKnownRate,
    BestKnownTable,
    best_known,
    best_known_energy,
    load_best_known,
    markdown_energies,
    markdown_rates,
)
from specbench.physics.devices import (
    DEVICES_FILE,
    ENERGY_MARGIN,
    PRECISIONS,
    DeviceFacts,
    DeviceTable,
    Precision,
    Source,
    load_devices,
    lookup,
    markdown_sources,
    markdown_table,
    normalise_name,
    peak_flops,
    precision_column,
)

__all__ = [
    "BEST_KNOWN_FILE",
    "DEVICES_FILE",
    "ENERGY_MARGIN",
    "PRECISIONS",
    "BestKnownEnergy",
    "BestKnownRate",
    "BestKnownTable",
    "DeviceFacts",
    "DeviceTable",
    "Precision",
    "Source",
    "best_known",
    "best_known_energy",
    "load_best_known",
    "load_devices",
    "lookup",
    "markdown_energies",
    "markdown_rates",
    "markdown_sources",
    "markdown_table",
    "normalise_name",
    "peak_flops",
    "precision_column",
]
