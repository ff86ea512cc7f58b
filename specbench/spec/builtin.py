"""Where the built-in specs (`specs/`) and rule sets (`rules/`) live, in a checkout or an installed wheel."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from specbench.errors import UsageError
from specbench.registry import did_you_mean

_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


@cache
def data_root() -> Path:
    """The folder holding `specs/` and `rules/`: the wheel's copy, else the source checkout."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "_builtin", package.parent):
        if (candidate / "specs").is_dir() and (candidate / "rules").is_dir():
            return candidate
    raise UsageError(f"built-in specs not found next to {package}; the installation is incomplete")


def spec_paths() -> list[Path]:
    return sorted((data_root() / "specs").glob("*.yaml"))


def spec_ids() -> list[str]:
    return [p.stem for p in spec_paths()]


def extendable_ids() -> list[str]:
    return sorted({p.stem for p in (data_root() / "rules").glob("*.yaml")} | set(spec_ids()))


def find_extendable(name: str) -> Path | None:
    """A built-in rule set or spec named by id, or None when `name` is not such an id."""
    if not _ID.match(name) or name.endswith(".yaml"):
        return None
    for folder in ("rules", "specs"):
        path = data_root() / folder / f"{name}.yaml"
        if path.is_file():
            return path.resolve()
    return None


def find_spec(name: str) -> Path:
    """A spec file path: `name` itself when it is a file, else the built-in spec with that id."""
    path = Path(name)
    if path.is_file():
        return path
    builtin = data_root() / "specs" / f"{name}.yaml"
    if _ID.match(name) and builtin.is_file():
        return builtin
    known = spec_ids()
    raise UsageError(
        f"no spec file {name!r} and no built-in spec with that id{did_you_mean(name, known)}; built-in: {', '.join(known)}"
    )
