"""Fixtures of the validator tests: compliant submissions generated once per session, copied per test."""

from __future__ import annotations

from pathlib import Path

import pytest
from validator_bases import MULTI, Bases


@pytest.fixture(scope="session")
def bases(tmp_path_factory: pytest.TempPathFactory) -> Bases:
    return Bases(tmp_path_factory.mktemp("bases"))


@pytest.fixture
def smoke(bases: Bases, tmp_path: Path) -> Path:
    """resnet50 at the smoke profile: one run, two GPUs at 10 Hz, power measured (not required)."""
    return bases.copy(tmp_path)


@pytest.fixture
def multi(bases: Bases, tmp_path: Path) -> Path:
    """resnet50 at the official profile: five runs, olympic mean, power required."""
    return bases.copy(tmp_path, **MULTI)
