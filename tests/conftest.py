"""Fixtures shared by all tests, and the `needs` marker that lets the suite run on the core install.

A test that imports a package only the `run` extra installs (torch, torchvision, transformers,
mlperf-logging, matplotlib, h5py, and numpy and Pillow that come with them) is marked
`pytest.mark.needs("torch", ...)`, per test or for a whole module (`pytestmark`). Where one of the
packages is missing, as with `pip install -e .[dev]` alone, the test is skipped with one reason that
names the packages. A module marked as a whole is read, not imported, to find its marker, so its
top-level `import torch` never runs there; an import error of a module that is not marked still fails.

A test that runs long says so on the terminal as it goes (`LongTestNotices`), and the summary at the end groups
the skipped tests by what they need and says how to get it (`support.skips.SKIP_NEEDS`).
"""

from __future__ import annotations

import ast
import importlib.util
import os
import threading
import time
from collections import Counter
from collections.abc import Generator, Iterable, Iterator
from functools import cache
from pathlib import Path

import pytest
from support.skips import needs_reason, skip_need, skip_reason

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run from the repository root, so messages show repository-relative paths."""
    monkeypatch.chdir(REPO)
    return REPO


@pytest.fixture(scope="session")
def mlperf_resnet50_smoke(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real run of mlperf-resnet50's smoke profile on the CPU (LARS, no power meter), trained once for every test
    that reads it (tests/test_execute.py, tests/mlperf/test_mlperf_logs.py): its submission folder acme/cpu-box."""
    from specbench.cli import main

    out = tmp_path_factory.mktemp("mlperf-resnet50-smoke") / "acme" / "cpu-box"
    seed = "2"  # measured: benchmarks/results/smoke_seeds/mlperf-resnet50.json (20 of 20 seeds reach the target)
    args = ["execute", "mlperf-resnet50", "--profile", "smoke", "--runs", "1", "--seed", seed, "--power", "none"]
    assert main([*args, "--device", "cpu", "--out", str(out)]) == 0
    return out


@cache
def installed(package: str) -> bool:
    return importlib.util.find_spec(package) is not None


def missing(packages: Iterable[str]) -> list[str]:
    return [name for name in dict.fromkeys(packages) if not installed(name)]


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


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The skipped tests counted by what they need, with how to get it (above pytest's short summary)."""
    needs = Counter(skip_need(skip_reason(report)) for report in terminalreporter.stats.get("skipped", []))
    if not needs:
        return
    terminalreporter.write_sep("=", "what the skipped tests need")
    for (need, how), count in sorted(needs.items(), key=lambda item: -item[1]):
        terminalreporter.write_line(f"{count:4d} skipped: {need}" + (f"; to run them: {how}" if how else ""))


class LongTestNotices:
    """A line on the terminal when a test has run 30 s, and every minute after, naming it.

    The line is written to a copy of the terminal's file descriptor taken at session start (when pytest's own
    capture is suspended), from a thread that never touches the capture, so a test's captured output stays its own.
    Under pytest-xdist the controller runs it: the workers' `logstart` and `logfinish` reach it, several at a time.
    """

    FIRST_S = 30.0
    EVERY_S = 60.0

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.lock = threading.Lock()
        self.running: dict[str, tuple[float, float]] = {}
        """nodeid -> (start, when its next notice is due), both on the monotonic clock."""
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="long-test-notices", daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        while not self.stop.wait(1.0):
            now, lines = time.monotonic(), []
            with self.lock:
                for nodeid, (start, due) in self.running.items():
                    if now >= due:
                        self.running[nodeid] = (start, due + self.EVERY_S)
                        lines.append(f"\n    ... {nodeid} has run {now - start:.0f} s\n")
            try:
                for line in lines:
                    os.write(self.fd, line.encode())
            except OSError:
                return

    @pytest.hookimpl
    def pytest_runtest_logstart(self, nodeid: str) -> None:
        now = time.monotonic()
        with self.lock:
            self.running[nodeid] = (now, now + self.FIRST_S)

    @pytest.hookimpl
    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        with self.lock:
            self.running.pop(nodeid, None)

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        os.close(self.fd)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Notices of long tests where this process writes to the terminal (not in a pytest-xdist worker, whose file
    descriptor 1 may carry its link to the controller)."""
    config = session.config
    if config.pluginmanager.has_plugin("terminalreporter") and not hasattr(config, "workerinput"):
        notices = LongTestNotices(os.dup(1))
        config.pluginmanager.register(notices, "long-test-notices")
        config.add_cleanup(notices.close)
