"""Run several `specbench` command lines in one process, each with its own output files, exit status and time limit.

    python tests/support/clirun.py PLAN.json

PLAN: {"folder": DIR, "timeout_s": S, "memory_bytes": N, "commands": {NAME: [ARG, ...]}}. Each command runs
through `specbench.cli.main`, the entry point of the `specbench` program, with file descriptors 1 and 2 sent to
DIR/NAME.out and DIR/NAME.err; DIR/results.json is rewritten after each one with its exit status (null when it
outran its S seconds) and its time. One process for all of a board's command lines saves an interpreter start and
the imports of each (half a second apiece); the process's address space is bounded to N bytes, so that an
unbounded read fails fast instead of taking the machine's memory.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import time
from pathlib import Path
from types import FrameType


class OutOfTime(BaseException):
    """A command outran its time limit (a BaseException, so that no `except Exception` of the code under test hides it)."""


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise OutOfTime


def run_one(argv: list[str], out: Path, err: Path, timeout_s: float) -> int | None:
    """`specbench ARGV` with stdout and stderr to files; its exit status, or None when it ran out of time."""
    from specbench.cli import main

    saved = os.dup(1), os.dup(2)
    with out.open("wb") as out_file, err.open("wb") as err_file:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(out_file.fileno(), 1)
        os.dup2(err_file.fileno(), 2)
        signal.setitimer(signal.ITIMER_REAL, timeout_s)
        try:
            return main(argv)
        except OutOfTime:
            return None
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)


def main() -> None:
    plan = json.loads(Path(sys.argv[1]).read_text())
    folder = Path(plan["folder"])
    memory = int(plan["memory_bytes"])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    signal.signal(signal.SIGALRM, _alarm)
    results: dict[str, dict[str, float | int | None]] = {}
    for name, argv in plan["commands"].items():
        start = time.monotonic()
        status = run_one(argv, folder / f"{name}.out", folder / f"{name}.err", float(plan["timeout_s"]))
        results[name] = {"rc": status, "seconds": round(time.monotonic() - start, 3)}
        (folder / "results.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
