"""The committed submissions: what `submissions/` holds in git, never the git-ignored folders that runs write.

The README's quick start writes `submissions/local/demo`, and `specbench execute` without `--out` writes
`submissions/local/HOST`; `.gitignore` keeps `submissions/local/` out of git. A test that reads "every
committed submission" goes through `committed_submissions()` (or names one with `committed(NAME)`), so
that a contributor's own runs there never change what the suite sees.
"""

from __future__ import annotations

from pathlib import Path

from specbench.validator import discover

REPO = Path(__file__).resolve().parents[2]
SUBMISSIONS = REPO / "submissions"
ORG = "specbench"
"""The organisation of specbench's own committed runs (submissions/specbench/SYSTEM)."""


def committed(*parts: str) -> Path:
    """A path inside specbench's own committed submissions: `committed("h200", "system.yaml")`."""
    return SUBMISSIONS.joinpath(ORG, *parts)


def ignored_folders(repo: Path = REPO) -> list[Path]:
    """The folders under `submissions/` that the repository's `.gitignore` names (`submissions/local/`)."""
    lines = (line.strip() for line in (repo / ".gitignore").read_text(encoding="utf-8").splitlines())
    return [repo / line.strip("/") for line in lines if line.lstrip("/").startswith("submissions/")]


def is_ignored(path: Path, repo: Path = REPO) -> bool:
    """Whether a path lies in one of the git-ignored folders under `submissions/`."""
    return any(path.resolve().is_relative_to(folder.resolve()) for folder in ignored_folders(repo))


def committed_submissions(repo: Path = REPO) -> list[Path]:
    """Every submission folder (ORG/SYSTEM) under `submissions/`, less those in git-ignored folders."""
    return [path for path in discover(repo / "submissions") if not is_ignored(path, repo)]
