"""Data-parallel runs on the CPU through torchrun (gloo): one valid submission, each device counted once.

Every job gets its own rendezvous (torchrun --standalone), so these tests use no fixed port; the
training tests use seeds measured with benchmarks/smoke_seeds.py (docs/execute.md lists them).
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from execute_support import REPO, WATTS, cli_env, recorded_trace, replayed_energy_matches, run_cli

from specbench.errors import EXIT_RUN_FAILED, UsageError
from specbench.run.distributed import Dist, from_env
from specbench.run.launch import rendezvous_args, sbatch_script, torchrun_command
from specbench.validator import validate_submission

pytestmark = pytest.mark.needs("torch", "mlperf_logging")

LLM_DDP_SEED = 2  # measured: benchmarks/results/smoke_seeds/llm-gpt-ddp.json
LLM_FSDP_SEED = 3  # measured: benchmarks/results/smoke_seeds/llm-gpt-fsdp.json
EXTREME_WEATHER_DDP_SEED = 4  # measured: benchmarks/results/smoke_seeds/extreme-weather-ddp.json (2.0.0: 0.822)

FAIL_ON_RANK_1 = """\
import os
if os.environ.get("RANK") == "1":
    from specbench.workloads.resnet50.executor import ResNet50Executor

    def train(self, ctx, state):
        ctx.run_start()
        raise RuntimeError("injected failure on rank 1")

    ResNet50Executor.train = train
