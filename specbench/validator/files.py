"""Safe access to a submission's files: list without following links, read with bounded sizes.

Nothing under a submission is executed. Links are listed, never followed: every file is opened
component by component with O_NOFOLLOW relative to the submission folder, so a link swapped in
after listing cannot lead a read out of the folder either.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from specbench.validator.findings import Findings

MIB = 1024 * 1024
CHUNK_BYTES = 4 * MIB
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FD = os.open in os.supports_dir_fd


@dataclass(frozen=True)
class Limits:
    """Bounds on what the validator reads; a file over its bound is a finding and is not read."""

    yaml_bytes: int = 1 * MIB
    json_bytes: int = 16 * MIB
    log_bytes: int = 64 * MIB
    csv_bytes: int = 256 * MIB
    other_bytes: int = 256 * MIB
    entries: int = 10_000
    depth: int = 6

    def for_name(self, name: str) -> int:
        """The size bound of a file by its name."""
        if name.endswith((".yaml", ".yml")):
            return self.yaml_bytes
        if name.endswith(".json"):
            return self.json_bytes
        if name.endswith(".txt"):
            return self.log_bytes
        if name.endswith(".csv"):
            return self.csv_bytes
        return self.other_bytes


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True)
class FileEntry:
    size: int
    mode: int


@dataclass
class Tree:
    """The regular files and folders under one submission folder, by relative POSIX path."""

    root: Path
    limits: Limits
    findings: Findings
    files: dict[str, FileEntry] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)
    refused: set[str] = field(default_factory=set)
    oversize: set[str] = field(default_factory=set)
    digests: dict[str, tuple[str, int]] = field(default_factory=dict)
    complete: bool = True
    only: str | None = None
    kept: dict[str, bytes] = field(default_factory=dict, repr=False)
    """Small files digest() read whole, kept until read() takes them: one read and one hash per file."""
    retain: frozenset[str] = frozenset()
    """File names (e.g. log.txt) whose bytes, once read, stay in `retained` for a caller that needs them again
    (an export copies logs byte for byte): the file is still read once."""
    retained: dict[str, bytes] = field(default_factory=dict, repr=False)
    _listing: tuple[int, int, dict[str, tuple[list[str], list[str]]]] | None = field(default=None, repr=False)
    """children()'s index of the listing, with the number of files and folders it was built from."""

    @classmethod
    def scan(
        cls,
        root: Path,
        limits: Limits,
        findings: Findings,
        only: str | None = None,
        retain: frozenset[str] = frozenset(),
    ) -> Tree:
        """List `root`; with `only`, of its folders just that one (a single BENCHMARK is validated)."""
        tree = cls(root, limits, findings, only=only, retain=retain)
        tree._walk("", 0)
        return tree

    def children(self, rel_dir: str) -> tuple[list[str], list[str]]:
        """Names of the files and of the folders directly inside a listed folder.

        From an index of the whole listing by folder, built once (again if the listing grew): a submission
        of hundreds of runs asks for every run's folder, and a pass over all paths each time was quadratic.
        """
        if self._listing is None or self._listing[:2] != (len(self.files), len(self.dirs)):
            index: dict[str, tuple[list[str], list[str]]] = {}
            for kind, paths in enumerate((self.files, self.dirs)):
                for path in paths:
                    parent, _, name = path.rpartition("/")
                    index.setdefault(parent, ([], []))[kind].append(name)
            self._listing = (len(self.files), len(self.dirs), index)
        files, dirs = self._listing[2].get(rel_dir, ([], []))
        return sorted(files), sorted(dirs)

    def _walk(self, rel_dir: str, depth: int) -> None:
        try:
            with os.scandir(self.root / rel_dir if rel_dir else self.root) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as err:
            self.findings.add("SB-STR-002", rel_dir or ".", f"cannot list the folder: {err.strerror}")
            return
        for entry in entries:
            if not self.complete:
                return
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if not rel_dir and self.only not in (None, entry.name) and entry.is_dir(follow_symlinks=False):
                continue
            if len(self.files) + len(self.dirs) + len(self.refused) >= self.limits.entries:
                self.complete = False
                self.findings.add(
                    "SB-STR-003",
                    rel_dir or None,
                    f"expected at most {self.limits.entries} files and folders, found more; the rest is not read",
                )
                return
            self._add(entry, rel, depth)

    def _add(self, entry: os.DirEntry[str], rel: str, depth: int) -> None:
        if entry.is_symlink():
            self.refused.add(rel)
            self.findings.add("SB-STR-004", rel, f"expected a regular file or folder, found {self._describe_link(rel)}")
        elif entry.is_dir(follow_symlinks=False):
            if depth + 1 >= self.limits.depth:
                self.refused.add(rel)
                self.findings.add(
                    "SB-STR-003", rel, f"expected folders at most {self.limits.depth - 1} levels deep, found deeper"
                )
                return
            self.dirs.add(rel)
            self._walk(rel, depth + 1)
        elif entry.is_file(follow_symlinks=False):
            info = entry.stat(follow_symlinks=False)
            self.files[rel] = FileEntry(info.st_size, info.st_mode)
            if info.st_mode & 0o111:
                self.findings.add(
                    "SB-STR-010",
                    rel,
                    f"expected a data file without execute permission, found mode {info.st_mode & 0o777:o}",
                )
        else:
            self.refused.add(rel)
            self.findings.add(
                "SB-STR-004", rel, "expected a regular file or folder, found a special file (fifo, socket or device)"
            )

    def _describe_link(self, rel: str) -> str:
        try:
            target = os.readlink(self.root / rel)
        except OSError:
            return "a symbolic link"
        resolved = os.path.normpath(os.path.join(os.path.dirname(os.path.join(str(self.root), rel)), target))
        inside = os.path.commonpath([os.path.abspath(resolved), os.path.abspath(self.root)]) == os.path.abspath(
            self.root
        )
        where = "inside the submission" if inside else "outside the submission"
        return f"a symbolic link to {target!r} ({where}), which is never followed"

    def has(self, rel: str) -> bool:
        return rel in self.files

    def read(self, rel: str, limit: int | None = None) -> bytes | None:
        """The bytes of a listed regular file, or None (with a finding) when it is too big or unreadable.

        It reads the size the scan found, and on up to the bound only if the file has grown since
        (a read of the bound itself would first allocate that much).
        """
        entry = self.files.get(rel)
        if entry is None:
            return None
        bound = self.limits.for_name(rel) if limit is None else limit
        kept = self.kept.pop(rel, None)
        if kept is not None:
            return self._retained(rel, kept) if self._within(rel, len(kept), bound) else None
        if not self._within(rel, entry.size, bound):
            return None
        data = self._read_whole(rel, entry, bound)
        return None if data is None else self._retained(rel, data)

    def _retained(self, rel: str, data: bytes) -> bytes:
        if rel.rpartition("/")[2] in self.retain:
            self.retained[rel] = data
        return data

    def _read_whole(self, rel: str, entry: FileEntry, bound: int) -> bytes | None:
        try:
            fd = self._open(rel)
        except OSError as err:
            self.findings.add("SB-STR-004", rel, f"expected a readable regular file, found it cannot be opened: {err}")
            return None
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(entry.size + 1)
            if len(data) > entry.size:
                data += handle.read(bound - entry.size)
        if not self._within(rel, len(data), bound):
            return None
        self.digests[rel] = (hashlib.sha256(data).hexdigest(), len(data))
        return data

    def digest(self, rel: str) -> tuple[str, int] | None:
        """sha256 and size of a listed file, streamed, bounded by the file's size limit; None when refused."""
        if rel in self.digests:
            return self.digests[rel]
        entry = self.files.get(rel)
        if entry is None:
            return None
        bound = self.limits.for_name(rel)
        if not self._within(rel, entry.size, bound):
            return None
        if entry.size < CHUNK_BYTES:  # one chunk: read whole as read() does, and kept for it
            data = self._read_whole(rel, entry, bound)
            if data is None:
                return None
            self.kept[rel] = self._retained(rel, data)
            return self.digests[rel]
        try:
            fd = self._open(rel)
        except OSError as err:
            self.findings.add("SB-STR-004", rel, f"expected a readable regular file, found it cannot be opened: {err}")
            return None
        sha = hashlib.sha256()
        size = 0
        with os.fdopen(fd, "rb") as handle:
            while chunk := handle.read(CHUNK_BYTES):
                size += len(chunk)
                if not self._within(rel, size, bound):
                    return None
                sha.update(chunk)
        self.digests[rel] = (sha.hexdigest(), size)
        return self.digests[rel]

    def _within(self, rel: str, size: int, bound: int) -> bool:
        """Whether a size is within its bound; the first excess of a file is a finding."""
        if size <= bound:
            return True
        if rel not in self.oversize:
            self.oversize.add(rel)
            self.findings.add("SB-STR-003", rel, f"expected at most {bound} bytes, found {size} bytes or more")
        return False

    def _open(self, rel: str) -> int:
        """Open a file below the root for reading, refusing links at every component."""
        parts = rel.split("/")
        if not _DIR_FD:
            path = self.root.joinpath(*parts)
            if any(p.is_symlink() for p in [path, *path.parents][: len(parts)]):
                raise OSError(f"{rel}: a component is a symbolic link")
            return _open_regular(str(path), None)
        fd = os.open(self.root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
        try:
            for part in parts[:-1]:
                next_fd = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=fd)
                os.close(fd)
                fd = next_fd
            return _open_regular(parts[-1], fd)
        finally:
            os.close(fd)


def _open_regular(path: str, dir_fd: int | None) -> int:
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=dir_fd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path}: not a regular file")
    return fd
