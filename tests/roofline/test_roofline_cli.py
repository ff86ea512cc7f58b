from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from roofline_fixtures import CPU_SUBMISSION

from specbench.commands.roofline import command
from specbench.errors import InputError, UsageError
from specbench.roofline import Roofline, read_roofline, write_roofline

pytestmark = pytest.mark.needs("torch", "matplotlib")

QUICK = ["--device", "cpu", "--profile", "quick", "--threads", "1", "--precisions", "fp32", "--conv-batch", "1"]


def test_measure_place_and_plot(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(command, [*QUICK, "--power", "none", "--out", str(out), str(CPU_SUBMISSION)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["roofline.json", "roofline.png", "roofline.svg"]
    roofline = read_roofline(out / "roofline.json")
    assert roofline.command == (
        "specbench roofline --device cpu --profile quick --threads 1 --precisions fp32 --conv-batch 1 --power none "
        f"--out {out} {CPU_SUBMISSION}"
    )
    assert [c.precision for c in roofline.ceilings.compute] == ["fp32"]
    assert roofline.settings.conv_batch == 1
    assert roofline.ceilings.memory.power.reason == "not measured: measurement switched off (--power none)"
    assert [w.label for w in roofline.workloads] == ["resnet50 run 1 (fp32, batch 32)"]
    lines = result.stdout.splitlines()
    assert lines[0].startswith("device: ") and "(cpu), torch " in lines[0]
    assert any(line.startswith("gemm fp32 ") and line.endswith("not measured") for line in lines)
    assert any(line.startswith("resnet50 run 1 (fp32, batch 32) ") for line in lines)
    assert f"wrote {out / 'roofline.json'}, {out / 'roofline.png'}, {out / 'roofline.svg'}" in result.stderr


def test_from_file_replaces_measuring(cpu_roofline: Roofline, tmp_path: Path) -> None:
    source = write_roofline(cpu_roofline, tmp_path / "in" / "roofline.json")
    out = tmp_path / "out"
    result = CliRunner().invoke(command, ["--from", str(source), "--no-plot", "--out", str(out), str(CPU_SUBMISSION)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["roofline.json"]
    again = read_roofline(out / "roofline.json")
    assert again.ceilings == cpu_roofline.ceilings and again.created_at == cpu_roofline.created_at
    assert len(again.workloads) == 1


def test_from_file_refuses_measuring_options(cpu_roofline: Roofline, tmp_path: Path) -> None:
    source = write_roofline(cpu_roofline, tmp_path / "roofline.json")
    result = CliRunner().invoke(command, ["--from", str(source), "--device", "cpu", "--hold-s", "1"])
    assert isinstance(result.exception, UsageError)
    assert (
        str(result.exception)
        == "--from reads ceilings already measured; --device, --hold-s would not be used: drop them"
    )


def test_from_file_of_unknown_version_is_refused(cpu_roofline: Roofline, tmp_path: Path) -> None:
    data = json.loads(cpu_roofline.to_json())
    data["format_version"] = 99
    source = tmp_path / "roofline.json"
    source.write_text(json.dumps(data))
    result = CliRunner().invoke(command, ["--from", str(source), "--out", str(tmp_path / "out")])
    assert isinstance(result.exception, InputError)
    assert "roofline format version 99 not supported (this specbench reads 1)" in str(result.exception)
    assert not (tmp_path / "out").exists()


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(command, ["--sizes", "64,x", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "expected positive integers separated by commas, got '64,x'" in result.output
    result = CliRunner().invoke(command, ["--profile", "huge"])
    assert result.exit_code == 2
    assert command.name == "roofline"
