from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from roofline_fixtures import BUILT_IN, CPU_SUBMISSION, H200_ROOFLINE, H200_SUBMISSION, LLM_SMOKE, make_submission

from specbench.errors import InputError
from specbench.roofline import Roofline, place, read_roofline
from specbench.roofline.layers import training_bytes_per_sample
from specbench.roofline.resnet import resnet50_layers


def test_cpu_run_is_placed_under_the_cpu_roof(cpu_roofline: Roofline, local_cpu_submission: Path) -> None:
    placed = place(cpu_roofline, [local_cpu_submission])
    assert placed.workloads_skipped == []
    (point,) = placed.workloads
    result = json.loads((CPU_SUBMISSION / "resnet50" / "run_1" / "result.json").read_text())
    expected = training_bytes_per_sample(resnet50_layers((3, 32, 32), 10), 4, 32, mixed=False)
    assert point.label == "resnet50 run 1 (fp32, batch 32)"
    assert point.bytes_method == "analytical" and point.bytes_model.startswith("analytical, ResNet-50 v1.5 at 32x32")
    assert point.bytes_per_sample == expected.unfused and point.bytes_per_sample_fused == expected.fused
    assert point.intensity_flop_per_byte == pytest.approx(result["flops_per_sample"] / expected.unfused)
    computed = result["flops_per_sample"] * result["samples_processed"] / result["duration_s"]
    assert point.flops_per_s == pytest.approx(computed)  # what it computed, not the 90-epoch problem's FLOPs
    assert point.flops_per_s == pytest.approx(4.357e9, rel=1e-3) and result["flops_per_s"] == pytest.approx(
        5 * point.flops_per_s
    )
    fp32 = cpu_roofline.compute_ceiling("fp32")
    assert fp32 is not None and point.ceiling_precision == "fp32"
    roof = min(fp32.flops_per_s, cpu_roofline.ceilings.memory.bytes_per_s * point.intensity_flop_per_byte)
    assert point.attainable_flops_per_s == pytest.approx(roof)
    assert point.fraction_of_attainable == pytest.approx(point.flops_per_s / roof)
    assert point.note is None and point.same_device is True


def test_runs_of_another_device_are_listed_but_not_compared(cpu_roofline: Roofline, tmp_path: Path) -> None:
    other_cpu = tmp_path / "specbench" / "cpu-2core"
    shutil.copytree(CPU_SUBMISSION, other_cpu)
    system = other_cpu / "system.yaml"
    system.write_text(system.read_text().replace("cpu_model: ", "cpu_model: Not This CPU "))
    (cpu_point,) = place(cpu_roofline, [other_cpu]).workloads
    assert cpu_point.same_device is False and cpu_point.attainable_flops_per_s is None
    assert cpu_point.note is not None and cpu_point.note.startswith("ran on Not This CPU ")
    placed = place(cpu_roofline, [H200_SUBMISSION])
    assert [p.run for p in placed.workloads] == [1, 2, 3]
    for point in placed.workloads:
        assert point.same_device is False and point.accelerator_model == "NVIDIA H200"
        assert point.attainable_flops_per_s is None and point.bound is None and point.fraction_of_attainable is None
        assert point.note is not None and point.note.startswith("ran on NVIDIA H200, not on ")
        assert point.batch_per_device == 256 and point.precision == "bf16"


def _copy_run(tmp_path: Path, **changes: object) -> Path:
    folder = tmp_path / "org" / "system" / "bench" / "run_1"
    folder.mkdir(parents=True)
    data = json.loads((CPU_SUBMISSION / "resnet50" / "run_1" / "result.json").read_text())
    data.update(changes)
    (folder / "result.json").write_text(json.dumps(data))
    return folder / "result.json"


def test_runs_that_cannot_be_placed_say_why(cpu_roofline: Roofline, tmp_path: Path) -> None:
    other = _copy_run(tmp_path / "a", spec_id="my-bench")
    failed = _copy_run(tmp_path / "b", status="failed")
    fp8 = _copy_run(tmp_path / "c", settings={"precision": "fp8"})
    lamb = _copy_run(tmp_path / "d", hyperparameters={"optimizer": "lamb", "global_batch_size": 32})
    unrecorded = _copy_run(tmp_path / "e", settings={})
    placed = place(cpu_roofline, [other, failed, fp8, lamb, unrecorded])
    data = json.loads(failed.read_text())
    assert placed.workloads == []
    reasons = {s.what: s.reason for s in placed.workloads_skipped}
    assert reasons == {
        str(other): "spec 'my-bench' is not built in: its workload model, and so its bytes, are unknown",
        str(
            failed
        ): f"run status 'failed' with {data['samples_processed']} samples in {data['duration_s']} s: nothing to place",
        str(fp8): "precision 'fp8' has no byte width here (known: fp32, tf32, bf16, fp16)",
        str(lamb): "no byte count for optimizer 'lamb' (known: sgd, lars, adam, adamw)",
        str(unrecorded): (
            "no precision recorded: neither result.json (settings, hyperparameters) nor submission.yaml "
            "(layers.parallelism_precision, hyperparameters) names one"
        ),
    }


