"""The trace format on disk: round trip, versions, and what a reader refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from power_fakes import FakeClock, ScriptedMeter

from specbench.power import FORMAT_VERSION, PowerError, PowerSampler, read_trace
from specbench.power.trace import COLUMNS, JSON_NAME, Sample, write_samples


def record(folder: Path, clock: FakeClock) -> PowerSampler:
    meter = ScriptedMeter(clock, power_w=lambda t: None if t > 1002 else 123.25)
    sampler = PowerSampler([meter], 0.1, clock=clock)
    sampler.window_start()
    for _ in range(3):
        clock.advance(1.0)
        sampler.sample_now()
    sampler.window_stop()
    sampler.write_trace(folder)
    return sampler


def test_a_written_trace_reads_back_sample_for_sample(tmp_path: Path, clock: FakeClock) -> None:
    sampler = record(tmp_path, clock)
    trace = read_trace(tmp_path)

    assert trace.samples == sampler.samples
    assert [d.key for d in trace.devices] == ["fake:0"]
    assert trace.samples[-1].power_instant_w is None
    assert trace.samples[0].power_instant_w == 123.25
    assert trace.metadata["format"] == "specbench.power-trace"
    assert trace.metadata["format_version"] == FORMAT_VERSION
    assert trace.metadata["windows"][0]["devices"][0]["energy_j"] == pytest.approx(300.0)
    header = (tmp_path / "power.csv").read_text().splitlines()[0]
    assert header == ",".join(COLUMNS)


def test_an_unmeasured_value_is_an_empty_cell_never_zero(tmp_path: Path) -> None:
    write_samples(tmp_path, [Sample(0, 1.0, 2.0, "d", None, 5.0, None, 0.001, "")])
    assert (tmp_path / "power.csv").read_text().splitlines()[1] == "0,1.0,2.0,d,,5.0,,0.001,"


def rewrite_metadata(folder: Path, **changes: object) -> None:
    path = folder / JSON_NAME
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def test_an_unknown_format_version_is_refused(tmp_path: Path, clock: FakeClock) -> None:
    record(tmp_path, clock)
    rewrite_metadata(tmp_path, format_version=2)
    with pytest.raises(PowerError, match="power trace format version 2 not supported \\(this specbench reads 1\\)"):
        read_trace(tmp_path)


def test_another_format_is_refused(tmp_path: Path, clock: FakeClock) -> None:
    record(tmp_path, clock)
    rewrite_metadata(tmp_path, format="jpwr")
    with pytest.raises(PowerError, match=r"format is 'jpwr', expected 'specbench\.power-trace'"):
        read_trace(tmp_path)


def test_a_folder_without_metadata_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PowerError, match="no power trace metadata here"):
        read_trace(tmp_path)


def test_changed_columns_are_refused(tmp_path: Path, clock: FakeClock) -> None:
    record(tmp_path, clock)
    csv_path = tmp_path / "power.csv"
    lines = csv_path.read_text().splitlines()
    csv_path.write_text("\n".join([lines[0].replace("power_instant_w", "power_w"), *lines[1:]]) + "\n")
    with pytest.raises(PowerError, match=r"columns are .*power_w.*expected"):
        read_trace(tmp_path)


def test_a_bad_cell_names_its_line(tmp_path: Path, clock: FakeClock) -> None:
    record(tmp_path, clock)
    csv_path = tmp_path / "power.csv"
    lines = csv_path.read_text().splitlines()
    lines[2] = lines[2].replace("123.25", "nan")
    csv_path.write_text("\n".join(lines) + "\n")
    with pytest.raises(
        PowerError,
        match=r"power.csv:3: unreadable power sample: power_instant_w: expected a finite number, found 'nan'",
    ):
        read_trace(tmp_path)


def test_samples_of_unlisted_devices_are_refused(tmp_path: Path, clock: FakeClock) -> None:
    record(tmp_path, clock)
    with (tmp_path / "power.csv").open("a") as handle:
        handle.write("9,1.0,2.0,ghost:0,,,,0.0,\n")
    with pytest.raises(PowerError, match=r"power.csv:7: .*expected a device power.json lists, found 'ghost:0'"):
        read_trace(tmp_path)
