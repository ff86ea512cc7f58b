"""The host this process runs on: its name, OS, CPU and memory, read in one place for every file that records them."""

from __future__ import annotations

import functools
import os
import platform
import socket
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Host:
    """What system.yaml, state.json, power.json and roofline.json record of the machine."""

    hostname: str
    os_name: str
    kernel: str
    cpu_model: str | None
    """/proc/cpuinfo's model name; None where the kernel names none (many Arm kernels)."""
    processor: str
    """platform.processor(): the architecture where /proc/cpuinfo names no model, often empty."""
    cpu_count: int | None
    memory_bytes: int | None
    python_version: str

    @property
    def cpu_name(self) -> str | None:
        """The CPU's model, or else its architecture, or None."""
        return self.cpu_model if self.cpu_model is not None else self.processor or None

    @property
    def safe_name(self) -> str:
        """The hostname as a folder name: letters, digits, '.', '_' and '-', at most 64 characters."""
        cleaned = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in self.hostname)
        return cleaned[:64] or "localhost"


@functools.cache
def host() -> Host:
    """This host's facts, read once per process (none of them changes while it runs)."""
    return Host(
        hostname=socket.gethostname(),
        os_name=_os_name(),
        kernel=platform.release(),
        cpu_model=_cpu_model(),
        processor=platform.processor(),
        cpu_count=os.cpu_count(),
        memory_bytes=meminfo_bytes("MemTotal"),
        python_version=platform.python_version(),
    )


def meminfo_bytes(key: str) -> int | None:
    """A /proc/meminfo line in bytes (MemTotal, MemAvailable, ...), or None where it cannot be read."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(f"{key}:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _os_name() -> str:
    try:
        return platform.freedesktop_os_release().get("PRETTY_NAME", platform.system())
    except OSError:
        return platform.system()
