"""The submission folder on disk: ORG/SYSTEM names, submission.yaml, run folders with state.json, resume.

While a process writes a run, its state.json says `running` with the pid, the host, the seed and
what the run has done so far (run_start's time, the quality curve), rewritten atomically as it
changes. A later execute into the same folder finds runs whose process is gone, marks them
`incomplete` and lets the caller write their result.json from that state, so a run killed outright
(SIGKILL, the out-of-memory killer) still validates, as an incomplete run.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from specbench.errors import UsageError
from specbench.files import atomic_write_json, atomic_write_yaml
from specbench.host import host

NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
STATE = "state.json"
RESULT = "result.json"
KILLED = "killed: the run ended without writing a result"
MATCHING_KEYS = ["spec_sha256", "level", "profile", "hyperparameters", "layers", "dataset", "seed"]
"""submission.yaml keys that runs appended to an existing benchmark folder must share."""

Recover = Callable[[Path, int, dict[str, Any]], dict[str, Any]]
"""(run folder, run number, its last state) -> the result.json of a run killed outright."""


@dataclass
class Resume:
    """Where a benchmark folder stands: the next run number, runs completed, seeds already used."""

    next_run: int
    completed: int
    seeds: list[int]


def org_system(out: Path) -> tuple[str, str]:
    """(ORG, SYSTEM) from the last two names of --out, refused unless both are plain names."""
    system, org = out.resolve().name, out.resolve().parent.name
    for kind, name in (("organisation", org), ("system", system)):
        if not NAME.match(name):
            raise UsageError(
                f"--out must end in ORG/SYSTEM with names of letters, digits, '.', '_' or '-'; {kind} is {name!r}"
            )
    return org, system


def run_dirs(bench_dir: Path) -> list[tuple[int, Path]]:
    found = []
    for path in bench_dir.glob("run_*"):
        suffix = path.name[4:]
        if path.is_dir() and suffix.isdigit():
            found.append((int(suffix), path))
    return sorted(found)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OverflowError, ValueError):
        return False
    return True


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _still_running(state: dict[str, Any]) -> bool:
    pid = state.get("pid")
    return (
        state.get("status") == "running"
        and state.get("host") == host().hostname
        and isinstance(pid, int)
        and pid_alive(pid)
    )


def reconcile_runs(bench_dir: Path, recover: Recover | None = None) -> Resume:
    """Count finished runs and their seeds; mark runs killed without a result incomplete (and recover them)."""
    completed, seeds, last = 0, [], 0
    for number, path in run_dirs(bench_dir):
        last = max(last, number)
        result = read_json(path / RESULT)
        state = read_json(path / STATE) or {}
        if result is not None:
            seeds.append(int(result.get("seed", -1)))
            completed += result.get("status") in ("success", "failed")
            continue
        if _still_running(state):
            raise UsageError(
                f"{path} is being written by a running process (pid {state.get('pid')}); wait for it or stop it"
            )
        state = {**state, "status": "incomplete", "reason": KILLED}
        if recover is not None and isinstance(state.get("seed"), int):
            seeds.append(state["seed"])
            try:
                atomic_write_json(path / RESULT, recover(path, number, state))
            except (ValueError, KeyError, TypeError) as err:  # a state.json edited by hand: no result, say why
                state["reason"] = f"{KILLED} (none could be recovered from state.json: {err})"[:500]
        atomic_write_json(path / STATE, state)
    return Resume(last + 1, completed, seeds)


def check_same(existing: Path, fresh: dict[str, Any], what: str, keys: list[str]) -> None:
    """Refuse to add runs to a folder whose file `existing` records different values of `keys`."""
    from specbench.spec.yamlio import load_yaml

    old = load_yaml(existing).data
    differing = [k for k in keys if old.get(k) != fresh.get(k)]
    if differing:
        verb = "differ" if len(differing) > 1 or differing[0].endswith("s") else "differs"
        raise UsageError(
            f"{existing} holds runs of a different {what} ({', '.join(differing)} {verb}); "
            "execute into a new --out folder instead of mixing them"
        )


def prepare_benchmark(bench_dir: Path, meta: dict[str, Any], recover: Recover | None = None) -> Resume:
    """Write submission.yaml (or check that the folder's is the same configuration), then reconcile its runs."""
    meta_file = bench_dir / "submission.yaml"
    if meta_file.exists():
        check_same(meta_file, meta, "configuration", MATCHING_KEYS)
    else:
        atomic_write_yaml(meta_file, meta)
    return reconcile_runs(bench_dir, recover)


def run_seed(base: int | None, number: int, used: list[int]) -> int:
    """Run `number`'s seed: `base` + number - 1 with --seed, else a fresh random one not used before."""
    if base is not None:
        return base + number - 1
    while True:
        seed = int.from_bytes(os.urandom(4), "little") & 0x7FFFFFFF
        if seed not in used:
            return seed


class RunFolder:
    """One run's folder and its state.json; only the process that writes the submission touches them."""

    def __init__(self, path: Path, seed: int, writer: bool, **facts: Any) -> None:
        self.path = path
        self.writer = writer
        self.started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.state: dict[str, Any] = {
            "status": "running",
            "pid": os.getpid(),
            "host": host().hostname,
            "started_at": self.started_at,
            "seed": seed,
            **facts,
        }

    def open(self) -> None:
        if self.writer:
            self.path.mkdir(parents=True, exist_ok=False)
            atomic_write_json(self.path / STATE, self.state)

    def checkpoint(self, **progress: Any) -> None:
        """Record what the run has done so far, for the result of a run killed before it ends."""
        self.state.update(progress)
        if self.writer:
            atomic_write_json(self.path / STATE, self.state)

    def close(self, status: Literal["done", "incomplete"], reason: str | None) -> None:
        self.state.update(status=status, reason=reason)
        if self.writer:
            atomic_write_json(self.path / STATE, self.state)
