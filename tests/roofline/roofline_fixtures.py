"""Paths and names shared by the roofline tests (a unique module name: tests/conftest.py is also a conftest)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CPU_SUBMISSION = REPO / "submissions" / "specbench" / "cpu-2core"
H200_SUBMISSION = REPO / "submissions" / "specbench" / "h200"
H200_ROOFLINE = REPO / "benchmarks" / "results" / "roofline_h200.json"
NO_METER = "no power meter in this test"
