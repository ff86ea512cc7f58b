"""A submission folder written in one go into a staging folder, each file hashed as it is written.

The staging folder is moved into place whole when it is complete (convert.py), so its files need
no temporary names or syncs of their own; manifest.json is built from what was written, in the
format `specbench.executors.files.write_manifest` gives it. YAML files are written by a small
emitter for plain data (block mappings and sequences, JSON-quoted strings), which any YAML 1.2
reader, and the validator's, reads back to the same values.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from pathlib import Path
from typing import Any

from specbench.executors.files import MANIFEST, MANIFEST_FORMAT_VERSION

_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ud800-\udfff]")
"""Characters a YAML reader refuses or folds inside double quotes, written as escapes."""


class Staging:
    """Files under `root`, created once each (never overwritten), with their sha256 and size."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files: dict[str, dict[str, Any]] = {}
        self._dirs: set[Path] = set()

    def write(self, rel: str, data: bytes) -> None:
        path = self.root / rel
        self._mkdir(path.parent)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o644)
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), 0o644)
            handle.write(data)
        self.files[rel] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}

    def text(self, rel: str, text: str) -> None:
        self.write(rel, text.encode("utf-8"))

    def json(self, rel: str, data: Any, indent: int | None = 2) -> None:
        self.text(rel, json.dumps(data, indent=indent, allow_nan=False) + "\n")

    def yaml(self, rel: str, data: dict[str, Any]) -> None:
        self.text(rel, yaml_text(data))

    def manifest(self) -> None:
        """manifest.json: the sha256 and size of every file written, by path."""
        files = {rel: self.files[rel] for rel in sorted(self.files)}
        self.json(MANIFEST, {"format_version": MANIFEST_FORMAT_VERSION, "algorithm": "sha256", "files": files})

    def _mkdir(self, folder: Path) -> None:
        if folder in self._dirs:
            return
        folder.mkdir(parents=True, exist_ok=True)
        for made in (folder, *folder.parents):
            if made == self.root.parent or made in self._dirs:
                break
            made.chmod(0o755)
            self._dirs.add(made)


def yaml_text(data: dict[str, Any]) -> str:
    """Block-style YAML of JSON-like data (dicts with string keys, lists, str, int, float, bool, None)."""
    if not data:
        return "{}\n"
    return "".join(_mapping(data, 0))


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} cannot be written: only finite numbers are allowed")
        return repr(value)
    if isinstance(value, str):
        return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(value, ensure_ascii=False))
    raise TypeError(f"{type(value).__name__} cannot be written as YAML here")


def _node(value: Any, indent: int) -> list[str]:
    """A value after 'key:' or '-': inline for scalars and empty collections, else on the next lines."""
    if isinstance(value, dict) and value:
        return ["\n", *_mapping(value, indent + 2)]
    if isinstance(value, list) and value:
        return ["\n", *_sequence(value, indent + 2)]
    if isinstance(value, dict):
        return [" {}\n"]
    if isinstance(value, list):
        return [" []\n"]
    return [f" {_scalar(value)}\n"]


def _mapping(data: dict[str, Any], indent: int) -> list[str]:
    pad = " " * indent
    out: list[str] = []
    for key, value in data.items():
        if not isinstance(key, str):
            raise TypeError(f"mapping keys must be strings, found {type(key).__name__}")
        out.append(f"{pad}{_scalar(key)}:")
        out.extend(_node(value, indent))
    return out


def _sequence(items: list[Any], indent: int) -> list[str]:
    pad = " " * indent
    out: list[str] = []
    for item in items:
        out.append(f"{pad}-")
        out.extend(_node(item, indent))
    return out
