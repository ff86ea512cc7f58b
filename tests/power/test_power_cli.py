"""`specbench power -- CMD`: exit codes, the summary, the child's environment, signal forwarding."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from specbench.cli import main as cli_main
from specbench.commands.power import command, render_summary
from specbench.power import METERS, Meter, MeterUnavailable, read_trace
from specbench.power.energy import DeviceEnergy
from specbench.power.run import MeasuredCommand
from specbench.power.sampler import Window

REPO = Path(__file__).resolve().parents[2]


def run_cli(args: list[str]):
    return CliRunner().invoke(command, args, catch_exceptions=False)


def test_the_exit_code_is_the_command_s_and_the_trace_is_written(tmp_path: Path) -> None:
    out = tmp_path / "trace"
    result = run_cli(
        [
            "--meters",
            "null",
            "--interval-ms",
            "20",
            "--out",
            str(out),
            "--",
            sys.executable,
            "-c",
            "raise SystemExit(3)",
        ]
    )
    assert result.exit_code == 3
    trace = read_trace(out)
    assert trace.metadata["command"] == [sys.executable, "-c", "raise SystemExit(3)"]
    assert trace.metadata["exit_code"] == 3
    assert trace.metadata["sampling"]["requested_period_s"] == 0.02
    duration, energy, trace_line = result.stderr.splitlines()
    assert re.fullmatch(r"duration: \d+\.\d{3} s", duration)
    assert energy == "energy: not measured: measurement switched off (--meters null)"
    assert trace_line == f"trace: {out}/power.csv, {out}/power.json; exit code 3"


def test_options_after_the_command_belong_to_the_command(tmp_path: Path) -> None:
    marker = tmp_path / "args.txt"
    code = f"import sys; open({str(marker)!r}, 'w').write(' '.join(sys.argv[1:]))"
    result = run_cli(["--meters", "null", "--out", str(tmp_path / "t"), sys.executable, "-c", code, "--out", "-x"])
    assert result.exit_code == 0
    assert marker.read_text() == "--out -x"


def test_the_child_does_not_measure_again(tmp_path: Path) -> None:
    marker = tmp_path / "owner.txt"
    code = f"import os; open({str(marker)!r}, 'w').write(os.environ['SPECBENCH_POWER_OWNER'])"
    assert run_cli(["--meters", "null", "--out", str(tmp_path / "t"), "--", sys.executable, "-c", code]).exit_code == 0
    assert marker.read_text() == "0"


def run_and_signal(tmp_path: Path, handled: dict[int, int], send: list[int]):
    """Run a child that exits with handled[signal]; send `send` to this process once it is ready."""
    ready = tmp_path / "ready"
    handlers = "\n".join(f"signal.signal({int(s)}, lambda *a: sys.exit({code}))" for s, code in handled.items())
    child = f"import signal, sys, time\n{handlers}\nopen({str(ready)!r}, 'w').close()\ntime.sleep(60)\n"
    reached_pytest: list[int] = []

    def fallback(number: int, frame: object) -> None:
        reached_pytest.append(number)

    previous = {s: signal.signal(s, fallback) for s in send}

    def send_when_ready() -> None:
        for _ in range(3000):
            if ready.exists():
                for signum in send:
                    os.kill(os.getpid(), signum)
                return
            time.sleep(0.01)

    sender = threading.Thread(target=send_when_ready)
    sender.start()
    try:
        result = run_cli(["--meters", "null", "--out", str(tmp_path / "t"), "--", sys.executable, "-c", child])
    finally:
        sender.join()
        restored = {s: signal.signal(s, handler) for s, handler in previous.items()}
    assert reached_pytest == []
    assert all(handler is fallback for handler in restored.values())
    return result


@pytest.mark.parametrize("signum", [signal.SIGUSR1, signal.SIGTERM, signal.SIGINT])
def test_a_signal_is_forwarded_to_the_command(signum: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("specbench.power.run._terminal_sent_sigint", lambda: False)
    assert run_and_signal(tmp_path, {signum: 42}, [signum]).exit_code == 42


def test_sigint_from_the_terminal_is_not_sent_twice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("specbench.power.run._terminal_sent_sigint", lambda: True)
    result = run_and_signal(tmp_path, {signal.SIGINT: 42, signal.SIGTERM: 43}, [signal.SIGINT, signal.SIGTERM])
    assert result.exit_code == 43


def test_a_command_killed_by_a_signal_exits_128_plus_the_signal(tmp_path: Path) -> None:
    code = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    result = run_cli(["--meters", "null", "--out", str(tmp_path / "t"), "--", sys.executable, "-c", code])
    assert result.exit_code == 128 + signal.SIGKILL


def test_a_missing_command_exits_127_and_leaves_no_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "power" / "t"
    assert cli_main(["power", "--meters", "null", "--out", str(out), "--", "no-such-command-xyz"]) == 127
    assert capsys.readouterr().err == (
        "error: cannot run 'no-such-command-xyz': no such command on PATH; check its spelling, or give its path\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_the_default_folder_is_not_made_for_a_missing_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli_main(["power", "--meters", "null", "--", "nosuchcmd"]) == 127
    assert capsys.readouterr().err.startswith("error: cannot run 'nosuchcmd': no such command on PATH")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("make", "code", "message"),
    [
        (lambda p: None, 127, "error: cannot run '{p}': no such file; check the path\n"),
        (lambda p: p.mkdir(), 126, "error: cannot run '{p}': a folder, not a program; name the program inside it\n"),
        (
            lambda p: p.write_text("#!/bin/sh\n"),
            126,
            "error: cannot run '{p}': not executable; chmod +x {p}, or run it through its interpreter\n",
        ),
    ],
    ids=["missing", "folder", "not-executable"],
)
def test_a_path_that_cannot_run_exits_with_env_s_codes(
    make: Callable[[Path], object], code: int, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = tmp_path / "prog"
    make(program)
    out = tmp_path / "t"
    assert cli_main(["power", "--meters", "null", "--out", str(out), "--", str(program)]) == code
    assert capsys.readouterr().err == message.format(p=program)
    assert not out.exists()


def test_a_command_the_kernel_refuses_leaves_no_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Executable but no format the kernel runs (no #! line): Popen fails after the window opened; the trace goes."""
    program = tmp_path / "prog"
    program.write_bytes(b"\x00\x01 not a program\n")
    program.chmod(0o755)
    out = tmp_path / "made" / "t"
    assert cli_main(["power", "--meters", "null", "--out", str(out), "--", str(program)]) == 126
    assert capsys.readouterr().err == (
        f"error: cannot run '{program}': not a program this machine runs (exec format error); "
        "a script needs its #! line\n"
    )
    assert not (tmp_path / "made").exists()


