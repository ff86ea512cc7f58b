"""Parsed copies of the built-in YAML files (specs, rule sets, the device table), read with the C JSON decoder.

ruamel.yaml's pure-Python parser takes about 0.1 s for the files one MLPerf import reads. Each
copy holds what `parse_yaml` gives for one file (its data and the position of every value) and
is named by the sha256 of the YAML bytes it was made from, so it is used only for those very
bytes: a built-in file that changed, and any file not built in, goes through `parse_yaml`.
tests/test_parsed_yaml.py fails while a copy is missing or stale;
`python -c "from specbench.spec.parsed import write_all; write_all()"` writes them again.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from specbench.spec import builtin
from specbench.spec.yamlio import Document, parse_yaml, read_text

PARSED_DIR = Path(__file__).resolve().parent.parent / "_parsed"
FORMAT = "specbench.parsed-yaml"
FORMAT_VERSION = 1


def builtin_yaml_files() -> list[Path]:
    """Every YAML file shipped with specbench: the specs (current and released), the rule sets (MLPerf's typed rules
    included), the device table and the best-known table."""
    root = builtin.data_root()
    files = [*builtin.spec_paths(), *builtin.released_paths(), *sorted((root / "rules").glob("*.yaml"))]
    files += sorted((root / "rules" / "mlperf").glob("*.yaml"))
    return [*files, builtin.DEVICES_FILE, builtin.BEST_KNOWN_FILE]


def is_builtin(path: Path) -> bool:
    """Whether `path` is one of the YAML files shipped with specbench (those of builtin_yaml_files())."""
    resolved = path.resolve()
    specs = builtin.data_root().resolve() / "specs"
    folders = (specs, specs / builtin.RELEASED, specs.parent / "rules", specs.parent / "rules" / "mlperf")
    return resolved.suffix == ".yaml" and (
        resolved.parent in folders or resolved in (builtin.DEVICES_FILE, builtin.BEST_KNOWN_FILE)
    )


def load_builtin_yaml(path: Path) -> Document:
    """A built-in YAML file as `load_yaml` gives it, from its parsed copy when one was made from these bytes."""
    text = read_text(path)
    copy = PARSED_DIR / f"{_digest(text)}.json"
    try:
        stored = json.loads(copy.read_bytes())
    except (OSError, ValueError):
        return parse_yaml(text, str(path))
    if not isinstance(stored, dict) or (stored.get("format"), stored.get("format_version")) != (FORMAT, FORMAT_VERSION):
        return parse_yaml(text, str(path))
    file = str(path)
    positions = {tuple(where): (file, line, column) for where, line, column in stored["positions"]}
    return Document(stored["data"], file, positions)


def render(path: Path) -> tuple[str, str]:
    """(file name, text) of the parsed copy of one YAML file."""
    text = read_text(path)
    doc = parse_yaml(text, str(path))
    content: dict[str, Any] = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "source": _label(path),
        "source_sha256": _digest(text),
        "data": doc.data,
        "positions": [[list(where), line, column] for where, (_, line, column) in doc.positions.items()],
    }
    return f"{_digest(text)}.json", json.dumps(content, separators=(",", ":")) + "\n"


def write_all(folder: Path = PARSED_DIR) -> list[Path]:
    """Write the parsed copy of every built-in YAML file into `folder`, removing copies no file has any more."""
    folder.mkdir(parents=True, exist_ok=True)
    wanted = dict(render(p) for p in builtin_yaml_files())
    for old in folder.glob("*.json"):
        if old.name not in wanted:
            old.unlink()
    written = []
    for name, text in sorted(wanted.items()):
        target = folder / name
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
        written.append(target)
    return written


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _label(path: Path) -> str:
    resolved = path.resolve()
    for root in (builtin.data_root(), Path(__file__).resolve().parent.parent):
        if resolved.is_relative_to(root.resolve()):
            return resolved.relative_to(root.resolve()).as_posix()
    return path.name
