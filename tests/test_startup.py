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


def _interrupt(*args: object, **kwargs: object) -> None:
    raise KeyboardInterrupt


def test_ctrl_c_while_checking_says_what_was_interrupted_and_that_nothing_was_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from specbench.cli import main
    from specbench.errors import EXIT_INTERRUPTED

    monkeypatch.setattr(execute_command, "check_before_launch", _interrupt)
    out = tmp_path / "acme" / "box"
    assert main(["execute", "resnet50", "--profile", "smoke", "--out", str(out)]) == EXIT_INTERRUPTED == 130
    assert capsys.readouterr().err.splitlines()[-1] == (
        "error: interrupted by Ctrl-C (SIGINT) while checking the spec and --out, before any run started: nothing "
        f"was written ({out} was not created)"
    )
    assert not out.exists()


@pytest.mark.needs("torch")  # the harness it interrupts is imported
def test_ctrl_c_while_the_machine_is_described_names_what_was_written_and_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from specbench.cli import main
    from specbench.run import harness

    out = tmp_path / "acme" / "box"
    (out / "resnet50" / "run_1").mkdir(parents=True)  # an earlier run, kept

    def interrupted(request: object) -> int:
        (out / "system.yaml").write_text("format_version: 1\n")
        raise KeyboardInterrupt

    monkeypatch.setattr(harness, "execute", interrupted)
    assert main(["execute", "resnet50", "--profile", "smoke", "--out", str(out)]) == 130
    assert capsys.readouterr().err.splitlines()[-1] == (
        "error: interrupted by Ctrl-C (SIGINT) while loading the workload, checking the configuration, describing "
        f"this machine, before any run started: {out} keeps what it held, and written before the interrupt: "
        "system.yaml"
    )
    assert (out / "resnet50" / "run_1").is_dir()


def test_ctrl_c_in_another_command_names_the_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import specbench.commands.specs as specs
    from specbench.cli import main

    monkeypatch.setattr(specs, "spec_rows", _interrupt)
    assert main(["specs"]) == 130
    assert capsys.readouterr().err.splitlines()[-1] == (
        "aborted: interrupted (Ctrl-C) during specbench specs, before it finished"
    )
