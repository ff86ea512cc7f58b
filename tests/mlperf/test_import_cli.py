"""`specbench import mlperf`, through its click command object: output, exit codes, refusals."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner
from mlperf_support import CORPUS, corpus

from specbench.commands.import_ import command
from specbench.errors import EXIT_UNUSABLE, UsageError

REPO = Path(__file__).resolve().parents[2]


def invoke(*args: str) -> tuple[int, str, BaseException | None]:
    result = CliRunner().invoke(command, list(args))
    return result.exit_code, result.output, result.exception


def test_text_report_names_runs_sources_scores_and_findings(tmp_path: Path) -> None:
    code, output, _ = invoke("mlperf", str(corpus()), "--out", str(tmp_path))
    assert code == 0  # SMC's power findings go beyond MLPerf's tools: warnings (see test_import_corpus.py)
    assert (
        f"v4.0/tinycorp/tinybox_green -> {tmp_path}/v4.0/tinycorp/tinybox_green: compliant: 0 error(s), 8 warning(s)"
        in output
    )
    assert "    run_1  result_0.txt  failed    -         0.75858  37" in output
    assert (
        "  warning SB-LOG-009 mlperf-resnet50/run_1/log.txt:136: expected eval_accuracy >= 0.759, found best 0.75858 "
        "at epoch 36 (line 130) and no run_stop; the run counts as failed\n"
        "      MLPerf source: results/tinybox_green/resnet/result_0.txt:136\n"
    ) in output
    assert (
        "      MLPerf source: results/1xSMC-H100-SXM-80GB/resnet/power/result_5759-240517075402311260012_2/node_1.txt:345\n"
    ) in output
    assert "energy to train 5.484 MJ" in output and "Valid FLOPS/W 198.7 GFLOP/s/W" in output
    assert "time to train 805.5 s (olympic mean 802.1 s x scaling factor 1.00422)" in output
    assert output.endswith(
        f"3 system(s) imported from {CORPUS} into {tmp_path} (spec mlperf-resnet50): 3 compliant, 0 non-compliant\n"
    )


def test_json_report(tmp_path: Path) -> None:
    code, output, _ = invoke("mlperf", str(corpus()), "--out", str(tmp_path), "--format", "json")
    data = json.loads(output)
    assert code == data["exit_code"] == 0 and data["skipped"] == []
    by_source = {s["source"]: s for s in data["systems"]}
    smc = by_source["v4.0/smc-dc-power/1xSMC-H100-SXM-80GB"]
    runs = smc["benchmarks"][0]["runs"]
    assert [r["status"] for r in runs] == ["success"] * 5 and all(r["energy_j"] > 5e6 for r in runs)
    gap = next(f for f in smc["validation"]["findings"] if f["code"] == "SB-MLP-008" and f["line"] == 345)
    assert gap["mlperf_source"].endswith("result_5759-240517075402311260012_2/node_1.txt:345")
    (score,) = smc["scores"]
    assert score["group"]["scope"] == "node" and score["aggregate"]["values"]["energy_j"] > 5e6
    values = score["aggregate"]["values"]
    assert values["time_s"] == values["time_s_unscaled"] * values["mlperf_scaling_factor"]


def test_gaudi2_import_is_compliant_and_exits_0(tmp_path: Path) -> None:
    """MLPerf descriptions state no precision and the spec lets it go (free), so Gaudi2 is compliant."""
    spec = REPO / "specs" / "mlperf-resnet50.yaml"
    tree = tmp_path / "src" / "v3.1" / "Intel-HabanaLabs"
    shutil.copytree(corpus() / "v3.1" / "Intel-HabanaLabs", tree)
    out = tmp_path / "out"
    code, output, _ = invoke("mlperf", str(tree.parent), "--out", str(out), "--spec", str(spec))
    assert code == 0, output
    assert "Intel-HabanaLabs/HLS-Gaudi2-PT: compliant: 0 error(s), 5 warning(s)" in output
    assert (
        "score (official, olympic mean of run_2, run_3, run_4): time to train 985.3 s "
        "(olympic mean 984.2 s x scaling factor 1.00112)"
    ) in output
    assert "\n    rankable\n" in output
    code, _, _ = invoke("mlperf", str(tree.parent), "--out", str(out), "--spec", str(spec), "--werror")
    assert code == 1


def test_out_inside_the_results_tree_is_refused(tmp_path: Path) -> None:
    tree = tmp_path / "src"
    shutil.copytree(corpus() / "v4.0" / "tinycorp", tree / "tinycorp")
    for out in (tree / "imported", tree, tmp_path):
        _, _, error = invoke("mlperf", str(tree), "--out", str(out))
        assert isinstance(error, UsageError) and error.exit_code == EXIT_UNUSABLE
        assert "never written into" in str(error)
    assert sorted(p.name for p in tree.iterdir()) == ["tinycorp"]


def test_nothing_to_import_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    _, _, error = invoke("mlperf", str(tmp_path / "empty"), "--out", str(tmp_path / "out"))
    assert isinstance(error, UsageError) and "no MLPerf results under" in str(error)
    _, _, error = invoke("mlperf", str(tmp_path / "missing"), "--out", str(tmp_path / "out"))
    assert isinstance(error, UsageError) and "no such folder" in str(error)
    org = tmp_path / "maskrcnn-only"
    shutil.copytree(corpus() / "v4.0" / "tinycorp", org / "tinycorp")
    (org / "tinycorp" / "results" / "tinybox_green" / "resnet").rename(
        org / "tinycorp" / "results" / "tinybox_green" / "maskrcnn"
    )
    _, _, error = invoke("mlperf", str(org), "--out", str(tmp_path / "out"))
    assert isinstance(error, UsageError)
    assert "tinycorp/results/tinybox_green: no benchmark the specs answer (" in str(error)
    assert "found: maskrcnn" in str(error)
    _, _, error = invoke("mlperf", str(org), "--out", str(tmp_path / "out"), "--spec", "mlperf-resnet50")
    assert isinstance(error, UsageError)
    assert "tinycorp/results/tinybox_green: no benchmark the specs answer (resnet); found: maskrcnn" in str(error)


def test_reimport_replaces_an_import_but_never_a_submission(tmp_path: Path) -> None:
    tree = tmp_path / "src" / "tinycorp"
    shutil.copytree(corpus() / "v4.0" / "tinycorp", tree)
    out = tmp_path / "out"
    invoke("mlperf", str(tree), "--out", str(out))
    system = out / "tinycorp" / "tinybox_green"
    first = (system / "manifest.json").read_bytes()
    (system / "stale.txt").write_text("left from before")
    invoke("mlperf", str(tree), "--out", str(out))
    assert (system / "manifest.json").read_bytes() == first and not (system / "stale.txt").exists()
    (system / "import.json").unlink()
    _, _, error = invoke("mlperf", str(tree), "--out", str(out))
    assert isinstance(error, UsageError) and f"{system} exists and is not an earlier import" in str(error)
    assert not (system / "import.json").exists() and (system / "manifest.json").read_bytes() == first
