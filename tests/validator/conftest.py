"""Fixtures of the validator tests: compliant submissions generated once per session, copied per test."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from make_submission import Options, make_submission


class Bases:
    """Generates each kind of compliant submission once, and hands out fresh copies of it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.made: dict[str, Path] = {}

    def root(self, **changes: Any) -> Path:
        key = repr(sorted(changes.items()))
        if key not in self.made:
            out = self.folder / f"base{len(self.made)}"
            self.made[key] = make_submission(out, Options(), **changes)
        return self.made[key]

    def copy(self, into: Path, **changes: Any) -> Path:
        """A fresh ORG/SYSTEM copy under `into`; keeps the ORG and SYSTEM folder names."""
        root = self.root(**changes)
        target = into / root.parent.name / root.name
        shutil.copytree(root, target, symlinks=True)
        return target


@pytest.fixture(scope="session")
def bases(tmp_path_factory: pytest.TempPathFactory) -> Bases:
    return Bases(tmp_path_factory.mktemp("bases"))


@pytest.fixture
def smoke(bases: Bases, tmp_path: Path) -> Path:
    """resnet50 at the smoke profile: one run, two GPUs at 10 Hz, power measured (not required)."""
    return bases.copy(tmp_path)


MULTI = {"profile": "official"}


@pytest.fixture
def multi(bases: Bases, tmp_path: Path) -> Path:
    """resnet50 at the official profile: five runs, olympic mean, power required."""
    return bases.copy(tmp_path, **MULTI)
