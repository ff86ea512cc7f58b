"""Crash-safe files: atomic writes (temporary file, then rename), and manifest.json's writer (its model, which the
validator reads it with, is formats/manifest.py; this module loads no pydantic, so commands start fast)."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Literal

MANIFEST = "manifest.json"
MANIFEST_FORMAT_VERSION: Literal[1] = 1
SIGNATURE_FILE = MANIFEST + ".sig"
"""`specbench sign` writes it next to the manifest; the manifest never lists it."""


def manifest_data(files: dict[str, tuple[str, int]]) -> dict[str, Any]:
    """manifest.json's content for (sha256, size) by relative path, in path order: what every writer writes, in
    the form formats/manifest.py's model reads (a test holds the two together)."""
    entries = {rel: {"sha256": sha, "bytes": size} for rel, (sha, size) in sorted(files.items())}
    return {"format_version": MANIFEST_FORMAT_VERSION, "algorithm": "sha256", "files": entries}


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write `data` to `path` so readers see either the old file or the whole new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, data: Any) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, allow_nan=False) + "\n")


def yaml_text(data: Any) -> str:
    """Plain block-style YAML of JSON-like data."""
    import io

    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.width = 4096
    yaml.sort_base_mapping_type_on_output = False  # type: ignore[attr-defined,assignment]
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


def atomic_write_yaml(path: Path, data: Any) -> None:
    atomic_write_text(path, yaml_text(data))


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_manifest(root: Path) -> Path:
    """Hash every regular file under `root` (but the manifest and temporary files) into manifest.json."""
    files: dict[str, tuple[str, int]] = {}
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.is_symlink() or path.name == MANIFEST or path.name.endswith(".tmp"):
            continue
        if path.parent == root and path.name == SIGNATURE_FILE:
            continue
        rel = path.relative_to(root).as_posix()
        files[rel] = (sha256_file(path), path.stat().st_size)
    target = root / MANIFEST
    atomic_write_json(target, manifest_data(files))
    return target
