from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run from the repository root, so messages show repository-relative paths."""
    monkeypatch.chdir(REPO)
    return REPO
