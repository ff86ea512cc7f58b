"""One owner per device on a node, so energy is never counted twice.

Which process measures: `SPECBENCH_POWER_OWNER` (1 or 0) when set, else the process whose local
rank (LOCAL_RANK, SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID) is 0, else a
single process. As a guard, every measured device is claimed with an exclusive file lock in a
host-wide folder; a second process asking for the same device gets a clear error.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from specbench.errors import UsageError
from specbench.power.base import PowerError

OWNER_VARIABLE = "SPECBENCH_POWER_OWNER"
CLAIM_DIR_VARIABLE = "SPECBENCH_POWER_CLAIM_DIR"
LOCAL_RANK_VARIABLES = ("LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID")


@dataclass(frozen=True)
class Ownership:
    """Whether this process measures the node's devices, and why."""

    owner: bool
    reason: str


def power_owner(environ: Mapping[str, str]) -> Ownership:
    value = environ.get(OWNER_VARIABLE)
    if value is not None:
        if value in ("1", "0"):
            return Ownership(value == "1", f"{OWNER_VARIABLE}={value}")
        raise UsageError(f"{OWNER_VARIABLE}={value!r}: expected 1 (this process measures) or 0 (it does not)")
    for variable in LOCAL_RANK_VARIABLES:
        rank = environ.get(variable)
        if rank is not None:
            if rank.strip() == "0":
                return Ownership(True, f"{variable}=0: the lowest local rank measures this node")
            return Ownership(False, f"{variable}={rank}: the process with local rank 0 measures this node's devices")
    return Ownership(True, "one process (no local rank set)")


def default_claim_dir(environ: Mapping[str, str]) -> Path:
    return Path(environ.get(CLAIM_DIR_VARIABLE) or Path(tempfile.gettempdir()) / "specbench-power-claims")


class DeviceClaim:
    """An exclusive lock on one device, held until `release()` or the end of the process."""

    def __init__(self, identity: str, path: Path, fd: int) -> None:
        self.identity = identity
        self.path = path
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def claim_device(identity: str, directory: Path) -> DeviceClaim:
    """Lock `identity` host-wide, or raise naming the process that holds it."""
    import fcntl

    _make_shared_dir(directory)
    path = directory / (re.sub(r"[^A-Za-z0-9_.-]+", "_", identity) + ".lock")
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        writable = True
    except PermissionError:
        fd = os.open(path, os.O_RDONLY)
        writable = False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = path.read_text().strip() or "unknown"
        os.close(fd)
        raise PowerError(
            f"device {identity} is already measured by process {holder} on this host (lock {path}); "
            f"one process measures each device: measure in local rank 0 only, or set {OWNER_VARIABLE}=0 "
            f"in the other processes"
        ) from None
    if writable:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
    return DeviceClaim(identity, path, fd)


def _make_shared_dir(directory: Path) -> None:
    """Create the claim folder writable by every user, sticky like /tmp."""
    try:
        directory.mkdir(parents=True)
    except FileExistsError:
        return
    with contextlib.suppress(PermissionError):
        directory.chmod(0o1777)
