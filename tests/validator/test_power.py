"""The validator's power trace reading and window energy agree with the power package's own reader and accumulator."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from mutate import edit_json, edit_result, edit_rows, read_rows, resign, run_dir, window_rows

from specbench.power.base import Device, PowerValues
from specbench.power.csvread import read_csv, read_trace
from specbench.power.energy import EnergyAccumulator
from specbench.validator import validate_submission
from specbench.validator.powerwindow import window_energy


def _devices(folder: Path) -> list[Device]:
    meta = json.loads((folder / "power.json").read_text())
    return [Device.from_dict(d) for m in meta["meters"] for d in m["devices"]]


def _expected_series(folder: Path) -> dict[str, list[tuple[object, ...]]]:
    trace = read_trace(folder)
    return {
        d.key: [
            (s.sweep, s.t_mono_s, s.t_wall_s, s.power_instant_w, s.power_average_w, s.energy_counter_j, s.mark)
            for s in trace.samples_of(d.key)
        ]
        for d in trace.devices
    }


def _series(text: str, keys: list[str]) -> dict[str, list[tuple[object, ...]]]:
    trace = read_csv(text, keys)
    assert trace.problems == []
    return {
        key: list(
            zip(
                s.sweep,
                s.t_mono_s,
                s.t_wall_s,
                s.power_instant_w,
                s.power_average_w,
                s.energy_counter_j,
                s.mark,
                strict=True,
            )
        )
        for key, s in trace.series.items()
    }


def test_fast_and_row_by_row_readers_agree_with_read_trace(smoke: Path) -> None:
    folder = run_dir(smoke)
    keys = [d.key for d in _devices(folder)]
    text = (folder / "power.csv").read_text()
    expected = _expected_series(folder)
    assert _series(text, keys) == expected
    quoted = text.replace(",nvml:0,", ',"nvml:0",')
    assert _series(quoted, keys) == expected


def test_row_by_row_reader_locates_every_bad_row(smoke: Path) -> None:
    folder = run_dir(smoke)
    text = (folder / "power.csv").read_text().split("\n")
    text[3] = text[3].replace(",nvml:0,", ",nvml:7,")
    text[5] = text[5] + ",extra"
    text[8] = text[8].replace("0.0002", "inf")
    trace = read_csv("\n".join(text), ["nvml:0", "nvml:1"])
    assert [line for line, _ in trace.problems] == [4, 6, 9]
    assert "expected a device power.json lists, found 'nvml:7'" in trace.problems[0][1]
    assert "expected 9 cells" in trace.problems[1][1]
    assert "read_latency_s: expected a finite number, found 'inf'" in trace.problems[2][1]
    kept = sum(len(s) for s in trace.series.values())
    assert kept == len(text) - 2 - 3
    assert [trace.line(r) for r in trace.series["nvml:0"].rows[:3]] == [2, 8, 10]


def _accumulated(device: Device, samples: list[tuple[float, PowerValues]]) -> object:
    acc = EnergyAccumulator(device)
    for t, values in samples:
        acc.add(t, values)
    return acc.result(samples[-1][0] - samples[0][0])


@pytest.mark.parametrize("drop", ["nothing", "counter", "instant", "some counters"])
def test_window_energy_equals_the_accumulator(smoke: Path, drop: str) -> None:
    folder = run_dir(smoke)
    rows = read_rows(smoke)
    start, stop = window_rows(rows)
    for i, row in enumerate(rows[1:], start=1):
        if drop == "counter" or (drop == "some counters" and i % 7 == 0):
            row[6] = ""
        if drop == "instant":
            row[4] = ""
    text = "\n".join(",".join(r) for r in rows) + "\n"
    device = _devices(folder)[0]
    series = read_csv(text, ["nvml:0", "nvml:1"]).series["nvml:0"]
    a, b = series.mark.index("start"), series.mark.index("stop")
    mine = window_energy(device, series, a, b)
    samples = [
        (
            series.t_mono_s[i],
            PowerValues(series.power_instant_w[i], series.power_average_w[i], series.energy_counter_j[i]),
        )
        for i in range(a, b + 1)
    ]
    reference = _accumulated(device, samples)
    numbers = ("energy_j", "counter_energy_j", "integrated_energy_j", "cross_check_ratio", "duration_s")
    mine_fields, reference_fields = dataclasses.asdict(mine), dataclasses.asdict(reference)  # type: ignore[call-overload]
    for name, value in reference_fields.items():
        if name in numbers and value is not None:
            assert mine_fields[name] == pytest.approx(value, rel=1e-12), name
        else:
            assert mine_fields[name] == value, name
    assert mine.method == ("integrated" if drop == "counter" else "counter")
    assert start < stop


def test_a_wrapping_counter_with_a_known_range_is_corrected(smoke: Path) -> None:
    folder = run_dir(smoke)
    wrapping = {"meter": "rapl", "energy_range_j": 1_001_000.0}  # only a RAPL counter wraps (SB-CNS-004)
    edit_json(folder / "power.json", lambda d: d["meters"][0]["devices"][0].update(wrapping))

    def wrap(rows: list[list[str]]) -> None:
        for row in rows[1:]:
            if row[3] == "nvml:0" and float(row[6]) >= 1_001_000.0:
                row[6] = repr(float(row[6]) - 1_001_000.0)

    edit_rows(smoke, wrap)
    resign(smoke)
    report = validate_submission(smoke)
    assert report.findings == [], [f.message for f in report.findings]
    run = report.benchmarks[0].runs[0]
    assert run.power is not None
    events = {e.device: e.counter_events for e in run.power.devices}
    assert [e.kind for e in events["nvml:0"]] == ["wrap"]


def test_a_trace_of_a_null_meter_is_accepted_when_power_is_not_claimed(smoke: Path) -> None:
    folder = run_dir(smoke)
    null = {"key": "null", "meter": "null", "scope": "none", "notes": ["no power meter is available here"]}
    edit_json(
        folder / "power.json", lambda d: d.update(meters=[{"kind": "null", "info": {}, "devices": [null]}], windows=[])
    )
    edit_rows(
        smoke,
        lambda rows: rows.__setitem__(
            slice(1, None), [[r[0], r[1], r[2], "null", "", "", "", r[7], r[8]] for r in rows[1:] if r[3] == "nvml:0"]
        ),
    )
    edit_result(
        smoke, lambda d: d.__setitem__("power", {"measured": False, "reason": "no power meter is available here"})
    )
    resign(smoke)
    report = validate_submission(smoke)
    assert report.findings == []
    assert report.benchmarks[0].runs[0].power is None
