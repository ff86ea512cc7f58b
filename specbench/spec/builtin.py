"""Where the built-in specs (`specs/`) and rule sets (`rules/`) live, in a checkout or an installed wheel."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from specbench.errors import UsageError
from specbench.registry import did_you_mean

_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


DEVICES_FILE = Path(__file__).resolve().parent.parent / "physics" / "devices.yaml"
"""The device table (specbench.physics reads it); named here so that the parsed copies find it without physics."""
BEST_KNOWN_FILE = DEVICES_FILE.with_name("best_known.yaml")
"""The best-known results table (specbench.physics.best_known reads it), named here for the same reason."""


@cache
def data_root() -> Path:
    """The folder holding `specs/` and `rules/`: the wheel's copy, else the source checkout."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "_builtin", package.parent):
        if (candidate / "specs").is_dir() and (candidate / "rules").is_dir():
            return candidate
    raise UsageError(f"built-in specs not found next to {package}; the installation is incomplete")


RELEASED = "released"
"""Folder of `specs/` holding earlier, frozen versions of built-in specs as `ID-VERSION.yaml`."""


def home_folder(path: Path) -> Path:
    """The folder relative paths in a spec file start from: `specs/` for a released copy, else the file's own.

    A released copy is the spec file verbatim, so `extends: ../rules/hpcai500.yaml` in it still means
    the rule set beside `specs/`, as when it was released.
    """
    folder = path.resolve().parent
    if folder == (data_root() / "specs" / RELEASED).resolve():
        return folder.parent
    return folder


def spec_paths() -> list[Path]:
    """The current version of every built-in spec."""
    return sorted((data_root() / "specs").glob("*.yaml"))


def released_paths(spec_id: str | None = None) -> list[Path]:
    """Earlier versions of built-in specs (all, or those of one id), kept so old submissions still validate."""
    pattern = f"{spec_id}-*.yaml" if spec_id is not None else "*.yaml"
    return sorted((data_root() / "specs" / RELEASED).glob(pattern))


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
    """A spec file path: `name` itself when it is a file, else the built-in spec with that id.

    `ID@VERSION` names an earlier, released version of a built-in spec.
    """
    path = Path(name)
    if path.is_file():
        return path
    if "@" in name:
        return _find_released(*name.split("@", 1))
    builtin = data_root() / "specs" / f"{name}.yaml"
    if _ID.match(name) and builtin.is_file():
        return builtin
    known = spec_ids()
    raise UsageError(
        f"no spec file {name!r} and no built-in spec with that id{did_you_mean(name, known)}; built-in: {', '.join(known)}"
    )


def _find_released(spec_id: str, version: str) -> Path:
    current = data_root() / "specs" / f"{spec_id}.yaml"
    released = data_root() / "specs" / RELEASED / f"{spec_id}-{version}.yaml"
    if _ID.match(spec_id) and _ID.match(version) and released.is_file():
        return released
    if _ID.match(spec_id) and current.is_file():
        versions = [p.stem[len(spec_id) + 1 :] for p in released_paths(spec_id)]
        raise UsageError(
            f"built-in spec {spec_id!r} has no released version {version!r}; released: "
            f"{', '.join(versions) or 'none'} (the current version is `{spec_id}`)"
        )
    known = spec_ids()
    raise UsageError(f"no built-in spec {spec_id!r}{did_you_mean(spec_id, known)}; built-in: {', '.join(known)}")
