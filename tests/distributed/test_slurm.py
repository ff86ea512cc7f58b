"""An sbatch job of a smoke profile end to end on a real single-node Slurm (started by .ci/slurm.sh)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from specbench.cli import main
from specbench.validator import validate_submission

pytestmark = pytest.mark.needs("torch", "torchvision", "mlperf_logging")

REPO = Path(__file__).resolve().parents[2]


def slurm_up() -> bool:
    if shutil.which("sbatch") is None or shutil.which("sinfo") is None:
        return False
    probe = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True)
    return probe.returncode == 0 and "idle" in probe.stdout


@pytest.fixture
def slurm() -> None:
    if not slurm_up():
        if os.environ.get("CI"):
            pytest.fail("CI must start Slurm first (.ci/slurm.sh start)")
        pytest.skip("no running Slurm here (start one with .ci/slurm.sh start)")


def test_sbatch_job_runs_a_smoke_profile(slurm: None, tmp_path: Path) -> None:
    out = tmp_path / "acme" / "slurm-box"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [
        sys.executable, "-m", "specbench.cli", "execute", "caraml-resnet50", "--profile", "smoke", "--power", "none",
        "--slurm", "--nodes", "1", "--gpus-per-node", "0", "--time", "00:10:00", "--wait", "--out", str(out),
    ]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "job " in proc.stderr
    script = (tmp_path / "acme" / "slurm-box.slurm" / "specbench-caraml-resnet50.sbatch").read_text()
    assert "srun --kill-on-bad-exit=1" in script and "specbench.run.launch" in script
    report = validate_submission(out)
    assert report.compliant(), [f.to_dict() for f in report.findings]
    assert (out / "caraml-resnet50" / "run_1" / "result.json").is_file()


def test_dry_run_prints_the_script(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = main([
        "execute", "llm-gpt", "--slurm", "--nodes", "4", "--gpus-per-node", "4", "--partition", "booster",
        "--time", "02:00:00", "--dry-run", "--out", str(tmp_path / "jsc" / "booster"),
    ])  # fmt: skip
    assert code == 0
    script = capsys.readouterr().out
    assert script.startswith("#!/bin/bash\n#SBATCH --job-name=specbench-llm-gpt\n#SBATCH --nodes=4\n")
    assert "#SBATCH --gpus-per-node=4" in script and "#SBATCH --partition=booster" in script
    assert "--nproc-per-node=4" in script and "--nnodes=$SLURM_NNODES" in script
    assert not (tmp_path / "jsc").exists()
