"""The layer contract (pyproject's [tool.importlinter]): packages import downwards only, and no module cycle."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

pytest.importorskip("importlinter", reason="import-linter is in the dev extra")


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """import-linter over the package under `root`, with the project's own contracts."""
    code = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports())"
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )


def test_every_contract_is_kept() -> None:
    done = lint_imports(REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        ("errors.py", "import specbench.commands\n", "Layers import downwards only"),
        (
            "validator/model.py",
            "import typing\nif typing.TYPE_CHECKING:\n    from specbench.scoring import leaderboard\n",
            "Layers import downwards only",
        ),
        ("validator/findings.py", "from specbench.validator import model\n", "No import cycle"),
    ],
)
def test_an_upward_import_or_a_cycle_breaks_the_contract(tmp_path: Path, module: str, line: str, broken: str) -> None:
    shutil.copytree(REPO / "specbench", tmp_path / "specbench", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    target = tmp_path / "specbench" / module
    target.write_text(target.read_text() + "\n" + line)
    done = lint_imports(tmp_path)
    assert done.returncode == 1, done.stdout
    assert f"{broken}" in done.stdout and "BROKEN" in done.stdout