def test_the_precision_is_taken_where_the_submission_records_it(cpu_roofline: Roofline, tmp_path: Path) -> None:
    """result.json's settings, else its hyperparameters (llm-gpt), else submission.yaml's layer or hyperparameters."""
    resnet = tmp_path / "specbench" / "cpu-2core"
    shutil.copytree(CPU_SUBMISSION, resnet)
    result = resnet / "resnet50" / "run_1" / "result.json"
    data = json.loads(result.read_text())
    del data["settings"]["precision"]
    result.write_text(json.dumps(data))
    llm = tmp_path / "local" / "llm-smoke"
    shutil.copytree(LLM_SMOKE, llm)
    llm_data = json.loads((llm / "llm-gpt" / "run_1" / "result.json").read_text())
    assert "precision" not in llm_data["settings"] and llm_data["hyperparameters"]["precision"] == "fp32"
    (llm / "llm-gpt" / "run_1" / "result.json").write_text(
        json.dumps({**llm_data, "hyperparameters": {**llm_data["hyperparameters"], "precision": None}})
    )
    placed = place(cpu_roofline, [resnet, llm])
    assert placed.workloads_skipped == []
    assert [(p.spec_id, p.precision) for p in placed.workloads] == [("resnet50", "fp32"), ("llm-gpt", "fp32")]


def test_every_built_in_workload_s_smoke_run_is_placed(cpu_roofline: Roofline, tmp_path: Path) -> None:
    """A smoke submission of every built-in spec (the validator tests' generator), the real llm-gpt smoke run
    and the committed CPU run: every one placed, none skipped."""
    for spec_id in BUILT_IN:
        make_submission(tmp_path / "made", spec=spec_id, profile="smoke", org="gen", system=spec_id, devices=1)
    shutil.copytree(LLM_SMOKE, tmp_path / "real" / "llm-smoke")
    shutil.copytree(CPU_SUBMISSION, tmp_path / "real" / "cpu-2core")
    placed = place(cpu_roofline, [tmp_path])
    assert placed.workloads_skipped == []
    models = {(p.spec_id, p.model) for p in placed.workloads}
    assert models == {
        ("resnet50", "resnet50_v1.5"),
        ("mlperf-resnet50", "resnet50_v1.5"),
        ("caraml-resnet50", "resnet50_v1.5"),
        ("llm-gpt", "gpt"),
        ("extreme-weather", "deeplabv3plus"),
    }
    for point in placed.workloads:
        assert point.bytes_method == "analytical"
        assert point.note is None or point.note.startswith("ran on ")  # no FLOPs mismatch with the layer table
        assert 0 < point.intensity_flop_per_byte < point.intensity_fused_flop_per_byte
    by_spec = {p.spec_id: p for p in placed.workloads if p.source.startswith(str(tmp_path / "made"))}
    assert by_spec["extreme-weather"].bytes_model.startswith("analytical, DeepLabv3+ on resnet18 (ASPP 128) at 64x96")
    assert by_spec["llm-gpt"].bytes_model.startswith("analytical, GPT decoder (hidden 128, 2 layers, sequence 128)")
    assert by_spec["mlperf-resnet50"].bytes_model.endswith(
        "weights and lars state per step over batch 32, no fusion (fused: conv/fc operands only)"
    )


def test_unreadable_inputs_are_input_errors(cpu_roofline: Roofline, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file or folder"):
        place(cpu_roofline, [tmp_path / "missing"])
    broken = _copy_run(tmp_path, format_version=7)
    with pytest.raises(InputError, match="not a run result"):
        place(cpu_roofline, [broken])


def test_h200_runs_sit_under_the_measured_h200_roof() -> None:
    """Real data: the committed H200 roofline and the H200 submission measured on the same kind of card."""
    roofline = read_roofline(H200_ROOFLINE)
    assert roofline.device.name == "NVIDIA H200" and roofline.settings.profile == "full"
    placed = place(roofline, [H200_SUBMISSION])
    assert len(placed.workloads) == 3
    for point in placed.workloads:
        assert point.same_device is True and point.ceiling_precision == "bf16"
        assert point.bound == "memory"
        assert point.fraction_of_attainable is not None and 0 < point.fraction_of_attainable <= 1


def test_a_tree_of_submissions_is_walked(cpu_roofline: Roofline, tmp_path: Path) -> None:
    shutil.copytree(CPU_SUBMISSION, tmp_path / "specbench" / "cpu-2core")
    placed = place(cpu_roofline, [tmp_path])
    assert [(p.spec_id, p.source) for p in placed.workloads] == [
        ("resnet50", str(tmp_path / "specbench" / "cpu-2core" / "resnet50" / "run_1" / "result.json"))
    ]
