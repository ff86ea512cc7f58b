"""Where torch.compile keeps its compiled and autotuned kernels between runs.

Inductor's own default is a folder under the system's temporary directory, which a reboot or a cleaner
empties; a run with `kernel_tuning` or `compile_mode=max-autotune` would then spend minutes tuning the same
kernels again. specbench points inductor (and Triton under it) at a folder in the user's cache instead,
unless the user named another folder with TORCHINDUCTOR_CACHE_DIR. The cache holds kernels compiled on this machine
for this software: it changes how long a run takes to start, never what it measures (the timed window
opens after the warm-up steps).

Inductor also keeps a file lock for the life of the process: its padding pass's on-disk cache
(torch._inductor.runtime.caching.memoizers.should_pad_memoizer) holds a filelock.FileLock in a module
global. Left to interpreter teardown, an older filelock's BaseFileLock.__del__ runs after the `os` it calls
was cleared and prints "Exception ignored in: BaseFileLock.__del__" after the run's last line;
`release_compile_locks`, run at exit while every module is whole, releases and drops those locks first.
"""

from __future__ import annotations

import atexit
import os
import sys
from contextlib import suppress
from pathlib import Path
from typing import Any

ENV = "TORCHINDUCTOR_CACHE_DIR"
_release_registered = False


def cache_root(environ: dict[str, str] | os._Environ[str] = os.environ) -> Path:
    """SPECBENCH_CACHE_DIR, else $XDG_CACHE_HOME/specbench, else ~/.cache/specbench."""
    if environ.get("SPECBENCH_CACHE_DIR"):
        return Path(environ["SPECBENCH_CACHE_DIR"]).expanduser()
    base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "specbench"


def inductor_default() -> str:
    """Inductor's own default folder, which importing torch._dynamo writes into TORCHINDUCTOR_CACHE_DIR itself."""
    try:
        from torch._inductor.runtime.cache_dir_utils import default_cache_dir
    except ImportError:  # another torch: nothing to tell apart
        return ""
    return os.path.abspath(default_cache_dir())


def use_compile_cache(
    environ: dict[str, str] | os._Environ[str] = os.environ, torch_default: str | None = None
) -> tuple[Path, int]:
    """Point inductor at the persistent folder; returns the folder and how many files it held before this run
    (0: kernels are compiled, and tuned, from scratch).

    A TORCHINDUCTOR_CACHE_DIR the user set wins, unless it is inductor's own default: torch writes that into
    the environment when torch._dynamo is imported, so it cannot be told apart from one the user chose."""
    chosen = environ.get(ENV)
    default = inductor_default() if torch_default is None else torch_default
    users = bool(chosen) and os.path.abspath(chosen or "") != default
    folder = Path(chosen) if users and chosen else cache_root(environ) / "inductor"
    folder.mkdir(parents=True, exist_ok=True)
    environ[ENV] = str(folder)
    _release_at_exit()
    held = sum(len(files) for _, _, files in os.walk(folder))
    return folder, held


def _release_at_exit() -> None:
    global _release_registered
    if not _release_registered:
        atexit.register(release_compile_locks)
        _release_registered = True


def release_compile_locks() -> int:
    """Release and drop the file locks inductor's registered caches hold (and their on-disk caches), so that each
    lock's finaliser runs now rather than at interpreter teardown; returns how many were dropped."""
    utils, filelock = sys.modules.get("torch._inductor.utils"), sys.modules.get("filelock")
    if utils is None or filelock is None:
        return 0
    dropped = 0
    for cache in list(getattr(utils, "_registered_caches", ())):
        for holder in (cache, getattr(cache, "_disk_cache", None)):
            for name, value in list(_attributes(holder).items()):
                if isinstance(value, filelock.BaseFileLock):
                    with suppress(Exception):
                        value.release(force=True)
                    delattr(holder, name)
                    dropped += 1
    return dropped


def _attributes(holder: Any) -> dict[str, Any]:
    return dict(vars(holder)) if hasattr(holder, "__dict__") else {}


def describe(folder: Path, held: int) -> str:
    state = f"{held} files from earlier runs" if held else "empty: kernels are compiled and tuned in the warm-up"
    return f"torch.compile cache: {folder} ({state})"
