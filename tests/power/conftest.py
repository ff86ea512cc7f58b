"""Fixtures of the power tests; the fakes themselves live in power_fakes.py."""

from __future__ import annotations

import pytest
from power_fakes import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()
