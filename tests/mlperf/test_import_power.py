"""Node power logs on real SMC data, edited into the cases the corpus lacks.

Energy is always recomputed here from the edited node logs (trapezoid of the readings inside
run_start..run_stop), independently of the importer.
"""

from __future__ import annotations

import json
import math
import shutil
from collections import Counter
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from mlperf_support import SMC_RESULTS, edit_events, find, read_events, write_events

from specbench.formats.mlperf_import import SourceFile
from specbench.mlperf import import_results
from specbench.mlperf.power import parse_power_log

RUN_4 = "result_5800-240517143744812449396_1"
"""The result of run_4: its readings lie 0.13 s after run_start and 0.02 s before run_stop."""
SMC_BASE = Counter({"SB-MLP-010": 5, "SB-MLP-008": 14})


def window(tree: Path, result: str) -> tuple[float, float]:
    events = read_events(tree / SMC_RESULTS / f"{result}.txt")
    start = events[find(events, "run_start")]["time_ms"]
    return start, events[find(events, "run_stop")]["time_ms"]


def trapezoid(readings: list[tuple[float, float]], start_ms: float, stop_ms: float) -> float:
    inside = [(t / 1000, p) for t, p in readings if start_ms - 2 <= t <= stop_ms + 2]
    return math.fsum(0.5 * (p0 + p1) * (t1 - t0) for (t0, p0), (t1, p1) in pairwise(inside))


def readings(node: Path) -> list[tuple[float, float]]:
    return [(e["time_ms"], e["value"]) for e in read_events(node) if e["key"] == "power_reading"]


def import_smc(tree: Path, out: Path) -> Any:
    outcome = import_results(tree.parent, out)
    (system,) = outcome.systems
    return system


def run_of(system: Any, number: int) -> Any:
    return system.report.benchmarks[0].runs[number - 1]


def record(system: Any) -> dict[str, Any]:
    return json.loads((system.imported.output / "import.json").read_text())


def test_parse_power_log_reads_mlperf_lines_with_empty_metadata() -> None:
    text = (
        ':::MLLOG {"namespace": "", "time_ms": 1000, "event_type": "INTERVAL_START", "key": "power_measurement_start", "value": null, "metadata": ""}\n'
        "noise line\n"
        ':::MLLOG {"namespace": "", "time_ms": 1000, "event_type": "POINT_IN_TIME", "key": "power_reading", "value": 2579, "metadata": ""}\n'
        ':::MLLOG {"namespace": "", "time_ms": 3000, "event_type": "POINT_IN_TIME", "key": "power_reading", "value": {"value": 10.5}, "metadata": {"host": "node_0"}}\n'
        ':::MLLOG {"namespace": "", "time_ms": 3000, "key": "power_reading", "value": -1, "metadata": ""}\n'
        ":::MLLOG {not json\n"
        ':::MLLOG {"namespace": "", "time_ms": 3000, "event_type": "POINT_IN_TIME", "key": "conversion_eff", "value": 0.9, "metadata": ""}\n'
    )
    log = parse_power_log(text, SourceFile(path="power/r/node_0.txt", sha256="0" * 64, bytes=len(text)))
    assert [(r.line, r.time_ms, r.power_w) for r in log.readings] == [(3, 1000.0, 2579.0), (4, 3000.0, 10.5)]
    assert log.starts == [(1, 1000.0)] and log.stops == [] and log.conversion_eff == 0.9
    assert [(p.code, p.line) for p in log.problems] == [("SB-MLP-005", 5), ("SB-MLP-005", 6)]


def test_readings_a_minute_past_both_edges_are_kept_but_never_counted(smc_tree: Path, tmp_path: Path) -> None:
    node = smc_tree / SMC_RESULTS / "power" / RUN_4 / "node_1.txt"
    start, stop = window(smc_tree, RUN_4)
    original = readings(node)

    def extend(events: list[dict[str, Any]]) -> None:
        marker = events[find(events, "power_measurement_start")]
        before = [{**events[1], "time_ms": start - 60_000 + 2000 * k, "value": 2500} for k in range(30)]
        after = [{**events[1], "time_ms": stop + 500 + 2000 * k, "value": 2500} for k in range(30)]
        stop_marker = {**events[find(events, "power_measurement_stop")], "time_ms": before[0]["time_ms"]}
        events[:] = [{**marker, "time_ms": before[0]["time_ms"]}, *before, *events[1:-1], *after, stop_marker]

    edit_events(node, extend)
    system = import_smc(smc_tree, tmp_path / "out")
    run = run_of(system, 4)
    assert run.power.energy_j == pytest.approx(trapezoid(original, start, stop), rel=1e-12)
    assert run.power.energy_j == pytest.approx(trapezoid(readings(node), start, stop), rel=1e-12)
    coverage = record(system)["benchmarks"]["mlperf-resnet50"]["runs"]["run_4"]["power"]["coverage"]
    assert coverage == [
        {
            "device": "mlperf:node_1",
            "readings": len(original) + 60,
            "readings_in_window": len(original),
            "uncovered_start_s": pytest.approx(0.131),
            "uncovered_stop_s": pytest.approx(0.017),
        }
    ]
    assert Counter(f.code for f in system.report.findings) == SMC_BASE + Counter({"SB-MLP-006": 1})
    (markers,) = [f for f in system.report.findings if f.code == "SB-MLP-006"]
    assert f"power/{RUN_4}/node_1.txt" in markers.message and "found it +0.000 s from it" in markers.message


