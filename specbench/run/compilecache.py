"""Where torch.compile keeps its compiled and autotuned kernels between runs.

Inductor's own default is a folder under the system's temporary directory, which a reboot or a cleaner
empties; a run with `kernel_tuning` or `compile_mode=max-autotune` would then spend minutes tuning the same
kernels again. specbench points inductor (and Triton under it) at a folder in the user's cache instead,
unless the user named another folder with TORCHINDUCTOR_CACHE_DIR. The cache holds kernels compiled on this machine
for this software: it changes how long a run takes to start, never what it measures (the timed window
opens after the warm-up steps).
"""

from __future__ import annotations

import os
from pathlib import Path

ENV = "TORCHINDUCTOR_CACHE_DIR"


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
    held = sum(len(files) for _, _, files in os.walk(folder))
    return folder, held


def describe(folder: Path, held: int) -> str:
    state = f"{held} files from earlier runs" if held else "empty: kernels are compiled and tuned in the warm-up"
    return f"torch.compile cache: {folder} ({state})"
