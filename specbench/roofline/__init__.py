"""Roofline: measured compute and memory ceilings of one device, and where workloads sit under them.

HPC AI500 V2 bounds a system with GEMM and convolution micro-benchmarks drawn as a roofline;
this package measures them (GEMM per precision over a size sweep, ResNet-50's convolutions in
three directions, device-to-device copy bandwidth, energy over a sustained window of each),
writes a versioned `roofline.json`, places submitted runs by an analytical byte count, and plots.
torch and matplotlib load only when measuring and plotting:

    config = default_config("cuda")                  # or "cpu"; profile "quick" for CI
    roofline = measure(config, open_meters("auto"))
    roofline = place(roofline, ["submissions/specbench/h200"])
    write_roofline(roofline, "out/roofline.json"); save_plots(roofline, "out")
"""

from __future__ import annotations

from specbench.roofline.bytemodels import BYTE_MODELS
from specbench.roofline.config import PROFILES, MeasureConfig, default_config, resolve_device
from specbench.roofline.format import (
    FORMAT,
    FORMAT_VERSION,
    PRECISIONS,
    Roofline,
    WorkloadPoint,
    parse_roofline,
    read_roofline,
    write_roofline,
)
from specbench.roofline.measure import measure
from specbench.roofline.plot import render, save_plots
from specbench.roofline.report import render_text
from specbench.roofline.workloads import place

__all__ = [
    "BYTE_MODELS",
    "FORMAT",
    "FORMAT_VERSION",
    "PRECISIONS",
    "PROFILES",
    "MeasureConfig",
    "Roofline",
    "WorkloadPoint",
    "default_config",
    "measure",
    "parse_roofline",
    "place",
    "read_roofline",
    "render",
    "render_text",
    "resolve_device",
    "save_plots",
    "write_roofline",
]
