"""What the execute tests share: a recorded power trace to replay, and `specbench execute` in a subprocess."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from specbench.power.base import Device
from specbench.power.trace import FORMAT, FORMAT_VERSION, Sample, write_metadata, write_samples

REPO = Path(__file__).resolve().parent.parent
WATTS = {"gpu0": 100.0, "gpu1": 250.0}


def recorded_trace(folder: Path, seconds: float = 600.0, period: float = 0.1, scope: str = "accelerator") -> Path:
    """A recorded trace of two devices (accelerators by default) at constant power, for the replay meter."""
    devices = [Device(key=key, meter="recorded", scope=scope, energy_counter="test counter") for key in WATTS]
    samples = []
    for i in range(int(seconds / period)):
        t = i * period
        for key, watts in WATTS.items():
            samples.append(Sample(i, 1000.0 + t, 1.8e9 + t, key, watts, watts, 5000.0 + watts * t, 0.0))
    write_samples(folder, samples)
    write_metadata(
        folder,
        {"format": FORMAT, "format_version": FORMAT_VERSION, "csv": "power.csv",
         "meters": [{"kind": "recorded", "info": {}, "devices": [d.to_dict() for d in devices]}]},
    )  # fmt: skip
    return folder


def replayed_energy_matches(power: dict[str, Any], duration_s: float, watts: float, period: float = 0.1) -> bool:
    """Whether a window's energy of a replayed constant trace is `watts` x `duration_s`, to what replay allows.

    The replay meter holds each recorded reading for its period, as a sensor holds its last update,
    so the counters read at a window's two edges are each up to one period old: the window's energy
    is exact to one period's energy. The window is opened and closed by the run's own thread beside
    run_start and run_stop, which a loaded machine can delay: 2% of the duration more is allowed for
    that (a CI run under load saw 0.32 s of 29.1 s), inside the validator's 5% (SB-PWR-008).
    """
    return abs(float(power["energy_j"]) - watts * duration_s) <= (1.5 * period + 0.02 * duration_s) * watts


def cli_env(**extra: str) -> dict[str, str]:
    """The environment of a `specbench` subprocess: this checkout's code, one thread per process."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", **extra}
    env.pop("SPECBENCH_POWER_OWNER", None)
    return env


def run_cli(args: list[str], cwd: Path, timeout: float = 600, **env: str) -> subprocess.CompletedProcess[str]:
    """`specbench ARGS` in its own process group, which is killed whole if it outlives `timeout`."""
    command = [sys.executable, "-m", "specbench.cli", *args]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(**env), cwd=cwd,
        start_new_session=True,
    ) as proc:  # fmt: skip
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            raise AssertionError(f"specbench {' '.join(args)} still ran after {timeout} s:\n{err[-3000:]}") from None
    return subprocess.CompletedProcess(command, proc.returncode, out, err)
