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
    code, output, _ = invoke("mlperf", str(corpus()), "--out", str(tmp_path), "--full")
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


def test_text_report_summarises_each_systems_findings_by_code(tmp_path: Path) -> None:
    """By default each system's findings are counted by code, each with its first finding and its MLPerf source."""
    tree = tmp_path / "src" / "v4.0"
    shutil.copytree(corpus() / "v4.0" / "tinycorp", tree / "tinycorp")
    code, output, _ = invoke("mlperf", str(tree), "--out", str(tmp_path / "out"))
    assert code == 0
    assert invoke("mlperf", str(tree), "--out", str(tmp_path / "out"), "--summary")[1] == output
    findings = output[output.index("\n\n  warnings") :]
    assert findings == (
        "\n"
        "\n"
        "  warnings (8), by code with the first of each\n"
        "    2 SB-MLP-001 MLPerf log rule broken\n"
        "        mlperf-resnet50/run_1/log.txt: run_stop: expected exactly one line, found 0 (MLPerf "
        "training_4.0.0/common.yaml); the run counts as failed\n"
        "        MLPerf source: results/tinybox_green/resnet/result_0.txt\n"
        "        hint: the run counts as failed, as MLPerf's package checker tolerates one non-compliant run; "
        "SB-RUN-002 says whether too many failed\n"
        "    5 SB-MLP-002 evaluation off MLPerf's schedule\n"
        "        mlperf-resnet50/run_1/log.txt:115 metadata.epoch_num: expected evaluations every 4 epochs from "
        "epoch 3, found evaluations off that schedule at epoch 33, 34, 36, 37 (stricter than MLPerf: its training "
        "rules schedule the evaluations, but its checker, package checker and result summarizer do not check the "
        "schedule)\n"
        "        MLPerf source: results/tinybox_green/resnet/result_0.txt:115\n"
        "        hint: MLPerf's rules evaluate ResNet every 4 epochs at one offset; MLPerf's tools do not check it, "
        "so the extra evaluations count as logged\n"
        "    1 SB-LOG-009 target quality not reached\n"
        "        mlperf-resnet50/run_1/log.txt:136: expected eval_accuracy >= 0.759, found best 0.75858 at epoch 36 "
        "(line 130) and no run_stop; the run counts as failed\n"
        "        MLPerf source: results/tinybox_green/resnet/result_0.txt:136\n"
        "        hint: the run counts as failed; the runs rule says how many may fail\n"
        "\n"
        "  verdict: compliant: 0 error(s), 8 warning(s) (8 finding(s) under 3 code(s); --full lists each)\n"
        "\n"
        f"1 system(s) imported from {tree} into {tmp_path / 'out'} (spec mlperf-resnet50): 1 compliant, "
        "0 non-compliant\n"
    )
    full = invoke("mlperf", str(tree), "--out", str(tmp_path / "out"), "--full")[1]
    assert full.count("  warning SB-MLP-002 ") == 5 and "by code" not in full


def test_a_round_without_rules_is_refused_before_any_run(tmp_path: Path) -> None:
    """A round specbench has no MLPerf rules for is a usage error naming the supported rounds; beside a supported
    round, its systems are skipped and the others imported."""
    tree = tmp_path / "src"
    shutil.copytree(corpus() / "v4.0" / "tinycorp", tree / "v9.9" / "tinycorp")
    out = tmp_path / "out"
    _, _, error = invoke("mlperf", str(tree / "v9.9"), "--out", str(out))
    assert isinstance(error, UsageError) and error.exit_code == EXIT_UNUSABLE
    assert str(error) == (
        f"nothing under {tree / 'v9.9'} is of a round specbench has MLPerf rules for: found MLPerf Training v9.9 "
        "(1 system(s)); supported: MLPerf Training v3.1, v4.0, v4.1, v5.0, v5.1; MLPerf HPC v1.0, v2.0, v3.0"
    )
    assert not out.exists()
    shutil.copytree(corpus() / "v4.0" / "tinycorp", tree / "v4.0" / "tinycorp")
    code, output, _ = invoke("mlperf", str(tree), "--out", str(out))
    assert code == 0 and not (out / "v9.9").exists()
    assert (
        "skipped: v9.9/tinycorp/results/tinybox_green: not imported: MLPerf Training v9.9 is a round specbench "
        "has no rules for\n1 system(s) imported"
    ) in output


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
