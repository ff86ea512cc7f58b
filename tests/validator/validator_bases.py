"""Compliant submissions generated once per session and copied per test (the validator tests' base cases).

A module of its own, not conftest.py: tests of several folders import helpers, and each folder's
conftest.py is imported under the one name `conftest`.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from make_submission import Options, make_submission

MULTI = {"profile": "official"}


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
