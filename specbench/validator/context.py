"""What every check of one submission shares: its files, the findings so far, and the known specs."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from specbench.errors import InputError, SpecbenchError
from specbench.formats.mlperf_import import ImportRecord
from specbench.spec.builtin import released_paths, spec_paths
from specbench.spec.loader import LoadedSpec, load_spec, load_spec_cached, spec_digest
from specbench.validator.documents import Loaded
from specbench.validator.files import Limits, Tree
from specbench.validator.findings import Findings


@cache
def _load_cached(path: str, mtime_ns: int) -> tuple[LoadedSpec, str] | None:
    try:
        loaded = load_spec_cached(path)
    except (InputError, SpecbenchError, OSError):
        return None
    return loaded, spec_digest(loaded.spec)


def load_with_digest(path: Path) -> tuple[LoadedSpec, str] | None:
    """A spec file and its digest, cached per process by path and modification time."""
    try:
        mtime = os.stat(path).st_mtime_ns
    except OSError:
        return None
    return _load_cached(str(path), mtime)


class SpecIndex:
    """Specs a submission may name: the one given with --spec first, then the built-in specs."""

    def __init__(self, extra: list[tuple[LoadedSpec, str]] | None = None) -> None:
        self.extra = list(extra or [])

    @classmethod
    def with_spec(cls, spec: str | Path | None) -> SpecIndex:
        """Index including `spec` (a file or built-in id); raises InputError/UsageError when it is unusable."""
        if spec is None:
            return cls()
        loaded = load_spec(spec)
        return cls([(loaded, spec_digest(loaded.spec))])

    def _builtin(self, spec_id: str | None = None) -> Iterator[tuple[LoadedSpec, str]]:
        """The built-in specs (of one id: its current version, then its released ones), each loaded when reached."""
        paths = spec_paths()
        if spec_id is not None:
            paths = [p for p in paths if p.stem == spec_id]
        for path in [*paths, *released_paths(spec_id)]:
            found = load_with_digest(path)
            if found is not None:
                yield found

    def find(self, spec_id: str, digest: str) -> LoadedSpec | None:
        """The spec with this digest; the spec named `spec_id` is tried before loading every built-in one."""
        for candidates in (lambda: self.extra, lambda: self._builtin(spec_id), self._builtin):
            for loaded, known in candidates():  # lazily: the other built-in specs load only when needed
                if known == digest:
                    return loaded
        return None

    def named(self, spec_id: str) -> list[tuple[LoadedSpec, str]]:
        """Known specs with this id, with their digests (for messages about a digest that matches none)."""
        return [(s, d) for s, d in (*self.extra, *self._builtin(spec_id)) if s.spec.id == spec_id]


@dataclass
class Context:
    tree: Tree
    findings: Findings
    limits: Limits
    specs: SpecIndex
    loaded: dict[str, Loaded] = field(default_factory=dict)
    imported: ImportRecord | None = None
    """import.json of a submission imported from MLPerf results (`specbench import mlperf`), else None."""
    devices: Path | None = None
    """The device facts table given with --devices (same format as specbench/physics/devices.yaml); None: that one."""
