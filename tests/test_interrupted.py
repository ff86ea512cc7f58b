"""Real signals sent to `specbench execute` in the middle of a run: the run is recorded as interrupted or killed,
the next execute into the folder runs it again under its number, and the submission validates."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from execute_support import cli_env, recorded_trace, run_cli

from specbench.power.base import PowerError
from specbench.power.csvread import read_trace
from specbench.run.lifecycle import signals_as_interrupts
from specbench.run.request import RunInterrupted
from specbench.run.runfolder import KILLED
from specbench.validator import validate_submission

pytestmark = pytest.mark.needs("torch", "torchvision", "mlperf_logging")

SPEC = "caraml-resnet50"
"""The fastest smoke spec: a few warm-up steps, then a timed window of 10 steps."""
REMOVED = "removed (a run stopped before its end is not a result)"


def start(args: list[str], cwd: Path) -> subprocess.Popen[bytes]:
    """`specbench ARGS` in its own process group (as a shell's job), its output into files beside the test."""
    out, err = (cwd / "execute.out").open("wb"), (cwd / "execute.err").open("wb")
    command = [sys.executable, "-m", "specbench.cli", *args]
    return subprocess.Popen(
        command,
        stdout=out,
        stderr=err,
        env=cli_env(),
        cwd=cwd,
        start_new_session=True,
        preexec_fn=_ctrl_c_as_on_a_terminal,
    )


def _ctrl_c_as_on_a_terminal() -> None:
    """SIGINT back to its default in the child: a shell starts background jobs (`cmd &`, as a CI script may run
    the tests) with SIGINT ignored, the child inherits that, and specbench rightly leaves an ignored SIGINT alone."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def wait_until(proc: subprocess.Popen[bytes], ready: Any, what: str, timeout: float = 900) -> Any:
    """Poll `ready()` until it returns something true; fail if the process ends first or `timeout` passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = ready()
        if value:
            return value
        if proc.poll() is not None:
            raise AssertionError(f"execute ended (code {proc.returncode}) before {what}")
        time.sleep(0.2)
    raise AssertionError(f"no {what} after {timeout} s")


def training_state(run: Path) -> dict[str, Any] | None:
    """The run's state.json once it says the run is training (run_start logged), else None."""
    try:
        state = json.loads((run / "state.json").read_text())
    except (OSError, ValueError):
        return None
    return state if state.get("phase") == "training" else None


def traced_after(run: Path, t_wall_s: float) -> float | None:
    """The wall time of the trace's last row, once one lies after `t_wall_s`."""
    try:
        samples = read_trace(run).samples
    except (PowerError, OSError, ValueError):
        return None
    last = max((s.t_wall_s for s in samples), default=0.0)
    return last if last > t_wall_s else None


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def log_keys(run: Path) -> list[str]:
    return [
        json.loads(line[9:])["key"] for line in (run / "log.txt").read_text().splitlines() if line[:9] == ":::MLLOG "
    ]


def check_resumed(args: list[str], cwd: Path, run: Path, before: dict[str, Any], ended: str) -> dict[str, Any]:
    """Execute again into the folder: the stopped run is replaced under its number and recorded; its result."""
    resumed = run_cli(args, cwd=cwd, timeout=1200)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"{run}: {ended}; {REMOVED}" in resumed.stderr
    assert sorted(p.name for p in run.parent.iterdir()) == ["run_1", "submission.yaml"]
    state = json.loads((run / "state.json").read_text())
    assert state["status"] == "done" and state["replaces"] == {
        "run": 1, "ended": ended, "started_at": before["started_at"], "seed": before["seed"],
    }  # fmt: skip
    result = json.loads((run / "result.json").read_text())
    assert (result["run"], result["status"], result["seed"]) == (1, "success", before["seed"])
    return result


@pytest.mark.slow
def test_ctrl_c_mid_run_is_recorded_and_the_next_execute_completes_the_submission(tmp_path: Path) -> None:
    out = tmp_path / "acme" / "box"
    run = out / SPEC / "run_1"
    # Batch 128 keeps the smoke run in training for seconds, so the signal lands inside it on a fast machine too.
    args = ["execute", SPEC, "--profile", "smoke", "--seed", "11", "--power", "none", "--set", "global_batch_size=128"]
    args += ["--out", str(out)]
    proc = start(args, tmp_path)
    try:
        wait_until(proc, lambda: training_state(run), "a run in training")
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C on a terminal reaches the whole foreground group
        assert proc.wait(timeout=600) == 130
    finally:
        stop(proc)
    errors = [line for line in (tmp_path / "execute.err").read_text().splitlines() if line.startswith("error:")]
    assert errors == ["error: interrupted by Ctrl-C (SIGINT)"]
    state = json.loads((run / "state.json").read_text())
    assert (state["status"], state["phase"], state["interrupted_by"]) == ("incomplete", "training", "SIGINT")
    result = json.loads((run / "result.json").read_text())
    assert (result["status"], result["reason"]) == ("incomplete", "interrupted by Ctrl-C (SIGINT)")
    assert log_keys(run)[-1] == "run_stop"
    before = validate_submission(out)
    assert before.exit_code() == 1 and "SB-RUN-005" in before.codes()

    check_resumed(args, tmp_path, run, state, "interrupted by Ctrl-C (SIGINT)")
    validated = run_cli(["validate", str(out)], cwd=tmp_path)
    assert validated.returncode == 0 and validated.stdout.startswith(f"{out}: compliant"), validated.stdout


@pytest.mark.slow
def test_sigkill_mid_run_keeps_the_trace_and_the_next_execute_replaces_the_run(tmp_path: Path) -> None:
    out = tmp_path / "acme" / "box"
    run = out / SPEC / "run_1"
    trace = recorded_trace(tmp_path / "recorded")
    args = ["execute", SPEC, "--profile", "smoke", "--seed", "3", "--power", f"replay:{trace}", "--out", str(out)]
    proc = start(args, tmp_path)
    try:
        state = wait_until(proc, lambda: training_state(run), "a run in training")
        wait_until(proc, lambda: traced_after(run, state["run_start_wall"]), "a power row after run_start")
        os.killpg(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=600) == -signal.SIGKILL
    finally:
        stop(proc)
    assert read_trace(run).samples and (run / "power.json").is_file()  # whole rows up to the kill
    assert "run_start" in log_keys(run) and "run_stop" not in log_keys(run)
    assert not (run / "result.json").exists()
    assert json.loads((run / "state.json").read_text())["status"] == "running"
    before = validate_submission(out)
    assert before.exit_code() == 1 and {"SB-RUN-005", "SB-STR-002"} <= before.codes()

    result = check_resumed(args, tmp_path, run, state, KILLED)
    assert result["power"]["measured"] is True
    report = validate_submission(out)
    assert [(f.code, f.location.file) for f in report.findings] == [
        ("SB-PRV-001", f"{SPEC}/run_1/power.json"),  # a replayed trace is never ranked per watt
    ]
    assert report.exit_code() == 0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_interrupt_a_run_unless_ignored(sig: signal.Signals) -> None:
    previous = signal.signal(sig, signal.SIG_DFL)
    try:
        with pytest.raises(RunInterrupted) as caught, signals_as_interrupts():
            os.kill(os.getpid(), sig)
            time.sleep(5)  # the handler raises as soon as the signal is delivered
        assert (str(caught.value), caught.value.signal_name) == (f"interrupted by {sig.name}", sig.name)
        signal.signal(sig, signal.SIG_IGN)  # as nohup leaves SIGHUP
        with signals_as_interrupts():
            os.kill(os.getpid(), sig)
        assert signal.getsignal(sig) is signal.SIG_IGN
    finally:
        signal.signal(sig, previous)
