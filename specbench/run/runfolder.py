"""The submission folder on disk: ORG/SYSTEM names, what --out may hold, submission.yaml, run folders, resume.

While a process writes a run, its state.json says `running` with the pid, the host, the seed, the
phase (`setup`, then `training` from run_start) and what the run has done so far, rewritten
atomically as it changes. A run stopped by a signal is not a result: Ctrl-C, SIGTERM or SIGHUP
leave state.json `incomplete` with `interrupted_by` naming the signal, and a run killed outright
(SIGKILL, the out-of-memory killer) leaves it `running` with a pid that is gone. The next execute
into the folder removes such a run and runs its number again, recording in the new run's
state.json what it replaces, so the folder holds runs 1..N, each of which ended on its own.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from specbench.errors import UsageError
from specbench.files import atomic_write_json, atomic_write_yaml
from specbench.formats.layout import RESULT_FILE, STATE_FILE
from specbench.formats.runstate import check_state
from specbench.host import host

NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
STATE = STATE_FILE
RESULT = RESULT_FILE
KILLED = "killed: its process ended without writing a result (SIGKILL, the out-of-memory killer or a lost node)"
SIGNALLED = ("interrupted by ", "killed: ")
"""How the reason of a run stopped by a signal begins (RunInterrupted, KILLED)."""
MATCHING_KEYS = ["spec_sha256", "level", "profile", "hyperparameters", "layers", "dataset", "seed"]
"""submission.yaml keys that runs appended to an existing benchmark folder must share."""
ROOT_FILES = ("system.yaml", "manifest.json")
LEFTOVER = re.compile(
    r"^(\.(system\.yaml|manifest\.json|submission\.yaml|state\.json|result\.json)\..+\.tmp|power\.json\.tmp)$"
)
"""A temporary file of an atomic write that a kill cut short (files.atomic_write_bytes, power.trace)."""


@dataclass
class Resume:
    """Where a benchmark folder stands: run numbers kept, how many, their seeds, and the runs replaced."""

    kept: list[int] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    replaced: dict[int, dict[str, Any]] = field(default_factory=dict)
    """run number -> what its interrupted attempt recorded (written into the new run's state.json)."""

    @property
    def completed(self) -> int:
        return len(self.kept)

    @property
    def next_run(self) -> int:
        """The lowest run number not in the folder: a replaced run's, else the one after the last."""
        return next(n for n in range(1, len(self.kept) + 2) if n not in self.kept)


def org_system(out: Path) -> tuple[str, str]:
    """(ORG, SYSTEM): the last two names of --out as written; fewer than two, or '.' and '..', are refused."""
    names = [part for part in Path(out).parts if part != Path(out).anchor]
    if len(names) < 2:
        found = f"one name {names[0]!r}" if names else "no folder name"
        example = names[0] if names and NAME.match(names[0]) and names[0].strip(".") else "SYSTEM"
        raise UsageError(
            f"--out {out}: expected ORG/SYSTEM (the submitter's folder, then the system's), found {found}; "
            f"name both, e.g. --out submissions/ORG/{example}"
        )
    org, system = names[-2], names[-1]
    for kind, name in (("ORG", org), ("SYSTEM", system)):
        if not NAME.match(name) or not name.strip("."):
            raise UsageError(
                f"--out {out}: {kind} is {name!r}; expected ORG/SYSTEM to end in two plain names of letters, "
                "digits, '.', '_' or '-' (not '.' or '..'), e.g. --out submissions/ORG/SYSTEM"
            )
    return org, system


def check_out(out: Path, org: str, system: str, benchmarks: dict[str, dict[str, Any]]) -> None:
    """Refuse a non-empty --out that is not a submission of this ORG/SYSTEM and configuration (reads only).

    `benchmarks` maps each BENCHMARK folder this execute writes to its planned submission.yaml keys.
    """
    if not out.is_dir() or not any(out.iterdir()):
        return
    entries = {p.name: p for p in out.iterdir() if not LEFTOVER.match(p.name)}
    if "system.yaml" not in entries:
        raise UsageError(
            f"--out {out} is not empty ({_listed(entries)}) and is not a specbench submission (no system.yaml); "
            "give a new or empty folder ORG/SYSTEM"
        )
    strays = [n for n, p in entries.items() if not _submission_entry(n, p)]
    if strays:
        raise UsageError(
            f"--out {out} holds {_listed(strays)}, which execute does not write (expected only system.yaml, "
            "manifest.json and BENCHMARK folders with their submission.yaml); move it out or give a new folder"
        )
    from specbench.spec.yamlio import load_yaml

    recorded = _mapping(load_yaml(entries["system.yaml"]).data)
    if (recorded.get("submitter"), recorded.get("system")) != (org, system):
        raise UsageError(
            f"{out / 'system.yaml'} is of submitter {recorded.get('submitter')!r}, system "
            f"{recorded.get('system')!r}, but --out {out} names ORG {org!r}, SYSTEM {system!r}; "
            "give the folder its ORG/SYSTEM names back, or execute into a new one"
        )
    for name, planned in benchmarks.items():
        if name in entries:
            _check_benchmark(entries[name], planned)


def _mapping(data: Any) -> dict[str, Any]:
    return dict(data) if isinstance(data, dict) else {}


def _submission_entry(name: str, path: Path) -> bool:
    if name in ROOT_FILES:
        return path.is_file()
    return path.is_dir() and (path / "submission.yaml").is_file()


def _listed(names: Any) -> str:
    shown = sorted(names)
    more = f" and {len(shown) - 3} more" if len(shown) > 3 else ""
    return ", ".join(repr(n) for n in shown[:3]) + more


def _check_benchmark(bench_dir: Path, planned: dict[str, Any]) -> None:
    """The folder this execute adds runs to: the same configuration, and only what execute writes there."""
    from specbench.formats.layout import RUN_FOLDER, RUN_OPTIONAL, RUN_REQUIRED
    from specbench.spec.yamlio import load_yaml

    meta_file = bench_dir / "submission.yaml"
    old = _mapping(load_yaml(meta_file).data)
    old_hyper = _mapping(old.get("hyperparameters"))
    fresh_hyper = planned.get("hyperparameters") or {}
    old = {**old, "hyperparameters": {k: old_hyper.get(k) for k in fresh_hyper}}
    refuse_different(meta_file, old, planned, "configuration", list(planned))
    strays = []
    for path in bench_dir.iterdir():
        if path.name == "submission.yaml" or LEFTOVER.match(path.name):
            continue
        if not (path.is_dir() and RUN_FOLDER.match(path.name)):
            strays.append(path.name)
            continue
        known = RUN_REQUIRED + RUN_OPTIONAL
        strays += [
            f"{path.name}/{f.name}" for f in path.iterdir() if f.name not in known and not LEFTOVER.match(f.name)
        ]
    if strays:
        raise UsageError(
            f"{bench_dir} holds {_listed(strays)}, which execute does not write (expected submission.yaml and "
            "run_N folders of log.txt, result.json, state.json, power.csv, power.json, error.txt); move it out"
        )


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


def interruption(state: dict[str, Any], result: dict[str, Any] | None) -> str | None:
    """How a run that a signal stopped ended ('interrupted by SIGINT', 'killed: ...'); None for a run that ended.

    The reason's prefix also finds the runs of folders written before state.json named the signal."""
    if result is None:
        return KILLED
    reason = str(result.get("reason") or "")
    if result.get("status") == "incomplete" and (state.get("interrupted_by") or reason.startswith(SIGNALLED)):
        return reason or f"interrupted by {state['interrupted_by']}"
    return None


def _refuse_live(path: Path, state: dict[str, Any]) -> None:
    """A run without a result whose process may still write it: refuse rather than remove it."""
    if state.get("status") != "running" or not state.get("host"):
        return
    pid, where = state.get("pid"), state.get("host")
    if where != host().hostname:
        raise UsageError(
            f"{path} is a run without a result, started on host {where!r} (pid {pid}), which this host cannot "
            f"check; if it no longer runs there, remove {path} and execute again, else wait for it"
        )
    if isinstance(pid, int) and pid_alive(pid):
        raise UsageError(f"{path} is being written by a running process (pid {pid}); wait for it or stop it")


def reconcile_runs(bench_dir: Path) -> Resume:
    """Keep the runs that ended (success, failed, crashed); remove those a signal stopped, to run them again."""
    resume = Resume()
    for number, path in run_dirs(bench_dir):
        result = read_json(path / RESULT)
        state = read_json(path / STATE) or {}
        if result is None:
            _refuse_live(path, state)
        ended = interruption(state, result)
        if ended is None:
            remove_leftovers(path)
            resume.kept.append(number)
            resume.seeds.append(int((result or {}).get("seed", -1)))
            continue
        resume.replaced[number] = {
            "run": number, "ended": ended, "started_at": state.get("started_at"), "seed": state.get("seed"),
        }  # fmt: skip
        shutil.rmtree(path)
    return resume


def refuse_different(existing: Path, old: dict[str, Any], fresh: dict[str, Any], what: str, keys: list[str]) -> None:
    """Refuse to add runs to a folder whose file `existing` (holding `old`) records different values of `keys`."""
    differing = [k for k in keys if old.get(k) != fresh.get(k)]
    if differing:
        verb = "differ" if len(differing) > 1 or differing[0].endswith("s") else "differs"
        raise UsageError(
            f"{existing} holds runs of a different {what} ({', '.join(differing)} {verb}); "
            "execute into a new --out folder instead of mixing them"
        )


def check_same(existing: Path, fresh: dict[str, Any], what: str, keys: list[str]) -> None:
    """Refuse to add runs to a folder whose file `existing` records different values of `keys`."""
    from specbench.spec.yamlio import load_yaml

    refuse_different(existing, _mapping(load_yaml(existing).data), fresh, what, keys)


def remove_leftovers(folder: Path) -> None:
    """Delete the temporary files of atomic writes that a kill interrupted (never anything else)."""
    if folder.is_dir():
        for path in folder.iterdir():
            if LEFTOVER.match(path.name) and path.is_file():
                path.unlink()


def prepare_benchmark(bench_dir: Path, meta: dict[str, Any]) -> Resume:
    """Write submission.yaml (or check that the folder's is the same configuration), then reconcile its runs."""
    meta_file = bench_dir / "submission.yaml"
    remove_leftovers(bench_dir.parent)
    remove_leftovers(bench_dir)
    if meta_file.exists():
        check_same(meta_file, meta, "configuration", MATCHING_KEYS)
    else:
        atomic_write_yaml(meta_file, meta)
    return reconcile_runs(bench_dir)


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
            "phase": "setup",
            "pid": os.getpid(),
            "host": host().hostname,
            "started_at": self.started_at,
            "seed": seed,
            **{k: v for k, v in facts.items() if v is not None},
        }

    def _write(self) -> None:
        check_state(self.state, str(self.path / STATE))
        atomic_write_json(self.path / STATE, self.state)

    def open(self) -> None:
        if self.writer:
            self.path.mkdir(parents=True, exist_ok=False)
            self._write()

    def checkpoint(self, **progress: Any) -> None:
        """Record what the run has done so far (its phase, run_start, the quality curve) in state.json."""
        self.state.update(progress)
        if self.writer:
            self._write()

    def close(self, status: Literal["done", "incomplete"], reason: str | None, interrupted_by: str | None) -> None:
        """The run's last state: done, or incomplete with its reason (and the signal, when one stopped it)."""
        self.state.update(status=status, reason=reason)
        if interrupted_by is not None:
            self.state["interrupted_by"] = interrupted_by
        if self.writer:
            self._write()