def test_an_existing_folder_is_kept_when_the_command_cannot_start(tmp_path: Path) -> None:
    out = tmp_path / "t"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    program = tmp_path / "prog"
    program.write_bytes(b"\x00\x01\n")
    program.chmod(0o755)
    assert cli_main(["power", "--meters", "null", "--out", str(out), "--", str(program)]) == 126
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_an_unknown_meter_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["power", "--meters", "rapll", "--", "true"]) == 2
    assert capsys.readouterr().err.startswith("error: unknown power meter 'rapll' (did you mean 'rapl'?)")


def test_the_summary_table() -> None:
    window = Window(
        start_mono_s=10.0,
        stop_mono_s=70.0,
        start_wall_s=0.0,
        stop_wall_s=60.0,
        devices=(
            DeviceEnergy("nvml:0", "accelerator", 60.0, 30_000.0, "counter", 30_000.0, 29_850.0, 1.00502, 601),
            DeviceEnergy(
                "rapl:package-0", "cpu_package", 60.0, None, "not_measured", None, None, None, 1, note="no reads"
            ),
        ),
    )
    text = render_summary(MeasuredCommand(["train"], 0, window, Path("out")), {"hwmon": "no sensors"})
    assert text == textwrap.dedent(
        """\
        device          scope        energy J      mean power W    method        counter/integral    samples
        --------------  -----------  ------------  --------------  ------------  ------------------  ---------
        nvml:0          accelerator  30000.0       500.0           counter       1.0050              601
        rapl:package-0  cpu_package  not measured  not measured    not measured  n/a                 1

        accelerator: 30000.0 J over 60.000 s
        cpu_package: not measured
        note: rapl:package-0: no reads
        note: hwmon skipped: no sensors
        trace: out/power.csv, out/power.json; exit code 0"""
    )


