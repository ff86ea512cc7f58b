"""Measure the power and energy of one command: the library behind `specbench power -- CMD`."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from specbench.power.base import Meter, PowerError
from specbench.power.owner import OWNER_VARIABLE
from specbench.power.sampler import DEFAULT_INTERVAL_S, Clock, PowerSampler, Window
from specbench.power.trace import CSV_NAME, JSON_NAME

FORWARDED_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")


class CommandNotRun(PowerError):
    """The command could not be started; exit codes follow env(1): 127 not found, 126 not executable."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class MeasuredCommand:
    """What `measure_command` found: the command's exit code, its energy window, the trace folder."""

    command: list[str]
    exit_code: int
    window: Window
    trace_dir: Path


def measure_command(
    command: Sequence[str],
    meters: Sequence[Meter],
    trace_dir: str | Path,
    *,
    interval_s: float = DEFAULT_INTERVAL_S,
    clock: Clock | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> MeasuredCommand:
    """Run `command` while sampling; the window spans from just before its start to its exit.

    The child inherits the environment with SPECBENCH_POWER_OWNER=0, so a specbench process
    inside it does not measure the same devices again. Signals sent to this process are
    forwarded to the child (see `forward_signals`).
    """
    if not command:
        raise PowerError("no command to measure; usage: specbench power [OPTIONS] -- CMD [ARGS]...")
    env = {**os.environ, OWNER_VARIABLE: "0"}
    check_runnable(command[0], env.get("PATH", os.defpath))
    trace_dir = Path(trace_dir)
    created = _first_missing(trace_dir)
    sampler = PowerSampler(
        meters, interval_s, trace_dir=trace_dir, clock=clock, metadata={**(metadata or {}), "command": list(command)}
    )
    try:
        with sampler:
            sampler.window_start()
            child = _start(command, env, sampler)
            with forward_signals(child):
                returncode = _wait(child)
            window = sampler.window_stop()
            exit_code = 128 - returncode if returncode < 0 else returncode
            sampler.extra_metadata["exit_code"] = exit_code
    except CommandNotRun:
        remove_trace(trace_dir, created)
        raise
    return MeasuredCommand(list(command), exit_code, window, trace_dir)


def check_runnable(name: str, path: str) -> None:
    """Refuse, before any trace is written, a command that cannot start: 127 not found, 126 not executable."""
    if os.sep not in name:
        if shutil.which(name, path=path) is None:
            raise CommandNotRun(
                f"cannot run {name!r}: no such command on PATH; check its spelling, or give its path", 127
            )
        return
    target = Path(name)
    if not target.exists():
        raise CommandNotRun(f"cannot run {name!r}: no such file; check the path", 127)
    if target.is_dir():
        raise CommandNotRun(f"cannot run {name!r}: a folder, not a program; name the program inside it", 126)
    if not os.access(target, os.X_OK):
        raise CommandNotRun(
            f"cannot run {name!r}: not executable; chmod +x {name}, or run it through its interpreter", 126
        )


def _start(command: Sequence[str], env: Mapping[str, str], sampler: PowerSampler) -> subprocess.Popen[Any]:
    """Start the child inside the open window; one that cannot start closes the window and says why."""
    try:
        return subprocess.Popen(list(command), env=env)
    except OSError as err:
        sampler.window_stop()
        code = 127 if isinstance(err, FileNotFoundError) else 126
        why = str(err.strerror or err)
        if err.errno == errno.ENOEXEC:
            why = "not a program this machine runs (exec format error); a script needs its #! line"
        raise CommandNotRun(f"cannot run {command[0]!r}: {why}", code) from err


def _first_missing(folder: Path) -> Path | None:
    """The outermost folder of `folder`'s path that does not exist yet (None when `folder` exists)."""
    missing = None
    for candidate in (folder, *folder.parents):
        if candidate.exists():
            break
        missing = candidate
    return missing


def remove_trace(folder: Path, created: Path | None) -> None:
    """Remove the trace of a command that never started, and the folders made for it (only while empty)."""
    for name in (CSV_NAME, JSON_NAME, JSON_NAME + ".tmp"):
        (folder / name).unlink(missing_ok=True)
    if created is None:
        return
    for candidate in (folder, *folder.parents):
        try:
            candidate.rmdir()
        except OSError:
            return
        if candidate == created:
            return


def _wait(child: subprocess.Popen[Any]) -> int:
    """Wait in short steps: a signal the kernel hands to another thread while this one blocks in
    waitpid() would otherwise wait for its Python handler until the child exits."""
    while True:
        try:
            return child.wait(timeout=0.05)
        except subprocess.TimeoutExpired:
            continue


@contextlib.contextmanager
def forward_signals(child: subprocess.Popen[Any]) -> Iterator[None]:
    """Pass SIGTERM, SIGHUP, SIGQUIT, SIGUSR1/2 and SIGINT on to `child` while it runs.

    SIGINT is not passed on when this process is in the terminal's foreground group: a Ctrl-C
    there already reached the child, and a second one would interrupt its clean-up.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def forward(signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGINT and _terminal_sent_sigint():
            return
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signum)

    previous = {}
    for name in FORWARDED_SIGNALS:
        number = getattr(signal, name, None)
        if number is not None:
            previous[number] = signal.signal(number, forward)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _terminal_sent_sigint() -> bool:
    try:
        return os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except (OSError, ValueError, AttributeError):
        return False
