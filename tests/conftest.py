"""Fixtures shared by all tests, and the `needs` marker that lets the suite run on the core install.

A test that imports a package only the `run` extra installs (torch, torchvision, transformers,
mlperf-logging, matplotlib, h5py, and numpy and Pillow that come with them) is marked
`pytest.mark.needs("torch", ...)`, per test or for a whole module (`pytestmark`). Where one of the
packages is missing, as with `pip install -e .[dev]` alone, the test is skipped with one reason that
names the packages. A module marked as a whole is read, not imported, to find its marker, so its
top-level `import torch` never runs there; an import error of a module that is not marked still fails.
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Generator, Iterable, Iterator
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
RUN_EXTRA = "pip install -e '.[run]'"


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run from the repository root, so messages show repository-relative paths."""
    monkeypatch.chdir(REPO)
    return REPO


@cache
def installed(package: str) -> bool:
    return importlib.util.find_spec(package) is not None


def missing(packages: Iterable[str]) -> list[str]:
    return [name for name in dict.fromkeys(packages) if not installed(name)]


def needs_reason(absent: list[str]) -> str:
    return f"needs {', '.join(absent)}, which this install lacks (the run extra: {RUN_EXTRA})"


def _marked_needs(node: ast.expr) -> Iterator[str]:
    """The string arguments of every `....needs(...)` call in a `pytestmark` value."""
    for call in ast.walk(node):
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "needs":
            yield from (arg.value for arg in call.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str))


def module_needs(path: Path) -> list[str]:
    """The packages a test module's top-level `pytestmark` names in `pytest.mark.needs(...)`, read from its source."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except SyntaxError:
        return []  # importing it reports the error where it is
    return [
        package
        for statement in tree.body
        if isinstance(statement, ast.Assign)
        and any(isinstance(target, ast.Name) and target.id == "pytestmark" for target in statement.targets)
        for package in _marked_needs(statement.value)
    ]


class ModuleWithoutItsPackages(pytest.Module):
    """A test module marked `needs` whose packages are missing: skipped whole, never imported."""

    def collect(self) -> list[pytest.Item | pytest.Collector]:
        pytest.skip(needs_reason(missing(module_needs(self.path))), allow_module_level=True)


def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    if missing(module_needs(module_path)):
        return ModuleWithoutItsPackages.from_parent(parent, path=module_path)
    return None


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """A skipped module is reported at its own path, not at the line of this file that skipped it."""
    report = yield
    if isinstance(collector, ModuleWithoutItsPackages) and report.skipped and isinstance(report.longrepr, tuple):
        report.longrepr = (str(collector.path), None, report.longrepr[2])
    return report


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked `needs` (here or by a conftest below) skip where a package is missing."""
    for item in items:
        absent = missing(package for mark in item.iter_markers("needs") for package in mark.args)
        if absent:
            item.add_marker(pytest.mark.skip(reason=needs_reason(absent)))
