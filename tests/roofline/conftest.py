"""One quick CPU measurement shared by the roofline tests (a few seconds on 2 cores)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from roofline_fixtures import CPU_SUBMISSION, NO_METER

from specbench.power import NullMeter
from specbench.roofline import Roofline, default_config, measure


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests of a measured roofline need torch: they are marked, and skip on the core install (tests/conftest.py)."""
    for item in items:
        if "cpu_roofline" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.needs("torch"))


@pytest.fixture(scope="session")
def cpu_roofline() -> Roofline:
    """fp32 and bf16 run on a CPU; tf32, fp16 and fp8 are asked for so that their skips are recorded."""
    config = default_config("cpu", "quick", threads=1, precisions=("fp32", "tf32", "bf16", "fp16", "fp8"))
    return measure(config, [NullMeter(NO_METER)])


@pytest.fixture
def local_cpu_submission(cpu_roofline: Roofline, tmp_path: Path) -> Path:
    """The CPU submission as if it had run on this machine's CPU (its system.yaml names this CPU model)."""
    folder = tmp_path / "specbench" / "cpu-2core"
    shutil.copytree(CPU_SUBMISSION, folder)
    system = folder / "system.yaml"
    model = json.dumps(cpu_roofline.device.cpu_model)
    text, count = re.subn(r"(?m)^(\s+cpu_model:).*$", lambda m: f"{m.group(1)} {model}", system.read_text())
    assert count == 1
    system.write_text(text)
    return folder