def test_partial_coverage_counts_only_the_covered_part(smc_tree: Path, tmp_path: Path) -> None:
    node = smc_tree / SMC_RESULTS / "power" / RUN_4 / "node_1.txt"
    start, stop = window(smc_tree, RUN_4)
    edit_events(
        node, lambda ev: ev.__setitem__(slice(None), [e for e in ev if not start < e["time_ms"] < start + 10_000])
    )
    system = import_smc(smc_tree, tmp_path / "out")
    run = run_of(system, 4)
    assert run.power.energy_j == pytest.approx(trapezoid(readings(node), start, stop), rel=1e-12)
    run_4 = [f.message for f in system.report.findings if f.code == "SB-MLP-008" and "/run_4/" in f.location.file]
    late = [m for m in run_4 if "first sample of mlperf:node_1 within 1 s of run_start, found it +10." in m]
    assert len(late) == 1 and len(run_4) == 3  # and the rate and the gap rules beyond MLPerf's tools: warnings
    coverage = record(system)["benchmarks"]["mlperf-resnet50"]["runs"]["run_4"]["power"]["coverage"][0]
    assert 10.0 < coverage["uncovered_start_s"] < 12.1


def test_two_nodes_add_up_and_the_interconnect_estimate_is_kept_apart(smc_tree: Path, tmp_path: Path) -> None:
    system_json = smc_tree / "systems" / "1xSMC-H100-SXM-80GB.json"
    description = json.loads(system_json.read_text())
    system_json.write_text(json.dumps({**description, "number_of_nodes": "2"}))
    energies = {}
    for folder in sorted((smc_tree / SMC_RESULTS / "power").iterdir()):
        node_0, node_1 = folder / "node_0.txt", folder / "node_1.txt"
        node_1.rename(node_0)
        events = read_events(node_0)
        write_events(node_1, [{**e, "value": e["value"] / 2} if e["key"] == "power_reading" else e for e in events])
        (folder / "sw_0.txt").write_text(
            ':::MLLOG {"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": "interconnect_power_est", "value": 480.0, "metadata": ""}\n'
        )
        start, stop = window(smc_tree, folder.name)
        energies[folder.name] = trapezoid(readings(node_0), start, stop) + trapezoid(readings(node_1), start, stop)
    system = import_smc(smc_tree, tmp_path / "out")
    codes = Counter(f.code for f in system.report.findings)
    rates = [f for f in system.report.findings if f.message.startswith("expected at least 1 Hz for mlperf:node_")]
    assert "SB-MLP-005" not in codes and "SB-MLP-010" not in codes and len(rates) == 10  # each node on its own
    runs = record(system)["benchmarks"]["mlperf-resnet50"]["runs"]
    for number, run in enumerate(system.report.benchmarks[0].runs, start=1):
        result = Path(runs[f"run_{number}"]["result_file"]["path"]).stem
        assert run.power.energy_j == pytest.approx(energies[result], rel=1e-12)
        assert [d.device for d in run.power.devices] == ["mlperf:node_0", "mlperf:node_1"]
        (estimate,) = runs[f"run_{number}"]["power"]["interconnect"]
        assert estimate["interconnect_power_est_w"] == 480.0 and estimate["file"]["path"].endswith("/sw_0.txt")
    hardware = system.report.system.layers["hardware"]
    assert hardware["accelerator_count"] == 16 and hardware["nodes"] == 2


def test_missing_orphan_and_misnumbered_power_folders(smc_tree: Path, tmp_path: Path) -> None:
    power = smc_tree / SMC_RESULTS / "power"
    shutil.rmtree(power / RUN_4)
    (power / "result_9").mkdir()
    shutil.copy(power / "result_5759-240517075402311260012_2" / "node_1.txt", power / "result_9" / "node_0.txt")
    system = import_smc(smc_tree, tmp_path / "out")
    messages = [f.message for f in system.report.findings if f.code == "SB-MLP-005"]
    assert len(messages) == 2
    assert any(
        m.startswith(f"{SMC_RESULTS}/{RUN_4}.txt (MLPerf results tree): expected power/{RUN_4}/") for m in messages
    )
    assert any("power/result_9 (MLPerf results tree): expected a result file result_9.txt" in m for m in messages)
    run = run_of(system, 4)
    assert run.power is None and run.result.power.measured is False
    assert run.result.power.reason == "the MLPerf submission has no power logs for this result"


def test_a_node_log_without_readings_in_the_run_is_not_measured(smc_tree: Path, tmp_path: Path) -> None:
    node = smc_tree / SMC_RESULTS / "power" / RUN_4 / "node_1.txt"
    edit_events(node, lambda ev: ev.__setitem__(slice(None), [{**e, "time_ms": e["time_ms"] - 3_600_000} for e in ev]))
    system = import_smc(smc_tree, tmp_path / "out")
    run = run_of(system, 4)
    assert run.result.power.measured is False and "no reading between run_start and run_stop" in run.result.power.reason
    messages = [f.message for f in system.report.findings if f.code == "SB-MLP-005"]
    assert any("expected node readings between run_start and run_stop of mlperf-resnet50/run_4" in m for m in messages)
