"""One quick CPU measurement shared by the roofline tests (a few seconds on 2 cores)."""

from __future__ import annotations

import pytest
from roofline_fixtures import NO_METER

from specbench.power import NullMeter
from specbench.roofline import Roofline, default_config, measure


@pytest.fixture(scope="session")
def cpu_roofline() -> Roofline:
    """fp32 and bf16 run on a CPU; tf32, fp16 and fp8 are asked for so that their skips are recorded."""
    config = default_config("cpu", "quick", threads=1, precisions=("fp32", "tf32", "bf16", "fp16", "fp8"))
    return measure(config, [NullMeter(NO_METER)])
