"""Choosing meters by name, 'auto', ownership on a node, and device claims."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from specbench.errors import UsageError
from specbench.power import MeterUnavailable, NullMeter, PowerError, RaplMeter, power_owner, probe_meters
from specbench.power.select import AUTO, parse_meter_spec


@pytest.fixture
def no_vendor_libraries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)
    monkeypatch.setitem(sys.modules, "amdsmi", None)


@pytest.fixture
def powercap(tmp_path: Path) -> Path:
    zone = tmp_path / "powercap" / "intel-rapl:0"
    zone.mkdir(parents=True)
    (zone / "name").write_text("package-0\n")
    (zone / "energy_uj").write_text("123\n")
    (zone / "max_energy_range_uj").write_text("262143328850\n")
    return tmp_path / "powercap"


def test_meter_specs_parse() -> None:
    assert parse_meter_spec("auto") == [(name, None) for name in AUTO]
    assert parse_meter_spec(" nvml , rapl ") == [("nvml", None), ("rapl", None)]
    assert parse_meter_spec("replay:/tmp/run_1") == [("replay", "/tmp/run_1")]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nvlm", "unknown power meter 'nvlm' (did you mean 'nvml'?); known: amdsmi, hwmon, null, nvml, rapl, replay"),
        ("auto,nvml", "'auto' stands alone; got 'auto,nvml'"),
        ("rapl:/sys", "meter 'rapl' takes no argument; got 'rapl:/sys'"),
        ("nvml,nvml", "meter 'nvml' is named twice in 'nvml,nvml'"),
        (" , ", "no meter named in ' , '"),
    ],
)
def test_bad_meter_specs_say_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_meter_spec(spec)
    assert str(caught.value).startswith(message)


def test_auto_skips_what_is_unavailable_and_says_why(no_vendor_libraries: None, powercap: Path, tmp_path: Path) -> None:
    meters, skipped = probe_meters(
        "auto", environ={}, claim_dir=tmp_path / "claims", powercap_root=powercap, hwmon_root=tmp_path / "no-hwmon"
    )
    assert [type(m) for m in meters] == [RaplMeter]
    assert sorted(skipped) == ["amdsmi", "hwmon", "nvml"]
    assert "pip install 'specbench[run]'" in skipped["nvml"]
    for meter in meters:
        meter.close()


def test_auto_with_nothing_available_gives_a_null_meter_with_the_reasons(
    no_vendor_libraries: None, tmp_path: Path
) -> None:
    meters, _ = probe_meters(
        "auto", environ={}, claim_dir=tmp_path, powercap_root=tmp_path / "x", hwmon_root=tmp_path / "y"
    )
    assert len(meters) == 1 and isinstance(meters[0], NullMeter)
    assert meters[0].reason.startswith("no power meter is available here: nvml: the nvml meter needs the pynvml module")
    assert "rapl: " in meters[0].reason and "hwmon: " in meters[0].reason


def test_a_meter_named_explicitly_must_work(no_vendor_libraries: None, tmp_path: Path) -> None:
    with pytest.raises(MeterUnavailable, match="pip install 'specbench\\[run\\]'"):
        probe_meters("nvml", environ={}, claim_dir=tmp_path)
    with pytest.raises(UsageError, match="needs a trace folder: --meters replay:DIR"):
        probe_meters("replay", environ={}, claim_dir=tmp_path)


@pytest.mark.parametrize(
    ("environ", "owner", "reason"),
    [
        ({}, True, "one process (no local rank set)"),
        ({"LOCAL_RANK": "0"}, True, "LOCAL_RANK=0: the lowest local rank measures this node"),
        ({"LOCAL_RANK": "3"}, False, "LOCAL_RANK=3: the process with local rank 0 measures this node's devices"),
        ({"SLURM_LOCALID": "1"}, False, "SLURM_LOCALID=1: the process with local rank 0 measures this node's devices"),
        ({"SPECBENCH_POWER_OWNER": "1", "LOCAL_RANK": "3"}, True, "SPECBENCH_POWER_OWNER=1"),
        ({"SPECBENCH_POWER_OWNER": "0"}, False, "SPECBENCH_POWER_OWNER=0"),
    ],
)
def test_the_owner_is_the_lowest_local_rank_unless_told(environ: dict[str, str], owner: bool, reason: str) -> None:
    ownership = power_owner(environ)
    assert (ownership.owner, ownership.reason) == (owner, reason)


def test_a_bad_owner_variable_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="SPECBENCH_POWER_OWNER='yes': expected 1"):
        power_owner({"SPECBENCH_POWER_OWNER": "yes"})


def test_a_process_that_does_not_own_gets_a_null_meter(powercap: Path, tmp_path: Path) -> None:
    meters, _ = probe_meters("rapl", environ={"LOCAL_RANK": "2"}, claim_dir=tmp_path, powercap_root=powercap)
    assert isinstance(meters[0], NullMeter)
    assert meters[0].reason == (
        "not the power owner: LOCAL_RANK=2: the process with local rank 0 measures this node's devices"
    )
    forced, _ = probe_meters(
        "rapl", owner=True, environ={"LOCAL_RANK": "2"}, claim_dir=tmp_path, powercap_root=powercap
    )
    assert isinstance(forced[0], RaplMeter)
    forced[0].close()


def test_a_device_is_measured_by_one_process_only(powercap: Path, tmp_path: Path) -> None:
    claims = tmp_path / "claims"
    first, _ = probe_meters("rapl", environ={}, claim_dir=claims, powercap_root=powercap)
    with pytest.raises(PowerError) as caught:
        probe_meters("rapl", environ={}, claim_dir=claims, powercap_root=powercap)
    assert str(caught.value).startswith(
        f"device rapl:package-0 is already measured by process {os.getpid()} on this host"
    )
    for meter in first:
        meter.close()
    again, _ = probe_meters("rapl", environ={}, claim_dir=claims, powercap_root=powercap)
    assert isinstance(again[0], RaplMeter)
    again[0].close()
