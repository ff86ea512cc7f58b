"""The extreme-weather executor: DeepLabv3+ shapes and FLOPs, DeepCAM's IoU and schedule, smoke run to target."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from specbench.cli import main
from specbench.data.climate import generate, mean_iou
from specbench.errors import UsageError
from specbench.spec.loader import apply_profile, load_spec
from specbench.spec.result import RunResult
from specbench.spec.yamlio import load_yaml
from specbench.validator import validate_submission
from specbench.workloads.extreme_weather.deepcam_reference import DeepCamReference, reference_train_flops_per_sample
from specbench.workloads.extreme_weather.deeplab import DeepLabV3Plus, train_flops_per_sample
from specbench.workloads.extreme_weather.executor import (
    REFERENCE_NETWORK,
    build_model,
    class_weights,
    iou_sum,
    learning_rate,
)

pytestmark = pytest.mark.needs("torch", "torchvision", "mlperf_logging", "h5py")

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("backbone", ["resnet18", "resnet50"])
def test_deeplab_gives_logits_at_input_size_from_an_output_stride_16_encoder(backbone: str) -> None:
    model = DeepLabV3Plus(backbone, in_channels=16, classes=3).eval()
    x = torch.randn(2, 16, 64, 96)
    with torch.no_grad():
        assert model(x).shape == (2, 3, 64, 96)
        features = model.layer4(model.layer3(model.layer2(model.layer1(model.stem(x)))))
    assert features.shape[-2:] == (4, 6)  # 64/16 x 96/16: the last stage is dilated, not strided
    assert model.stem[0].in_channels == 16


@pytest.mark.parametrize("profile, size", [("official", (768, 1152)), ("smoke", (64, 96))])
def test_spec_flops_are_the_counted_flops_of_each_variant(profile: str, size: tuple[int, int]) -> None:
    spec = apply_profile(load_spec(REPO / "specs" / "extreme-weather.yaml"), profile)
    assert spec.workload.dataset.sample_shape == [16, *size]
    for name, variant in spec.workload.variants.items():
        params = variant.params
        assert variant.flops_per_sample is not None, name
        if params.get("network") == REFERENCE_NETWORK:
            assert variant.flops_per_sample == reference_train_flops_per_sample(*size), name
        elif params["aspp_channels"] == 256:
            assert variant.flops_per_sample == train_flops_per_sample(str(params["backbone"]), *size), name


def test_the_mlperf_reference_variant_builds_deepcams_reference_network() -> None:
    """extreme-weather's mlperf-reference variant trains MLPerf HPC DeepCAM's reference network, logits at input size;
    a variant naming another network is refused."""
    spec = load_spec(REPO / "specs" / "extreme-weather.yaml").spec
    model = build_model(dict(spec.workload.variants["mlperf-reference"].params), 3).eval()
    assert isinstance(model, DeepCamReference)
    with torch.no_grad():
        assert model(torch.randn(2, 16, 64, 96)).shape == (2, 3, 64, 96)
    assert isinstance(build_model(dict(spec.workload.variants["resnet18"].params), 3), DeepLabV3Plus)
    with pytest.raises(UsageError, match="variant network 'xception'"):
        build_model({"network": "xception"}, 3)


def test_iou_on_the_device_matches_the_reference_definition() -> None:
    rng = np.random.default_rng(5)
    labels = rng.integers(0, 3, (6, 20, 30))
    predicted = np.where(rng.random((6, 20, 30)) < 0.7, labels, rng.integers(0, 3, (6, 20, 30)))
    labels[0] = 0  # classes 1 and 2 absent from label ...
    predicted[0] = 0  # ... and prediction: their empty unions count as IoU 1
    predicted[1] = (labels[1] + 1) % 3  # nothing right
    expected = mean_iou(predicted, labels)
    assert float(iou_sum(torch.from_numpy(predicted), torch.from_numpy(labels))) / 6 == pytest.approx(expected)
    assert float(iou_sum(torch.from_numpy(predicted[:1]), torch.from_numpy(labels[:1]))) == pytest.approx(1.0)
    assert float(iou_sum(torch.from_numpy(predicted[1:2]), torch.from_numpy(labels[1:2]))) == pytest.approx(0.0)


def test_class_weights_are_the_reference_frequencies_to_the_power() -> None:
    weights = class_weights(-0.125)
    assert weights.tolist() == pytest.approx([1.001725, 2.614611, 1.716420], rel=1e-5)
    assert weights[1] > weights[2] > weights[0]  # cyclones are rarest


def test_schedule_warms_up_then_decays_at_milestones_or_by_cosine() -> None:
    hp: dict[str, Any] = {
        "opt_lr": 0.01,
        "scheduler_lr_warmup_steps": 4,
        "scheduler_lr_warmup_factor": 1.0,
        "scheduler_type": "multistep",
        "scheduler_milestones": [10, 20],
        "scheduler_decay_rate": 0.1,
    }
    assert [learning_rate(hp, s) for s in range(4)] == pytest.approx([0.0025, 0.005, 0.0075, 0.01])
    assert learning_rate(hp, 13) == pytest.approx(0.01)  # 9 steps after warm-up
    assert learning_rate(hp, 14) == pytest.approx(0.001)
    assert learning_rate(hp, 24) == pytest.approx(0.0001)
    scaled = {**hp, "scheduler_lr_warmup_factor": 4.0}
    assert learning_rate(scaled, 0) == pytest.approx(0.01) and learning_rate(scaled, 4) == pytest.approx(0.04)
    cosine = {**hp, "scheduler_type": "cosine_annealing", "scheduler_t_max": 10, "scheduler_eta_min": 0.001}
    assert learning_rate(cosine, 4) == pytest.approx(0.01)
    assert learning_rate(cosine, 9) == pytest.approx(0.001 + 0.5 * 0.009)
    assert learning_rate(cosine, 14) == pytest.approx(0.001) and learning_rate(cosine, 99) == pytest.approx(0.001)


def test_smoke_run_reaches_its_iou_target_and_validates(tmp_path: Path) -> None:
    out = tmp_path / "acme" / "cpu-box"
    seed = "3"  # measured: benchmarks/results/smoke_seeds/extreme-weather.json (2.0.0: 20 of 20 seeds reach 0.75)
    argv = ["execute", "extreme-weather", "--profile", "smoke", "--seed", seed, "--power", "none", "--out", str(out)]
    assert main(argv) == 0
    bench = out / "extreme-weather"
    result = RunResult.model_validate_json((bench / "run_1" / "result.json").read_text())
    assert result.status == "success" and result.quality is not None and result.quality.reached
    assert result.quality.best is not None and result.quality.best >= 0.75
    assert result.model_flops == pytest.approx(3551232000 * (result.samples_processed or 0))
    meta = load_yaml(bench / "submission.yaml").data
    assert meta["variant"] == meta["hyperparameters"]["model"] == "resnet18-lite"
    assert meta["dataset"]["generator"] == "specbench.data.climate.generate_arrays"
    logged = [json.loads(line.split(" ", 1)[1]) for line in (bench / "run_1" / "log.txt").read_text().splitlines()]
    accuracies = [e["value"] for e in logged if e["key"] == "eval_accuracy"]
    assert len(accuracies) == 4 and result.epochs == 4  # 2.0.0 trains the whole budget (HPC AI500)
    assert result.quality.achieved == accuracies[-1] >= 0.75
    report = validate_submission(out)
    assert report.exit_code() == 0, [f.to_dict() for f in report.findings]


def test_cam5_folder_given_with_data_is_read(tmp_path: Path) -> None:
    data = tmp_path / "cam5"
    generate(data, 30, (32, 48), seed=1)
    out = tmp_path / "acme" / "box"
    argv = ["execute", "extreme-weather", "--profile", "smoke", "--power", "none", "--data", str(data)]
    code = main([*argv, "--set", "global_batch_size=8", "--out", str(out)])
    assert code in (0, 1)  # reaching 0.75 on 24 tiny samples is not the point here; reading them is
    meta = load_yaml(out / "extreme-weather" / "submission.yaml").data
    assert meta["dataset"]["train_samples"] == 24 and meta["dataset"]["eval_samples"] == 6
    assert meta["dataset"]["path"] == str(data.resolve()) and len(meta["dataset"]["listing_sha256"]) == 64
    result = RunResult.model_validate_json((out / "extreme-weather" / "run_1" / "result.json").read_text())
    assert result.samples_processed == 3 * 8 * (result.epochs or 0)


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["extreme-weather"],
            "error: spec 'extreme-weather' at profile 'official' trains on cam5-deepcam: give the CAM5 folder with --data",
        ),
        (["extreme-weather", "--profile", "smoke", "--synthetic"], "error: --synthetic gives throughput only"),
        (
            ["extreme-weather", "--profile", "smoke", "--set", "opt_name=LAMB"],
            "error: the extreme-weather executor trains with Adam or AdamW (torch has no LAMB)",
        ),
        (
            ["extreme-weather", "--profile", "smoke", "--set", "loss_weight_pow=-0.5"],
            "error: --set loss_weight_pow=-0.5 breaks rules.workload.loss_weight_pow (layer 8, workload)",
        ),
        (
            ["extreme-weather", "--profile", "smoke", "--set", "model=xception"],
            "error: --set model=xception: spec 'extreme-weather' has the variants resnet50, resnet18, resnet18-lite, "
            "mlperf-reference",
        ),
    ],
)
def test_bad_requests_fail_before_anything_starts(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "acme" / "box"
    assert main(["execute", *args, "--power", "none", "--out", str(out)]) == 2
    assert capsys.readouterr().err.startswith(message)
    assert not out.exists()


def test_a_folder_without_the_cam5_layout_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "data" / "train").mkdir(parents=True)
    out = tmp_path / "acme" / "box"
    argv = ["execute", "extreme-weather", "--profile", "smoke", "--power", "none", "--data", str(tmp_path / "data")]
    assert main([*argv, "--out", str(out)]) == 2
    assert "expected" in capsys.readouterr().err and not out.exists()
