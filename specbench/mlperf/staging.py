"""A submission folder written in one go into a staging folder, each file hashed as it is written.

The staging folder is moved into place whole when it is complete (convert.py), so its files need
no temporary names or syncs of their own; manifest.json is built from what was written, in the
format `specbench.files.write_manifest` gives it. YAML files are written as indented
JSON, which any YAML 1.2 reader reads back to the same values and the validator reads fast.

With `background=True` a writer thread creates the files (system calls, which leave the GIL) while
the caller goes on converting; `finish()` waits for it and raises what it met, and must come before
the folder is moved or read.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import threading
from pathlib import Path
from typing import Any

from specbench.files import MANIFEST, manifest_data


class Staging:
    """Files under `root`, created once each (never overwritten), with their sha256 and size."""

    def __init__(self, root: Path, *, background: bool = False) -> None:
        self.root = root
        self.files: dict[str, tuple[str, int]] = {}
        self._dirs: set[Path] = set()
        self._queue: queue.SimpleQueue[tuple[Path, bytes] | None] | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        if background:
            self._queue = queue.SimpleQueue()
            self._thread = threading.Thread(target=self._writer, name="specbench-staging", daemon=True)
            self._thread.start()

    def write(self, rel: str, data: bytes, sha256: str | None = None) -> None:
        """Create `rel` holding `data`; `sha256`, where given, is the hex digest of these very bytes, computed before."""
        if rel in self.files:
            raise FileExistsError(f"{self.root / rel}: written twice")
        self.files[rel] = (sha256 or hashlib.sha256(data).hexdigest(), len(data))
        if self._queue is None:
            self._create(self.root / rel, data)
        else:
            self._queue.put((self.root / rel, data))

    def finish(self) -> None:
        """Wait until every file is on disk; raise the first error of the writer thread."""
        if self._queue is not None and self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._queue = self._thread = None
        if self._error is not None:
            raise self._error

    def _writer(self) -> None:
        assert self._queue is not None
        while (item := self._queue.get()) is not None:
            if self._error is None:  # after an error, drain the queue without writing
                try:
                    self._create(*item)
                except BaseException as err:  # raised again by finish()
                    self._error = err

    def _create(self, path: Path, data: bytes) -> None:
        self._mkdir(path.parent)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)

    def text(self, rel: str, text: str) -> None:
        self.write(rel, text.encode("utf-8"))

    def json(self, rel: str, data: Any, indent: int | None = 2) -> None:
        self.text(rel, json.dumps(data, indent=indent, allow_nan=False) + "\n")

    def yaml(self, rel: str, data: dict[str, Any]) -> None:
        """A YAML file written as indented JSON (YAML 1.2 reads JSON as itself; the validator reads it fast)."""
        self.json(rel, data)

    def manifest(self) -> None:
        """manifest.json: the sha256 and size of every file written, by path."""
        self.json(MANIFEST, manifest_data(self.files))

    def _mkdir(self, folder: Path) -> None:
        """Create a folder once (files and folders get the usual modes, 0644 and 0755 under the process's umask)."""
        if folder not in self._dirs:
            folder.mkdir(parents=True, exist_ok=True)
            self._dirs.add(folder)