"""


def test_a_spec_path_runs_as_two_gloo_processes_into_one_valid_submission(tmp_path: Path) -> None:
    trace = recorded_trace(tmp_path / "recorded")
    out = tmp_path / "acme" / "two-procs"
    args = [
        "execute", "specs/caraml-resnet50.yaml", "--profile", "smoke", "--nproc-per-node", "2",
        "--power", f"replay:{trace}", "--out", str(out),
    ]  # fmt: skip
    proc = run_cli(args, cwd=REPO)  # a relative spec path, as a user in the checkout types it
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    report = validate_submission(out)
    assert report.compliant(), [f.to_dict() for f in report.findings]
    run = out / "caraml-resnet50" / "run_1"
    result = json.loads((run / "result.json").read_text())
    assert result["devices"] == 2 and result["samples_processed"] == 160
    power = result["power"]
    assert sorted(power["devices"]) == ["gpu0", "gpu1"]
    assert replayed_energy_matches(power, result["duration_s"], sum(WATTS.values())), power
    metadata = json.loads((run / "power.json").read_text())
    keys = [d["key"] for meter in metadata["meters"] for d in meter["devices"]]
    assert sorted(keys) == ["gpu0", "gpu1"]  # measured once, by local rank 0 only
    log = (run / "log.txt").read_text()
    assert log.count('"key": "run_start"') == 1 and log.count('"key": "run_stop"') == 1  # rank 0 alone logs
    system = (out / "system.yaml").read_text()
    assert "world_size: 2" in system and "backend: gloo" in system


def test_uneven_batch_is_refused_before_launching_work(tmp_path: Path) -> None:
    args = [
        "execute", "caraml-resnet50", "--profile", "smoke", "--set", "global_batch_size=15", "--nproc-per-node", "2",
        "--power", "none", "--out", str(tmp_path / "a" / "b"),
    ]  # fmt: skip
    proc = run_cli(args, cwd=tmp_path, timeout=300)
    assert proc.returncode == 2
    assert "global_batch_size 15 does not split evenly over 2 processes" in proc.stderr
    assert re.search(r"error: rank [01] \(local rank [01]\) exited with code 2; its own message is above", proc.stderr)
    assert "Traceback" not in proc.stderr


def test_a_failing_rank_ends_the_job_with_its_message(tmp_path: Path) -> None:
    """Rank 1 fails after run_start; it must not wait in a barrier for rank 0, and torchrun ends the job."""
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(FAIL_ON_RANK_1)
    out = tmp_path / "acme" / "box"
    args = ["execute", "caraml-resnet50", "--profile", "smoke", "--nproc-per-node", "2", "--power", "none"]
    started = time.monotonic()
    proc = run_cli([*args, "--out", str(out)], cwd=tmp_path, timeout=240, PYTHONPATH=f"{hooks}:{REPO}")
    assert time.monotonic() - started < 200
    assert proc.returncode == EXIT_RUN_FAILED == 4, proc.stderr[-3000:]
    assert "error: rank 1: run 1 did not complete: RuntimeError: injected failure on rank 1" in proc.stderr
    assert "error: rank 1 (local rank 1) exited with code 4; its own message is above" in proc.stderr
    assert "Traceback" not in proc.stderr
    state = json.loads((out / "caraml-resnet50" / "run_1" / "state.json").read_text())
    assert state["status"] in ("incomplete", "running")  # rank 0 either ended the run or was stopped by torchrun


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return int(probe.getsockname()[1])


def test_two_nodes_stream_their_traces_into_one_valid_submission(tmp_path: Path) -> None:
    """Two torchrun 'nodes' on this host: each measures its devices, node 1 sends its spooled rows to rank 0."""
    trace = recorded_trace(tmp_path / "recorded")
    out = tmp_path / "acme" / "two-nodes"
    endpoint = f"localhost:{free_port()}"
    temp = [tmp_path / f"tmp-{node}" for node in range(2)]
    for folder in temp:
        folder.mkdir()
    args = [
        sys.executable, "-m", "specbench.cli", "execute", "caraml-resnet50", "--profile", "smoke", "--nnodes", "2",
        "--nproc-per-node", "1", "--rdzv-endpoint", endpoint, "--power", f"replay:{trace}", "--out", str(out),
    ]  # fmt: skip
    nodes = []
    for node in range(2):
        env = cli_env(SPECBENCH_POWER_CLAIM_DIR=str(tmp_path / f"claims-{node}"), TMPDIR=str(temp[node]))
        nodes.append(
            subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env)
        )
    errors = [node.communicate(timeout=600)[1] for node in nodes]
    assert [node.returncode for node in nodes] == [0, 0], [e[-2000:] for e in errors]
    report = validate_submission(out)
    assert report.compliant(), [f.to_dict() for f in report.findings]
    run = out / "caraml-resnet50" / "run_1"
    result = json.loads((run / "result.json").read_text())
    power = result["power"]
    assert sorted(power["devices"]) == ["n0:gpu0", "n0:gpu1", "n1:gpu0", "n1:gpu1"]
    assert replayed_energy_matches(power, result["duration_s"], 2 * sum(WATTS.values())), power
    rows = (run / "power.csv").read_text().splitlines()[1:]
    assert {row.split(",")[3] for row in rows} == {"n0:gpu0", "n0:gpu1", "n1:gpu0", "n1:gpu1"}
    metadata = json.loads((run / "power.json").read_text())
    assert [n["node"] for n in metadata["nodes"]] == [0, 1] and len(metadata["windows"]) == 2
    assert not [p for folder in temp for p in folder.glob("specbench-power-*")]  # node 1's spool is gone once sent


def test_roles_from_torchrun_environment() -> None:
    assert from_env({}) == Dist()
    dist = from_env({"WORLD_SIZE": "8", "RANK": "4", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "4", "GROUP_RANK": "1"})
    assert (dist.node, dist.nnodes, dist.writer, dist.owner) == (1, 2, False, True)


def test_launch_commands_use_torchrun_with_a_rendezvous_of_their_own() -> None:
    command = torchrun_command(["resnet50"], 4, 2, "head:29500", "job")
    assert command[1:3] == ["-m", "specbench.run.launch"]  # torchrun in-process, failures in one line each
    assert "--nproc-per-node=4" in command and "--rdzv-endpoint=head:29500" in command and "--rdzv-id=job" in command
    one_node = torchrun_command(["specs/resnet50.yaml"], 2)
    assert "--standalone" in one_node and not [a for a in one_node if a.startswith("--rdzv")]
    with pytest.raises(UsageError, match="--nnodes 2 needs --rdzv-endpoint HOST:PORT"):
        rendezvous_args(2, None)
    with pytest.raises(UsageError, match=re.escape("--rdzv-id 'specs/x.yaml': expected 1 to 64 letters")):
        rendezvous_args(2, "head:29500", "specs/x.yaml")
    script = sbatch_script(
        ["caraml-resnet50", "--out", "/shared/sub/acme/x"], job_name="specbench-x", nodes=2, gpus_per_node=4,
        nproc_per_node=4, partition="gpu", time_limit="01:00:00", cpus_per_task=32, log_dir="/shared/sub/acme/x/slurm",
    )  # fmt: skip
    assert (
        "#SBATCH --nodes=2" in script and "#SBATCH --gpus-per-node=4" in script and "#SBATCH --partition=gpu" in script
    )
    assert "srun --kill-on-bad-exit=1" in script and "--nnodes=$SLURM_NNODES" in script
    assert "--rdzv-endpoint=$HEAD:29500" in script and "--rdzv-id=$SLURM_JOB_ID" in script


@pytest.mark.parametrize(("parallelism", "seed"), [("ddp", LLM_DDP_SEED), ("fsdp", LLM_FSDP_SEED)])
def test_llm_data_parallel_reaches_its_loss_target(parallelism: str, seed: int, tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    out = tmp_path / "acme" / parallelism
    args = [
        "execute", "llm-gpt", "--profile", "smoke", "--power", "none", "--nproc-per-node", "2", "--seed", str(seed),
        "--set", "micro_batch_size=8", "--set", f"parallelism={parallelism}", "--out", str(out),
    ]  # fmt: skip
    proc = run_cli(args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((out / "llm-gpt" / "run_1" / "result.json").read_text())
    assert result["devices"] == 2 and result["quality"]["reached"] and result["seed"] == seed
    assert result["settings"]["parallelism"] == parallelism and result["level"] == "system"
    assert result["hyperparameters"]["gradient_accumulation_steps"] == 1  # 16 = 8 per micro-batch x 2 processes
    report = validate_submission(out)
    assert report.compliant(), [f.to_dict() for f in report.findings]


def test_extreme_weather_data_parallel_reaches_its_iou_target(tmp_path: Path) -> None:
    pytest.importorskip("torchvision")
    out = tmp_path / "acme" / "ew"
    args = [
        "execute", "extreme-weather", "--profile", "smoke", "--power", "none", "--nproc-per-node", "2",
        "--seed", str(EXTREME_WEATHER_DDP_SEED), "--out", str(out),
    ]  # fmt: skip
    proc = run_cli(args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((out / "extreme-weather" / "run_1" / "result.json").read_text())
    assert result["devices"] == 2 and result["epochs"] == 4  # the whole budget (HPC AI500 scoring)
    assert result["quality"]["reached"] and result["quality"]["achieved"] >= 0.75
    assert result["samples_processed"] == 256 * result["epochs"]  # 16 per step, 8 on each process
    report = validate_submission(out)
    assert report.compliant(), [f.to_dict() for f in report.findings]
