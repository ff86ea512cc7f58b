"""Physical bounds on results: datasheet facts of accelerators (peak rates, bandwidth, power)."""

from __future__ import annotations

from specbench.physics.devices import (
    DEVICES_FILE,
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
    "DEVICES_FILE",
    "PRECISIONS",
    "DeviceFacts",
    "DeviceTable",
    "Precision",
    "Source",
    "load_devices",
    "lookup",
    "markdown_sources",
    "markdown_table",
    "normalise_name",
    "peak_flops",
    "precision_column",
]
