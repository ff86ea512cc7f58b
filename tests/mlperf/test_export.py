"""`specbench export mlperf` against MLPerf's own package checker and result summarizer (mlperf-logging).

Three kinds of mlperf-resnet50 submissions are exported and handed to the real tools, each run as
a process the way MLPerf's submitters run it (the summarizer writes summary.json into its working
folder, the RCP checker scaling.json into the export):

- a fresh smoke run of `specbench execute mlperf-resnet50` (five runs, the training step stubbed
  for speed): the only error may be the RCP check, which has no reference convergence point for
  the smoke batch of 32 (SMOKE_SCALE);
- imported MLPerf results (tinycorp, SMC with node power logs), exported back: the package
  checker finds no error and the summarizer's time to train (and energy) is what it reads on the
  published files.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mlperf_support import CORPUS, SMC, SMC_RESULTS, corpus, read_events

from specbench.cli import main
from specbench.errors import UsageError
from specbench.formats.mlperf_import import SourceFile
from specbench.mlperf import import_results
from specbench.mlperf.export import export_submission
from specbench.mlperf.power import parse_power_log

pytestmark = pytest.mark.needs("mlperf_logging")


ROUND = CORPUS.parent / "mlperf-v4.0-resnet-round"
SMOKE_SCALE = {"RCP Test Failed: Missing RCP, please submit RCP with BS = 32"}
"""MLPerf's reference convergence points start at batch 1632; the smoke profile trains with 32."""


def package_checker(org: Path, tmp_path: Path) -> tuple[list[str], str]:
    """(the ERROR lines, the verdict line) of MLPerf's package checker on one organisation folder."""
    log = tmp_path / f"package_checker_{org.name}.log"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mlperf_logging.package_checker",
            str(org),
            "training",
            "4.0.0",
            "--log_output",
            str(log),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    lines = log.read_text().splitlines()
    errors = [line.removeprefix("ERROR - ").strip() for line in lines if line.startswith("ERROR")]
    verdict = next((line for line in lines if "PACKAGE CHECKER FOUND" in line), run.stderr[-500:])
    return errors, verdict


