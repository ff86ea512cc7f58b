"""Bounded cost: logs and traces over their bounds are refused with a finding naming the file, never a crash; the
log reader streams; a re-run larger than this host is refused before anything starts."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from support.committed import committed

from specbench.cli import main
from specbench.errors import UsageError
from specbench.files import write_manifest
from specbench.formats import mllog
from specbench.formats.mllog import MLLOG_LINES, PROBLEMS_KEPT, parse_log
from specbench.reproduce.host import check_cpu_scale, check_gpu_scale
from specbench.validator import powermeta
from specbench.validator.files import DEFAULT_LIMITS

REPO = Path(__file__).resolve().parent.parent.parent
SUBMISSIONS = committed()
CPU_LOG = "resnet50/run_1/log.txt"
GPU_CSV = "caraml-resnet50/run_1/power.csv"


def copy_of(system: str, tmp_path: Path) -> Path:
    target = tmp_path / "specbench" / system
    shutil.copytree(SUBMISSIONS / system, target)
    return target


def findings_of(root: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[dict[str, object]]]:
    """`specbench validate ROOT --format json`: its exit code and findings."""
    code = main(["validate", str(root), "--format", "json"])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    report = json.loads(captured.out)
    return code, [f for sub in report["submissions"] for f in sub["findings"]]


def refusal(findings: list[dict[str, object]], file: str) -> str:
    """The message of the one SB-STR-003 finding on `file`."""
    found = [f for f in findings if f["code"] == "SB-STR-003" and f["file"] == file]
    assert len(found) == 1, findings
    return str(found[0]["message"])


def test_a_log_of_more_mllog_lines_than_its_bound_is_refused_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = copy_of("cpu-2core", tmp_path)
    with (root / CPU_LOG).open("a") as log:
        log.write(":::MLLOG {}\n" * MLLOG_LINES)
    write_manifest(root)
    code, findings = findings_of(root, capsys)
    assert code == 1
    found = (root / CPU_LOG).read_text().count(":::MLLOG ")
    assert refusal(findings, CPU_LOG) == (
        f"expected at most {MLLOG_LINES} MLLOG lines, found {found}; the log is not read"
    )
    assert not [f for f in findings if f["code"] == "SB-LOG-001"]


def test_a_log_over_its_byte_bound_is_refused_unread(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = copy_of("cpu-2core", tmp_path)
    os.truncate(root / CPU_LOG, DEFAULT_LIMITS.log_bytes + 1)  # sparse: nothing is written
    write_manifest(root)
    code, findings = findings_of(root, capsys)
    assert code == 1
    assert refusal(findings, CPU_LOG).startswith(f"expected at most {DEFAULT_LIMITS.log_bytes} bytes, found")


def test_a_trace_of_more_rows_than_its_bound_is_refused_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = copy_of("h200", tmp_path)
    rows = (root / GPU_CSV).read_text().count("\n") - 1
    monkeypatch.setattr(powermeta, "CSV_ROWS", rows - 1)
    write_manifest(root)
    code, findings = findings_of(root, capsys)
    assert code == 1
    assert refusal(findings, GPU_CSV) == f"expected at most {rows - 1} rows after the header, found {rows}"


def test_a_sparse_trace_over_its_byte_bound_is_refused_unread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = copy_of("h200", tmp_path)
    os.truncate(root / GPU_CSV, 2 * 1024**3)
    write_manifest(root)
    code, findings = findings_of(root, capsys)
    assert code == 1
    assert refusal(findings, GPU_CSV).startswith(f"expected at most {DEFAULT_LIMITS.csv_bytes} bytes, found")


def test_the_log_is_parsed_piece_by_piece_as_it_was_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    event = ':::MLLOG {"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": "k", "value": 1, "metadata": {}}'
    text = "\n".join([event, ":::MLLOG {}", "noise", "", event + "\r", ':::MLLOG {"a": 1, "a": 2}', event]) + "\n"
    whole = parse_log.__wrapped__(text)  # type: ignore[attr-defined]
    monkeypatch.setattr(mllog, "PIECE_CHARS", 7)
    pieces = parse_log.__wrapped__(text)  # type: ignore[attr-defined]
    assert pieces.lines == whole.lines == 7
    assert [e.line for e in pieces.events] == [e.line for e in whole.events] == [1, 5, 7]
    assert pieces.problems == whole.problems and [p.line for p in pieces.problems] == [2, 6]


def test_a_log_keeps_its_first_problems_and_counts_the_rest() -> None:
    log = parse_log.__wrapped__(":::MLLOG {}\n" * (PROBLEMS_KEPT + 5))  # type: ignore[attr-defined]
    assert len(log.problems) == PROBLEMS_KEPT and log.problems_left_out == 5
    assert log.problems[-1].line == PROBLEMS_KEPT and log.lines == PROBLEMS_KEPT + 5


def test_a_cpu_re_run_of_more_processes_than_usable_cpus_is_refused_before_it_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = copy_of("cpu-2core", tmp_path)
    system = root / "system.yaml"
    system.write_text(system.read_text().replace("world_size: 1", "world_size: 8"))
    result = root / "resnet50" / "run_1" / "result.json"
    result.write_text(result.read_text().replace('"devices": 1,', '"devices": 8,'))
    write_manifest(root)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the re-run started")

    monkeypatch.setattr("specbench.reproduce.rerun.this_host", never)
    monkeypatch.setattr("specbench.reproduce.rerun.run_plan", never)
    assert main(["reproduce", str(root), "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == (
        "error: cannot reproduce on this host: the submission ran 8 processes on the CPU (system.yaml "
        "communication.world_size), and this host has 2 usable CPUs (os.sched_getaffinity); run reproduce on a "
        "host with at least 8 CPUs\n"
    )
    assert not (tmp_path / "out").exists()


def test_a_re_run_needs_as_many_cpus_or_visible_gpus_as_its_processes_and_accelerators() -> None:
    check_cpu_scale(2, cpus=2)
    check_gpu_scale(2, 2, gpus=2)
    with pytest.raises(UsageError, match=r"ran 3 processes on the CPU .* this host has 2 usable CPUs"):
        check_cpu_scale(3, cpus=2)
    with pytest.raises(UsageError, match=r"ran 8 processes on 8 GPUs .* this host has 2 visible GPUs"):
        check_gpu_scale(8, 8, gpus=2)
    with pytest.raises(UsageError, match=r"ran 1 processes on 2 GPUs .* at least 2 GPUs"):
        check_gpu_scale(1, 2, gpus=1)
