"""The README's two quick-start commands pass in either order: the demo goes where no test looks.

The main-job command writes a submission under `submissions/`; the tests read "every committed submission"
through `support.committed`, which leaves out the git-ignored folders there. These tests check both halves
of that: where the README's command (and `execute` without `--out`) writes, that the helper leaves such a
folder out, and that no test reaches the repository's `submissions/` but through the helper.
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

from support.committed import REPO, SUBMISSIONS, committed, committed_submissions, ignored_folders, is_ignored

from specbench.run.options import default_out
from specbench.validator import discover

FENCE = re.compile(r"```bash\n(.*?)\n```", re.DOTALL)
SUBMISSIONS_PATH = re.compile(
    r"""(REPO|repo|parents\[\d\]|parent\.parent)\s*/\s*["']submissions["']|glob\(["']submissions"""
)
"""A path to the repository's submissions/ built by hand, instead of through support/committed.py."""


def quick_start_commands() -> list[list[str]]:
    """The command lines of the README's quick-start blocks, split at `&&`, each as its words."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    words = [word for block in FENCE.findall(quick_start) for word in [*shlex.split(block), "&&"]]
    commands: list[list[str]] = [[]]
    for word in words:
        if word == "&&":
            commands.append([])
        else:
            commands[-1].append(word)
    return [command for command in commands if command]


def execute_outputs(commands: list[list[str]]) -> list[Path]:
    """Where each `specbench execute` of the commands writes: its `--out`/`-o`, else execute's default."""
    outputs = []
    for command in commands:
        if command[:2] == ["specbench", "execute"]:
            named = [command[i + 1] for i, word in enumerate(command[:-1]) if word in ("--out", "-o")]
            outputs.append(Path(named[-1]) if named else default_out())
    return outputs


def test_the_quick_start_main_job_writes_where_the_tests_do_not_look() -> None:
    commands = quick_start_commands()
    assert ["python", "-m", "pytest", "-q"] in commands  # the test command, read from the same section
    (demo,) = execute_outputs(commands)
    assert demo == Path("submissions/local/demo")
    assert is_ignored(REPO / demo) and is_ignored(REPO / default_out())
    assert [c for c in commands if c[:2] == ["specbench", "validate"]] == [["specbench", "validate", str(demo)]]
    assert ignored_folders() == [SUBMISSIONS / "local"]


def test_a_run_under_submissions_local_is_no_committed_submission(tmp_path: Path) -> None:
    """The layout after the main-job command (and a plain `execute`): the helper finds only what git holds."""
    shutil.copy(REPO / ".gitignore", tmp_path / ".gitignore")
    honest = tmp_path / "submissions" / "specbench" / "cpu-2core"
    shutil.copytree(committed("cpu-2core"), honest)
    demo, plain = tmp_path / "submissions" / "local" / "demo", tmp_path / "submissions" / "local" / "some-host"
    for run in (demo, plain):
        shutil.copytree(committed("cpu-2core"), run)
    assert discover(tmp_path / "submissions") == [demo, plain, honest]  # the runs are submissions a scan finds
    assert committed_submissions(tmp_path) == [honest]
    assert is_ignored(demo, tmp_path) and not is_ignored(honest, tmp_path)


def test_the_committed_submissions_are_the_repositorys_own() -> None:
    found = committed_submissions()
    assert len(found) >= 10 and all(path.parent == committed() for path in found)


def test_no_test_reads_the_repositorys_submissions_but_through_the_helper() -> None:
    tests = REPO / "tests"
    helper = tests / "support" / "committed.py"
    offenders = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in sorted(tests.rglob("*.py"))
        if path not in (helper, Path(__file__))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if SUBMISSIONS_PATH.search(line)
    ]
    assert offenders == []
