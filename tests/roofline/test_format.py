from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from specbench.errors import InputError
from specbench.roofline import FORMAT, FORMAT_VERSION, Roofline, read_roofline, write_roofline


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "roofline.json"
    path.write_text(json.dumps(data))
    return path


def test_file_names_its_format_and_version(cpu_roofline: Roofline, tmp_path: Path) -> None:
    path = write_roofline(cpu_roofline, tmp_path / "out" / "roofline.json")
    data = json.loads(path.read_text())
    assert (data["format"], data["format_version"]) == ("specbench.roofline", 1) == (FORMAT, FORMAT_VERSION)
    assert read_roofline(path) == cpu_roofline


def test_unknown_version_is_refused_by_name(cpu_roofline: Roofline, tmp_path: Path) -> None:
    data = json.loads(cpu_roofline.to_json())
    data["format_version"] = 2
    data["a_field_of_version_2"] = True
    with pytest.raises(InputError) as err:
        read_roofline(_write(tmp_path, data))
    assert [p.message for p in err.value.problems] == [
        "roofline format version 2 not supported (this specbench reads 1)"
    ]
    assert err.value.problems[0].location.json_path == "format_version"


def test_other_formats_are_refused(tmp_path: Path) -> None:
    with pytest.raises(
        InputError, match=re.escape("expected format 'specbench.roofline', found 'specbench.power-trace'")
    ):
        read_roofline(_write(tmp_path, {"format": "specbench.power-trace", "format_version": 1}))
    with pytest.raises(InputError, match="expected a JSON object at the top, found list"):
        read_roofline(_write(tmp_path, [1, 2]))
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(InputError, match="not JSON"):
        read_roofline(tmp_path / "bad.json")


def test_invalid_content_names_the_path(cpu_roofline: Roofline, tmp_path: Path) -> None:
    data = json.loads(cpu_roofline.to_json())
    data["ceilings"]["memory"]["bytes_per_s"] = 0
    data["gemm"][0]["unexpected"] = 1
    with pytest.raises(InputError) as err:
        read_roofline(_write(tmp_path, data))
    paths = sorted(p.location.json_path for p in err.value.problems)
    assert paths == ["ceilings.memory.bytes_per_s", "gemm.0.unexpected"]


def test_not_measured_power_is_none_with_a_reason_never_zero(cpu_roofline: Roofline) -> None:
    data = json.loads(cpu_roofline.to_json())
    powers = [c["power"] for c in data["ceilings"]["compute"] + data["ceilings"]["conv"]]
    powers.append(data["ceilings"]["memory"]["power"])
    for power in powers:
        assert power["measured"] is False
        assert power["reason"].startswith("not measured: ")
        assert power["energy_j"] is None and power["work_per_j"] is None and power["mean_power_w"] is None
