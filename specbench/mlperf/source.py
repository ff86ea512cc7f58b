"""The MLPerf Training results tree, read only: organisations, systems, benchmarks, result and power files.

Layout (as MLCommons publishes it, one round per repository):

    <org>/systems/<system>.json
    <org>/results/<system>/<benchmark>/result_*.txt
    <org>/results/<system>/<benchmark>/power/result_*/node_N.txt, sw_N.txt
    <org>/results/<system>/{strong,weak}/<benchmark>/result_*.txt     (MLPerf HPC)

Nothing here writes: files are opened read-only, links are never followed (a link is reported and
skipped), and every read is bounded. MLPerf's RCP checker writes scaling.json into this tree (the
factor MLPerf's published time to train is multiplied by); the importer reads it, never writes it.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from specbench.formats.mlperf_import import SourceFile

MIB = 1024 * 1024
MAX_BYTES = {".txt": 64 * MIB, ".json": 16 * MIB}
ROUND = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?$")
ROUND_IN_NAME = re.compile(r"(?:^|[_-])v(\d+)\.(\d+)(?:\.(\d+))?(?:$|[_-])")
"""A round inside a folder name, as MLCommons names its repositories: training_results_v4.0."""
SCALING = "scaling.json"
RESULT = re.compile(r"^result_(.+)\.txt$")
NODE = re.compile(r"^(node|sw)_(\d+)\.txt$")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
FIND_DEPTH = 3


class SourceError(Exception):
    """A file of the results tree that cannot be read (link, special file, too big, unreadable)."""


@dataclass(frozen=True)
class OrgFolder:
    """One `<org>` folder: it holds systems/ and results/."""

    path: Path
    rel: str
    name: str
    round: str | None

    @property
    def ruleset(self) -> str | None:
        """MLPerf logging ruleset of the round (v4.0 -> 4.0.0), None when the round is unknown."""
        match = ROUND.match(self.round or "")
        return f"{match.group(1)}.{match.group(2)}.{match.group(3) or 0}" if match else None


@dataclass
class BenchmarkSource:
    name: str
    path: Path
    results: list[Path]
    power: Path | None
    ignored: list[str] = field(default_factory=list)
    scaling: Path | None = None
    scaling_mode: Literal["strong", "weak"] | None = None
    """MLPerf HPC: `strong` or `weak`, the folder the benchmark sits in; None for MLPerf Training."""


@dataclass
class SystemSource:
    org: OrgFolder
    name: str
    json_path: Path
    benchmarks: list[BenchmarkSource]

    def shadowed(self, bench: BenchmarkSource) -> bool:
        """A weak-scaling folder of a benchmark the system also has under strong/: both would become the one
        submission folder named by the spec id, and the strong-scaling result is the one imported."""
        return bench.scaling_mode == "weak" and any(
            b.name == bench.name and b.scaling_mode == "strong" for b in self.benchmarks
        )


@dataclass
class Tree:
    """What a results tree holds, and what could not be used (each with the reason)."""

    root: Path
    systems: list[SystemSource] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def natural_key(name: str) -> list[object]:
    """result_2 before result_10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def _entries(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as listing:
            return sorted(listing, key=lambda e: natural_key(e.name))
    except OSError:
        return []


def _dirs(folder: Path) -> list[Path]:
    return [Path(e.path) for e in _entries(folder) if e.is_dir(follow_symlinks=False)]


def _is_org(folder: Path) -> bool:
    return all((folder / part).is_dir() and not (folder / part).is_symlink() for part in ("systems", "results"))


def _round_of(root: Path, folder: Path) -> str | None:
    """The round of the nearest folder at or above `folder` named vN.M (or N.M), or holding _vN.M or -vN.M."""
    for part in reversed([*root.resolve().parts, *folder.relative_to(root).parts]):
        if ROUND.match(part):
            return part
        match = ROUND_IN_NAME.search(part)
        if match:
            return f"v{match.group(1)}.{match.group(2)}" + (f".{match.group(3)}" if match.group(3) else "")
    return None


def find_orgs(root: Path) -> list[OrgFolder]:
    """Organisation folders at or below `root` (searched three levels deep, links not followed)."""
    found: list[Path] = []
    level = [root]
    for depth in range(FIND_DEPTH + 1):
        below: list[Path] = []
        for folder in level:
            if _is_org(folder):
                found.append(folder)
            elif depth < FIND_DEPTH:
                below.extend(_dirs(folder))
        level = below
    orgs = []
    for folder in found:
        rel = folder.relative_to(root).as_posix()
        orgs.append(OrgFolder(folder, rel, folder.resolve().name, _round_of(root, folder)))
    return orgs


def scan(root: Path) -> Tree:
    """Every system with a description and a results folder, and every benchmark folder of it."""
    tree = Tree(root)
    for org in find_orgs(root):
        described = {}
        for entry in _entries(org.path / "systems"):
            if entry.name.endswith(".json"):
                if entry.is_file(follow_symlinks=False):
                    described[entry.name[: -len(".json")]] = Path(entry.path)
                else:
                    tree.skipped.append(f"{org.rel}/systems/{entry.name}: not a regular file (links are not followed)")
        results = {p.name: p for p in _dirs(org.path / "results")}
        for name in sorted(set(results) - set(described), key=natural_key):
            tree.skipped.append(f"{org.rel}/results/{name}: no systems/{name}.json describes this system")
        for name in sorted(set(described) & set(results), key=natural_key):
            benchmarks = _benchmarks(results[name])
            tree.systems.append(SystemSource(org, name, described[name], benchmarks))
    return tree


SCALING_MODES = ("strong", "weak")
"""MLPerf HPC's results folders: results/<system>/strong/<benchmark>/, results/<system>/weak/<benchmark>/."""


def _benchmarks(system_folder: Path) -> list[BenchmarkSource]:
    """The benchmark folders of a system: <benchmark>/ (training), or strong/<benchmark>/ and weak/<benchmark>/ (HPC)."""
    found: list[BenchmarkSource] = []
    for folder in _dirs(system_folder):
        if folder.name in SCALING_MODES:
            mode: Literal["strong", "weak"] = "strong" if folder.name == "strong" else "weak"
            found.extend(_benchmark(inner, mode) for inner in _dirs(folder))
        else:
            found.append(_benchmark(folder))
    return found


def _benchmark(folder: Path, scaling_mode: Literal["strong", "weak"] | None = None) -> BenchmarkSource:
    bench = BenchmarkSource(folder.name, folder, [], None, scaling_mode=scaling_mode)
    for entry in _entries(folder):
        if entry.is_dir(follow_symlinks=False) and entry.name == "power":
            bench.power = Path(entry.path)
        elif entry.is_file(follow_symlinks=False) and RESULT.match(entry.name):
            bench.results.append(Path(entry.path))
        elif entry.name == SCALING and entry.is_file(follow_symlinks=False):
            bench.scaling = Path(entry.path)
        else:
            bench.ignored.append(f"{entry.name}: not a result_*.txt file or the power folder")
    return bench


def read_bytes(path: Path) -> bytes:
    """A regular file's bytes, refusing links and files over their size bound."""
    bound = MAX_BYTES.get(path.suffix, 64 * MIB)
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
    except OSError as err:
        raise SourceError(f"{path}: cannot be opened ({err.strerror}; links are not followed)") from err
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise SourceError(f"{path}: not a regular file")
        data = handle.read(min(info.st_size, bound) + 1)  # not read(bound + 1): that would first allocate the bound
        if info.st_size < len(data) <= bound:  # grown since: on up to the bound
            data += handle.read(bound + 1 - len(data))
    if len(data) > bound:
        raise SourceError(f"{path}: larger than {bound} bytes")
    return data


def source_file(org: OrgFolder, path: Path, data: bytes) -> SourceFile:
    """Where a file came from (relative to the organisation's folder) and its sha256."""
    return SourceFile(
        path=path.relative_to(org.path).as_posix(), sha256=hashlib.sha256(data).hexdigest(), bytes=len(data)
    )


def result_name(path: Path) -> str:
    """result_0.txt -> result_0 (the name of its power folder)."""
    return path.name[: -len(".txt")]
