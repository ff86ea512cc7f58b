"""torch.compile's kernels are kept in specbench's cache folder between runs, not in the temporary directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from specbench.run.compilecache import ENV, cache_root, describe, use_compile_cache


def test_cache_root_prefers_specbench_then_xdg_then_home(tmp_path: Path) -> None:
    assert cache_root({"SPECBENCH_CACHE_DIR": str(tmp_path / "a"), "XDG_CACHE_HOME": "/x"}) == tmp_path / "a"
    assert cache_root({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "specbench"
    assert cache_root({}) == Path(os.path.expanduser("~")) / ".cache" / "specbench"


def test_folder_is_made_and_counted_and_a_users_choice_wins(tmp_path: Path) -> None:
    environ = {"SPECBENCH_CACHE_DIR": str(tmp_path / "sb")}
    folder, held = use_compile_cache(environ)
    assert folder == tmp_path / "sb" / "inductor" and folder.is_dir() and held == 0
    assert environ[ENV] == str(folder)
    (folder / "fxgraph").mkdir()
    (folder / "fxgraph" / "entry").write_text("x")
    assert use_compile_cache(environ) == (folder, 1)
    assert "1 files from earlier runs" in describe(folder, 1)
    assert "compiled and tuned in the warm-up" in describe(folder, 0)
    mine = {ENV: str(tmp_path / "mine"), "SPECBENCH_CACHE_DIR": str(tmp_path / "sb")}
    assert use_compile_cache(mine, torch_default="/tmp/torchinductor_me")[0] == tmp_path / "mine"


def test_inductors_own_default_in_the_environment_is_not_a_users_choice(tmp_path: Path) -> None:
    """Importing torch._dynamo writes inductor's temporary-directory default into the environment."""
    environ = {ENV: "/tmp/torchinductor_me", "SPECBENCH_CACHE_DIR": str(tmp_path / "sb")}
    folder, _ = use_compile_cache(environ, torch_default="/tmp/torchinductor_me")
    assert folder == tmp_path / "sb" / "inductor" and environ[ENV] == str(folder)


@pytest.mark.needs("torch")
def test_compiling_executor_says_where_its_cache_is(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import torch

    from specbench.workloads.conv import wrap_model

    monkeypatch.setenv(ENV, str(tmp_path / "inductor"))
    monkeypatch.setattr(torch, "compile", lambda model, **kwargs: model)
    said: list[str] = []
    ctx: Any = SimpleNamespace(
        settings={"compile_mode": "default"},
        dist=SimpleNamespace(active=False),
        device="cpu",
        progress=SimpleNamespace(message=said.append),
    )
    wrap_model(ctx, torch.nn.Linear(2, 2))
    assert said == [
        f"torch.compile cache: {tmp_path / 'inductor'} (empty: kernels are compiled and tuned in the warm-up)"
    ]


@pytest.mark.needs("torch")
def test_inductor_writes_its_kernels_into_the_folder(tmp_path: Path) -> None:
    """A real compile on the CPU, in its own process: inductor's files land in specbench's folder, and a second
    process finds them there."""
    code = (
        "import torch, torch._dynamo\n"
        "from specbench.run.compilecache import use_compile_cache\n"
        "folder, held = use_compile_cache()\n"
        "f = torch.compile(lambda x: (x * 2).sin() + 1)\n"
        "f(torch.ones(8))\n"
        "print(folder, held)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in (ENV, "TRITON_CACHE_DIR")}
    env["SPECBENCH_CACHE_DIR"] = str(tmp_path / "sb")
    runs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True) for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[-1].stderr[-2000:]
    assert int(runs[0].stdout.split()[-1]) == 0
    assert int(runs[1].stdout.split()[-1]) > 0
    assert any((tmp_path / "sb" / "inductor").rglob("*.py"))
    assert runs[0].stdout.split()[0] == str(tmp_path / "sb" / "inductor")


@pytest.mark.slow
@pytest.mark.needs("torch", "filelock")
def test_inductors_file_locks_are_dropped_before_interpreter_teardown(tmp_path: Path) -> None:
    """A compiled training step on the CPU loads inductor's padding pass, whose on-disk cache keeps a FileLock in a
    module global; left to teardown, filelock 3.x's BaseFileLock.__del__ finds `os` cleared and prints
    "Exception ignored in: BaseFileLock.__del__". use_compile_cache's exit hook drops it while modules are whole."""
    code = (
        "import atexit, gc\n"
        "def live():\n"
        "    from filelock import BaseFileLock\n"
        "    return sum(1 for o in gc.get_objects() if BaseFileLock in type(o).__mro__)\n"
        "atexit.register(lambda: print('after', live()))\n"  # registered first: runs after specbench's hook
        "import torch\n"
        "from specbench.run.compilecache import use_compile_cache\n"
        "use_compile_cache()\n"
        "linear = torch.nn.Linear(8, 8)\n"
        "torch.compile(lambda x: linear(x).relu().sum())(torch.ones(4, 8)).backward()\n"
        "atexit.register(lambda: print('before', live()))\n"  # runs first
    )
    env = {k: v for k, v in os.environ.items() if k not in (ENV, "TRITON_CACHE_DIR")}
    env["SPECBENCH_CACHE_DIR"] = str(tmp_path / "sb")
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    counts = dict(line.split() for line in run.stdout.splitlines() if line.startswith(("before", "after")))
    if counts["before"] == "0":
        pytest.skip("this torch keeps no file lock for the life of the process")
    assert counts["after"] == "0", run.stdout
    assert "Exception ignored" not in run.stderr


def test_the_exit_hook_drops_only_file_locks_of_registered_caches(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    filelock = pytest.importorskip("filelock")
    from specbench.run.compilecache import release_compile_locks

    class Disk:
        def __init__(self, path: str) -> None:
            self._flock = filelock.FileLock(path)
            self.kept = "a path"

    cache = SimpleNamespace(_disk_cache=Disk(str(tmp_path / "dir.lock")), name="should_pad")
    monkeypatch.setitem(sys.modules, "torch._inductor.utils", SimpleNamespace(_registered_caches=[cache]))
    assert release_compile_locks() == 1
    assert not hasattr(cache._disk_cache, "_flock") and cache._disk_cache.kept == "a path"
    assert release_compile_locks() == 0