def _null_window(reason: str) -> Window:
    null = DeviceEnergy("null", "none", 2.5, None, "not_measured", None, None, None, 26, note=reason)
    return Window(start_mono_s=1.0, stop_mono_s=3.5, start_wall_s=0.0, stop_wall_s=2.5, devices=(null,))


def test_with_no_meter_the_summary_gives_the_duration_and_each_reason_once() -> None:
    skipped = {"nvml": "no NVIDIA driver", "rapl": "no powercap zones"}
    reason = "no power meter is available here: nvml: no NVIDIA driver; rapl: no powercap zones"
    text = render_summary(MeasuredCommand(["train"], 0, _null_window(reason), Path("out")), skipped)
    assert text == textwrap.dedent(
        """\
        duration: 2.500 s
        energy: not measured: no power meter works here (2 skipped, each with its reason below)
        note: nvml skipped: no NVIDIA driver
        note: rapl skipped: no powercap zones
        trace: out/power.csv, out/power.json; exit code 0"""
    )


def test_a_process_that_does_not_own_the_devices_says_so_once() -> None:
    window = _null_window("not the power owner: owner=False")
    text = render_summary(MeasuredCommand(["train"], 4, window, Path("out")), {})
    assert text.splitlines() == [
        "duration: 2.500 s",
        "energy: not measured: not the power owner: owner=False",
        "trace: out/power.csv, out/power.json; exit code 4",
    ]


def test_no_meter_here_end_to_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--meters auto` where no meter works: the duration, "not measured" with why, each meter's reason once."""
    for name in ("nvml", "amdsmi", "rapl", "hwmon"):
        monkeypatch.setitem(METERS._items, name, _unavailable(f"no {name} in this test"))
    out = tmp_path / "t"
    assert cli_main(["power", "--out", str(out), "--", sys.executable, "-c", "pass"]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert re.fullmatch(r"duration: \d+\.\d{3} s", lines[0])
    assert lines[1:] == [
        "energy: not measured: no power meter works here (4 skipped, each with its reason below)",
        "note: nvml skipped: no nvml in this test",
        "note: amdsmi skipped: no amdsmi in this test",
        "note: rapl skipped: no rapl in this test",
        "note: hwmon skipped: no hwmon in this test",
        f"trace: {out}/power.csv, {out}/power.json; exit code 0",
    ]


def _unavailable(reason: str) -> Callable[[object], Meter]:
    def factory(options: object) -> Meter:
        raise MeterUnavailable(reason)

    return factory


def test_python_m_specbench_power_runs_the_command(tmp_path: Path) -> None:
    code = "import sys; print('child output'); sys.exit(5)"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "specbench",
            "power",
            "--meters",
            "null",
            "--out",
            str(tmp_path / "t"),
            "--",
            sys.executable,
            "-c",
            code,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 5
    assert done.stdout == "child output\n"
    assert "exit code 5" in done.stderr


def test_the_power_package_imports_nothing_outside_the_standard_library() -> None:
    code = (
        "import sys, specbench.power\n"
        "heavy = [m for m in ('pydantic', 'torch', 'pynvml', 'amdsmi', 'click', 'tabulate') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=60)
