"""`specbench execute` on a terminal says what it runs before anything heavy loads, and what it waits for."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specbench.commands import execute as execute_command

REPO = Path(__file__).resolve().parents[1]


def test_the_command_module_s_constants_are_their_sources() -> None:
    from specbench.run import options
    from specbench.spec import rules

    assert tuple(rules.LEVELS) == execute_command.LEVELS
    assert execute_command.DEFAULT_RDZV_ID == options.DEFAULT_RDZV_ID


def test_the_first_line_names_spec_profile_level_and_device() -> None:
    params = {"spec": "llm-gpt", "profile": "smoke", "level": None, "device": "auto"}
    assert execute_command.startup_line(params) == (
        "specbench execute: spec llm-gpt, profile smoke, level the spec's first, device auto"
    )
    params |= {"level": "free", "device": "cpu"}
    assert execute_command.startup_line(params).endswith("level free, device cpu")


def test_piped_output_gets_no_start_up_lines(capsys: pytest.CaptureFixture[str]) -> None:
    execute_command.announce("loading torch...")
    assert capsys.readouterr().err == ""


def _read_terminal(fd: int, until: str, timeout_s: float) -> str:
    """What a process wrote to the terminal `fd` until `until` appeared (or the timeout)."""
    text, deadline = "", time.monotonic() + timeout_s
    while until not in text and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            text += chunk.decode(errors="replace")
    return text


@pytest.mark.needs("torch")  # the run it starts loads torch
def test_a_terminal_hears_what_runs_before_pydantic_or_torch_load(tmp_path: Path) -> None:
    """With -X importtime every import is reported as it completes, on the same terminal: the first line comes
    before any pydantic or torch module has loaded, and 'loading torch...' before torch."""
    main_fd, terminal = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "SPECBENCH_POWER_OWNER")}
    argv = ["execute", "resnet50", "--profile", "smoke", "--device", "cpu", "--power", "none"]
    proc = subprocess.Popen(
        [sys.executable, "-X", "importtime", "-m", "specbench", *argv, "--out", str(tmp_path / "acme" / "box")],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=terminal,
        cwd=REPO,
        env={**env, "PYTHONPATH": str(REPO)},
        start_new_session=True,
    )
    os.close(terminal)
    try:
        text = _read_terminal(main_fd, "loading torch...", timeout_s=120)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        os.close(main_fd)
    lines = text.replace("\r", "").splitlines()
    header = "specbench execute: spec resnet50, profile smoke, level the spec's first, device cpu"
    assert header in lines and "loading torch..." in lines, text[-2000:]
    first, torch_line = lines.index(header), lines.index("loading torch...")
    imported = [re.sub(r"^import time:.*\|\s*", "", line).strip() for line in lines]
    assert not [m for m in imported[:first] if m.split(".")[0] in ("pydantic", "torch", "ruamel")]
    assert not [m for m in imported[:torch_line] if m.split(".")[0] == "torch"]