def summarizer(org: Path, tmp_path: Path) -> dict[str, dict[str, Any]]:
    """MLPerf's result summarizer on one organisation folder: its detailed row per system name."""
    work = tmp_path / f"summary_{org.name}"
    work.mkdir(exist_ok=True)
    run = subprocess.run(
        [sys.executable, "-m", "mlperf_logging.result_summarizer", str(org), "training", "4.0.0"],
        capture_output=True,
        text=True,
        cwd=work,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    rows = json.loads((work / "summary.json").read_text())
    return {row["system"]: row for row in rows}


def stubbed_smoke(out: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    import specbench.workloads.mlperf_resnet50.executor as executor

    monkeypatch.setattr(executor, "_step", lambda *args, **kwargs: None)
    monkeypatch.setattr(executor, "_evaluate", lambda *args, **kwargs: 0.95)
    args = ["execute", "mlperf-resnet50", "--profile", "smoke", "--power", "none", "--device", "cpu"]
    assert main([*args, "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One stubbed five-run smoke submission for the tests of this module (they only read it)."""
    pytest.importorskip("torchvision")
    with pytest.MonkeyPatch.context() as monkeypatch:
        return stubbed_smoke(tmp_path_factory.mktemp("sub") / "acme" / "box1", monkeypatch)


def test_a_smoke_submission_exports_to_what_mlperfs_tools_accept(smoke: Path, tmp_path: Path) -> None:
    org = tmp_path / "mlperf" / "acme"
    outcome = export_submission(smoke, org, ["host_processors_per_node=1"])
    assert outcome.exit_code() == 0 and outcome.system == "box1"
    names = sorted(p.relative_to(org).as_posix() for p in org.rglob("*") if p.is_file())
    assert names == ["results/box1/resnet/" + f"result_{i}.txt" for i in range(5)] + ["systems/box1.json"]
    for i in range(5):
        logged = (org / "results/box1/resnet" / f"result_{i}.txt").read_bytes()
        assert logged == (smoke / "mlperf-resnet50" / f"run_{i + 1}" / "log.txt").read_bytes()
    errors, verdict = package_checker(org, tmp_path)
    assert set(errors) <= {*SMOKE_SCALE, "PACKAGE CHECKER FOUND ERRORS, LOOK INTO ERROR LOG LINES AND FIX THEM."}
    assert set(errors) & SMOKE_SCALE and "Seed checker failed" not in verdict
    row = summarizer(org, tmp_path)["box1"]
    durations = sorted(r.duration_s for r in outcome.report.benchmarks[0].runs)
    assert row["resnet:time_to_train"] == pytest.approx(sum(durations[1:-1]) / 3 / 60, abs=1e-9)
    assert row["resnet:RCP"] == "Missing" and row["division"] == "closed"


@pytest.mark.slow
def test_imported_results_export_back_to_what_mlperf_reads(tmp_path: Path) -> None:
    source = tmp_path / "src"
    for org in ("v4.0/tinycorp", SMC):
        shutil.copytree(corpus() / org, source / Path(org).name)
    imported = import_results(source, tmp_path / "imported")
    for system in imported.systems:
        org = tmp_path / "mlperf" / system.imported.source.org.name
        outcome = export_submission(system.imported.output, org)
        assert outcome.exit_code() == 0, outcome.report.errors
        errors, verdict = package_checker(org, tmp_path)
        assert errors == [] and "FOUND NO ERRORS" in verdict
        (row,) = summarizer(org, tmp_path).values()
        (entry,) = system.entries
        assert row["resnet:time_to_train"] == pytest.approx(entry.value("time_s") / 60, rel=1e-9)
    published = summarizer(source / "smc-dc-power", tmp_path)  # a copy of the published files
    exported = summarizer(tmp_path / "mlperf" / "smc-dc-power", tmp_path)
    scores = {name: {k: v for k, v in row.items() if k.startswith("resnet:")} for name, row in published.items()}
    assert {name: {k: v for k, v in row.items() if k.startswith("resnet:")} for name, row in exported.items()} == scores
    (row,) = scores.values()
    assert row["resnet:Energy"] > 5e6 and row["resnet:rcp_scaling_factor"] > 1  # the same energy, to the joule


def test_exported_node_logs_hold_the_readings_in_mlperfs_format(tmp_path: Path) -> None:
    shutil.copytree(corpus() / SMC, tmp_path / "src" / "smc-dc-power")
    (system,) = import_results(tmp_path / "src", tmp_path / "imported").systems
    org = tmp_path / "mlperf"
    export_submission(system.imported.output, org)
    power = CORPUS / SMC / SMC_RESULTS / "power"
    for folder in sorted(power.iterdir()):
        exported = org / "results/1xSMC-H100-SXM-80GB/resnet/power" / folder.name
        assert sorted(p.name for p in exported.iterdir()) == ["node_0.txt"]  # MLPerf's numbering from 0
        events = read_events(exported / "node_0.txt")
        original = read_events(folder / "node_1.txt")
        assert [e["event_type"] for e in events] == ["INTERVAL_START"] + ["POINT_IN_TIME"] * (len(events) - 2) + [
            "INTERVAL_END"
        ]
        reading = lambda evs: sorted((e["time_ms"], e["value"]) for e in evs if e["key"] == "power_reading")  # noqa: E731
        assert reading(events) == reading(original)
        markers = {e["key"]: e["time_ms"] for e in original if e["key"].startswith("power_measurement")}
        assert {e["key"]: e["time_ms"] for e in events if e["key"].startswith("power_measurement")} == markers
        text = (exported / "node_0.txt").read_text()
        log = parse_power_log(text, SourceFile(path="node_0.txt", sha256="0" * 64, bytes=len(text)))
        assert log.problems == [] and len(log.readings) == len(reading(original))


@pytest.mark.slow
@pytest.mark.skipif(not ROUND.is_dir(), reason="no v4.0 round in the corpus")
def test_smc_8_nodes_exports_to_logs_mlperfs_summarizer_can_read(tmp_path: Path) -> None:
    """The published 8xSMC logs crash MLPerf's summarizer (stop == start); the export does not."""
    org = tmp_path / "src" / "smc-dc-power"
    shutil.copytree(ROUND / "smc-dc-power", org, ignore=shutil.ignore_patterns("1xSMC*"))
    imported = import_results(tmp_path / "src", tmp_path / "imported")
    (system,) = [s for s in imported.systems if s.imported.source.name == "8xSMC-H100-SXM-80GB"]
    out = tmp_path / "mlperf" / "smc-dc-power"
    outcome = export_submission(system.imported.output, out)
    assert any("power_measurement_stop is not after its start" in note for note in outcome.notes)
    crashed = subprocess.run(
        [sys.executable, "-m", "mlperf_logging.result_summarizer", str(org), "training", "4.0.0"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert "ZeroDivisionError" in crashed.stderr
    errors, _ = package_checker(out, tmp_path)
    assert errors == []
    row = summarizer(out, tmp_path)["SMC-H100-DC-Power"]
    (entry,) = system.entries
    assert row["resnet:time_to_train"] == pytest.approx(entry.value("time_s") / 60, rel=1e-9)
    assert row["resnet:Energy"] > 0
    switches = sorted(out.glob("results/*/resnet/power/*/sw_0.txt"))
    assert len(switches) == 5 and all("interconnect_power_est" in p.read_text() for p in switches)


def test_refusals(smoke: Path, tmp_path: Path, capsys: Any) -> None:
    with pytest.raises(UsageError, match="host_processors_per_node as a whole number"):
        export_submission(smoke, tmp_path / "a")
    with pytest.raises(UsageError, match="overlaps SUBMISSION"):
        export_submission(smoke, smoke / "inside")
    with pytest.raises(UsageError, match="--field expects KEY=VALUE"):
        export_submission(smoke, tmp_path / "a", ["number_of_gpus=8"])
    export_submission(smoke, tmp_path / "b", ["host_processors_per_node=1"])
    with pytest.raises(UsageError, match="exists: an export never replaces files"):
        export_submission(smoke, tmp_path / "b", ["host_processors_per_node=1"])
    assert main(["export", "mlperf", str(tmp_path / "nothing"), "--out", str(tmp_path / "c")]) == 2
    assert "not a usable submission" in capsys.readouterr().err


def test_json_output(smoke: Path, tmp_path: Path, capsys: Any) -> None:
    args = ["export", "mlperf", str(smoke), "--field", "host_processors_per_node=2"]
    assert main([*args, "--out", str(tmp_path / "o")]) == 0
    assert "systems/box1.json  <- system.yaml" in capsys.readouterr().out
    code = main([*args, "--out", str(tmp_path / "p"), "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert code == data["exit_code"] == 0 and data["system"] == "box1" and data["ruleset"] == "4.0.0"
    assert data["files"][0] == {"path": "systems/box1.json", "source": "system.yaml"}
    description = json.loads((tmp_path / "p" / "systems" / "box1.json").read_text())
    assert description["host_processors_per_node"] == "2" and description["status"] == "Available on-premise"
