"""specbench: declarative benchmark specs, executors, power measurement, validation and scoring of AI systems."""

from __future__ import annotations

__version__ = "0.1.0"
