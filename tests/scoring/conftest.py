from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest
from support.committed import committed

MAKER = Path(__file__).resolve().parent.parent / "validator" / "make_submission.py"
LLM_SMOKE = Path(__file__).resolve().parent / "data"
"""A real llm-gpt smoke run where no power meter works (data/README.md)."""


def _maker() -> ModuleType:
    if "make_submission" not in sys.modules:
        spec = importlib.util.spec_from_file_location("make_submission", MAKER)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["make_submission"] = module
        spec.loader.exec_module(module)
    return sys.modules["make_submission"]


@pytest.fixture(scope="session")
def maker() -> ModuleType:
    """The validator tests' submission generator (tests/validator/make_submission.py)."""
    return _maker()


@pytest.fixture(scope="session")
def submissions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five generated submissions: two ranked throughput systems, one without power, a smoke and an official run."""
    make = _maker().make_submission
    root = tmp_path_factory.mktemp("submissions")
    make(root, spec="caraml-resnet50", profile="official", org="acme", system="fast", throughput_s=10.0)
    make(root, spec="caraml-resnet50", profile="official", org="acme", system="slow", throughput_s=20.0)
    make(root, spec="caraml-resnet50", profile="official", org="acme", system="dark", power=False)
    make(root, spec="resnet50@1.0.0", profile="smoke", org="beta", system="box")
    make(root, spec="resnet50@1.0.0", profile="official", org="beta", system="official")
    return root


@pytest.fixture(scope="session")
def everything(tmp_path_factory: pytest.TempPathFactory, submissions: Path) -> Path:
    """The committed submissions, the real llm-gpt smoke run and the generated ones, under one root."""
    root = tmp_path_factory.mktemp("everything")
    shutil.copytree(committed(), root / "specbench")
    shutil.copytree(LLM_SMOKE / "local", root / "local")
    for org in ("acme", "beta"):
        shutil.copytree(submissions / org, root / org)
    return root
