"""`specbench validate`: exact output, exit codes, folder expansion, --spec, --werror, --jobs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from make_submission import make_submission
from mutate import edit_rows, resign, run_dir, set_hyperparameter
from support.committed import committed
from validator_bases import Bases

from specbench.commands.validate import command
from specbench.errors import EXIT_UNUSABLE, InputError
from specbench.files import write_manifest
from specbench.validator import validate_many, validate_submission

REPO = Path(__file__).resolve().parents[2]


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(command, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def test_compliant_exits_0(bases: Bases, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bases.copy(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert invoke("acme/box1") == (0, "acme/box1: compliant\n")
    assert invoke("acme/box1/resnet50") == (0, "acme/box1/resnet50: compliant\n")


def test_findings_are_grouped_by_severity_and_file(
    bases: Bases, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = bases.copy(tmp_path)
    set_hyperparameter(root, "optimizer", "adam")
    (run_dir(root) / "notes.txt").write_text("hello\n")
    resign(root)
    (run_dir(root) / "state.json").write_text('{"status": "done"}\n')
    monkeypatch.chdir(tmp_path)
    code, output = invoke("acme/box1")
    assert code == 1
    assert output == (
        "acme/box1: non-compliant: 2 error(s), 1 warning(s)\n"
        "\n"
        "errors (2)\n"
        "  resnet50/run_1/state.json\n"
        "    SB-INT-001 file differs from the manifest: expected sha256 "
        + output.split("expected sha256 ")[1].split("\n")[0]
        + "\n"
        "      hint: the file changed after the run: restore it, or re-run; never edit results by hand\n"
        "  resnet50/submission.yaml\n"
        "    14:14 hyperparameters.optimizer: SB-EQV-001 parameter breaks its rule: layer workload parameter "
        "'optimizer' at the system level: expected 'sgd', found \"adam\"\n"
        "      hint: use the value the spec's rule allows at this level, or submit at a level where the layer may vary\n"
        "\n"
        "warnings (1)\n"
        "  resnet50/run_1/notes.txt\n"
        "    SB-STR-009 unexpected file or folder: expected only log.txt, result.json, state.json, power.csv, "
        "power.json, error.txt here\n"
        "      hint: remove it: a submission holds only the files of docs/submission-format.md\n"
    )


def test_werror_and_json(bases: Bases, tmp_path: Path) -> None:
    root = bases.copy(tmp_path)
    (run_dir(root) / "notes.txt").write_text("hello\n")
    resign(root)
    assert invoke(str(root))[0] == 0
    code, output = invoke(str(root), "--werror", "--format", "json")
    data = json.loads(output)
    assert code == 1 and data["exit_code"] == 1 and data["werror"] is True
    (entry,) = data["submissions"]
    assert entry["compliant"] is False and entry["warnings"] == 1
    assert entry["findings"] == [
        {
            "code": "SB-STR-009",
            "severity": "warning",
            "file": "resnet50/run_1/notes.txt",
            "line": None,
            "column": None,
            "json_path": None,
            "message": "expected only log.txt, result.json, state.json, power.csv, power.json, error.txt here",
            "hint": "remove it: a submission holds only the files of docs/submission-format.md",
        }
    ]


def test_unusable_paths_exit_2(bases: Bases, tmp_path: Path) -> None:
    root = bases.copy(tmp_path)
    code, output = invoke(str(root), str(tmp_path / "missing"))
    assert code == EXIT_UNUSABLE
    assert output.startswith(f"{root}: compliant\n")
    assert f"{tmp_path / 'missing'}: unusable" in output
    assert output.endswith("2 submissions: 1 compliant, 0 non-compliant, 1 unusable\n")


def test_a_folder_of_submissions_is_expanded_and_validated_in_parallel(bases: Bases, tmp_path: Path) -> None:
    first = bases.copy(tmp_path)
    second = bases.copy(tmp_path / "more", failed_runs=(1,), system="box2")  # its own runs: no SB-DUP-*
    serial = invoke(str(tmp_path))
    parallel = invoke(str(tmp_path), "--jobs", "2")
    assert serial == parallel
    code, output = serial
    assert code == 1
    assert output.index(f"{first}: compliant") < output.index(f"{second}: non-compliant")


def test_validate_many_in_processes_equals_serial(bases: Bases, tmp_path: Path) -> None:
    paths = [bases.copy(tmp_path / "a"), bases.copy(tmp_path / "b", runs=2, system="box2"), tmp_path / "none"]
    serial = [r.to_dict() for r in validate_many(paths)]
    parallel = [r.to_dict() for r in validate_many(paths, jobs=3)]
    assert serial == parallel
    assert [r["exit_code"] for r in serial] == [0, 1, 2]


def test_spec_option_adds_a_spec(tmp_path: Path) -> None:
    spec = tmp_path / "my-resnet50.yaml"
    text = (REPO / "specs" / "released" / "resnet50-1.0.0.yaml").read_text()
    spec.write_text(
        text.replace("extends: ../rules/hpcai500.yaml", "extends: hpcai500").replace(
            'version: "1.0.0"', 'version: "1.0.1"'
        )
    )
    root = make_submission(tmp_path / "subs", spec=str(spec))
    code, output = invoke(str(root))
    assert code == 1 and "SB-INT-004" in output
    assert invoke(str(root), "--spec", str(spec)) == (0, f"{root}: compliant\n")


def test_an_unusable_spec_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("format_version: 1\n")
    result = CliRunner().invoke(command, [str(tmp_path), "--spec", str(bad)])
    assert isinstance(result.exception, InputError)
    assert result.exception.exit_code == EXIT_UNUSABLE


def test_core_imports_no_heavy_or_vendor_module() -> None:
    code = (
        "import sys\n"
        "import specbench.validator, specbench.commands.validate\n"
        "from specbench.validator import validate_submission\n"
        "heavy = [m for m in ('torch', 'pynvml', 'amdsmi', 'mlperf_logging', 'numpy') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def test_runs_checked_in_processes_equal_serial(multi: Path) -> None:
    edit_rows(multi, lambda rows: rows.insert(30, list(rows[29])), run=2)
    edit_rows(multi, lambda rows: rows[40].__setitem__(4, "x"), run=4)
    resign(multi)
    serial = validate_submission(multi)
    parallel = validate_submission(multi, jobs=2)
    assert serial.to_dict() == parallel.to_dict()
    assert serial.codes() == {"SB-PWR-010", "SB-PWR-002"}
    assert [r.power.energy_j if r.power else None for r in serial.benchmarks[0].runs] == [
        r.power.energy_j if r.power else None for r in parallel.benchmarks[0].runs
    ]


def test_summary_counts_findings_by_code_with_the_first_of_each(
    bases: Bases, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = bases.copy(tmp_path)
    set_hyperparameter(root, "optimizer", "adam")
    (run_dir(root) / "notes.txt").write_text("hello\n")
    (run_dir(root) / "more.txt").write_text("hello\n")
    resign(root)
    monkeypatch.chdir(tmp_path)
    full = invoke("acme/box1")
    assert invoke("acme/box1", "--full") == full
    code, output = invoke("acme/box1", "--summary")
    assert code == 1
    assert output == (
        "acme/box1: non-compliant: 1 error(s), 2 warning(s)\n"
        "\n"
        "errors (1), by code with the first of each\n"
        "  1 SB-EQV-001 parameter breaks its rule\n"
        "      resnet50/submission.yaml:14:14 hyperparameters.optimizer: layer workload parameter 'optimizer' at the "
        "system level: expected 'sgd', found \"adam\"\n"
        "      hint: use the value the spec's rule allows at this level, or submit at a level where the layer may vary\n"
        "\n"
        "warnings (2), by code with the first of each\n"
        "  2 SB-STR-009 unexpected file or folder\n"
        "      resnet50/run_1/more.txt: expected only log.txt, result.json, state.json, power.csv, power.json, "
        "error.txt here\n"
        "      hint: remove it: a submission holds only the files of docs/submission-format.md\n"
        "\n"
        "verdict: non-compliant: 1 error(s), 2 warning(s) (3 finding(s) under 2 code(s); --full lists each)\n"
    )
    assert invoke("acme/box1", "--summary", "--werror")[1].count("warnings (2) [--werror], by code") == 1


def test_a_compliant_summary_is_the_one_line(bases: Bases, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bases.copy(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert invoke("acme/box1", "--summary") == (0, "acme/box1: compliant\n")


def test_a_truncated_log_reports_its_cause_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A log cut mid-line: the unparseable line (SB-LOG-001) leads the report, and says what may follow from it."""
    root = tmp_path / "specbench" / "h200"
    shutil.copytree(committed("h200"), root)
    log = root / "caraml-resnet50" / "run_1" / "log.txt"
    data = log.read_bytes()
    log.write_bytes(data[: len(data) // 2])
    write_manifest(root)
    monkeypatch.chdir(tmp_path)
    code, output = invoke("specbench/h200")
    assert code == 1
    assert output.startswith(
        "specbench/h200: non-compliant: 18 error(s), 1 warning(s)\n"
        "\n"
        "errors (18)\n"
        "  caraml-resnet50/run_1/log.txt\n"
        "    15:40: SB-LOG-001 MLLOG line cannot be parsed: expected one JSON object after ':::MLLOG ', found "
        "Expecting ',' delimiter\n"
        "      hint: each ':::MLLOG ' line holds one JSON object with namespace, time_ms, event_type, key, value, "
        "metadata\n"
        "      note: the other 17 finding(s) in caraml-resnet50/run_1 may follow from this one: fix it first\n"
        "    SB-EQV-004 logged hyperparameter differs from the declared one: "
    )
    assert output.count("SB-LOG-001") == 1 and output.count("note:") == 1
    _, summary = invoke("specbench/h200", "--summary")
    assert summary.split("\n")[2:7] == [
        "errors (18), by code with the first of each",
        "  1 SB-LOG-001 MLLOG line cannot be parsed",
        "      caraml-resnet50/run_1/log.txt:15:40: expected one JSON object after ':::MLLOG ', found Expecting ',' "
        "delimiter",
        "      hint: each ':::MLLOG ' line holds one JSON object with namespace, time_ms, event_type, key, value, metadata",
        "      note: the other 17 finding(s) in caraml-resnet50/run_1 may follow from this one: fix it first",
    ]
    data = json.loads(invoke("specbench/h200", "--format", "json")[1])
    codes = [f["code"] for f in data["submissions"][0]["findings"]]
    assert codes.index("SB-LOG-001") > 0  # the JSON report keeps the validator's order
