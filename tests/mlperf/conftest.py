"""Fixtures of the MLPerf import tests: the real corpus imported once, and writable copies of its organisations."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from mlperf_support import SMC, Imported, corpus, tree_digest

from specbench.mlperf import import_results


@pytest.fixture(scope="session")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Imported:
    """The whole corpus imported once, with the corpus hashed before and after."""
    root = corpus()
    before = tree_digest(root)
    out = tmp_path_factory.mktemp("imported")
    outcome = import_results(root, out)
    return Imported(outcome, out, before, tree_digest(root))


@pytest.fixture
def smc_tree(tmp_path: Path) -> Path:
    """A writable copy of the SMC organisation (8x H100 with node power logs) to mutate."""
    copy = tmp_path / "src" / "v4.0" / "smc-dc-power"
    shutil.copytree(corpus() / SMC, copy)
    return copy


@pytest.fixture
def gaudi_tree(tmp_path: Path) -> Path:
    """A writable copy of the Gaudi2 organisation (five clean runs, no power logs) to mutate."""
    copy = tmp_path / "src" / "v3.1" / "Intel-HabanaLabs"
    shutil.copytree(corpus() / "v3.1" / "Intel-HabanaLabs", copy)
    return copy
