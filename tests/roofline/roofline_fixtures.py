"""Paths and names shared by the roofline tests (a unique module name: tests/conftest.py is also a conftest)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from support.committed import committed

REPO = Path(__file__).resolve().parents[2]
CPU_SUBMISSION = committed("cpu-2core")
H200_SUBMISSION = committed("h200")
H200_ROOFLINE = REPO / "benchmarks" / "results" / "roofline_h200.json"
NO_METER = "no power meter in this test"
LLM_SMOKE = REPO / "tests" / "scoring" / "data" / "local" / "llm-smoke"
"""A real llm-gpt smoke run on a 2-core CPU (tests/scoring/data/README.md): its precision is a hyperparameter."""
BUILT_IN = ("resnet50", "mlperf-resnet50", "caraml-resnet50", "llm-gpt", "extreme-weather")
MAKER = REPO / "tests" / "validator" / "make_submission.py"


def make_submission(out: Path, **options: Any) -> Path:
    """The validator tests' generator of compliant submissions (tests/validator/make_submission.py)."""
    if "make_submission" not in sys.modules:
        spec = importlib.util.spec_from_file_location("make_submission", MAKER)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["make_submission"] = module
        spec.loader.exec_module(module)
    folder: Path = sys.modules["make_submission"].make_submission(out, **options)
    return folder
