"""`specbench execute` through `--data` on a generated JPEG tree: trains to its target, records the data path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from specbench.cli import main
from specbench.data.jpegtree import TreeSpec, write_tree
from specbench.errors import UsageError
from specbench.run.config import build_configs
from specbench.spec.loader import load_spec
from specbench.spec.resolve import resolve
from specbench.spec.yamlio import load_yaml
from specbench.validator import validate_submission
from specbench.workloads import conv as common
from specbench.workloads.conv import WorkersOption
from specbench.workloads.resnet50.executor import ResNet50Executor

EXECUTOR = ResNet50Executor()

pytestmark = [
    pytest.mark.needs("torch", "torchvision", "mlperf_logging"),
    pytest.mark.filterwarnings("ignore:The image decoding and encoding capabilities:DeprecationWarning"),
]

SPEC = str(Path(__file__).parent / "data" / "specs" / "valid" / "resnet50-jpeg-tree.yaml")
TREE = TreeSpec(
    classes=4,
    train_per_class=32,
    val_per_class=8,
    widths=(40, 56),
    heights=(32, 44),
    detail=6,
    texture=6,
    flat_val=True,
)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tree")
    write_tree(root, TREE)
    return root


def run(tree: Path, out: Path, *sets: str, device: str = "cpu") -> tuple[int, dict[str, object], dict[str, object]]:
    argv = ["execute", SPEC, "--data", str(tree), "--device", device, "--power", "none", "--out", str(out)]
    code = main([*argv, *(a for s in sets for a in ("--set", s))])
    bench = out / "resnet50-jpeg-tree"
    meta = load_yaml(bench / "submission.yaml").data
    result = json.loads((bench / "run_1" / "result.json").read_text())
    return code, meta, result


def check_trained(code: int, meta: dict[str, object], result: dict[str, object], out: Path) -> None:
    assert code == 0, result.get("reason")
    assert result["status"] == "success" and result["quality"]["best"] >= 0.75  # type: ignore[index]
    assert meta["dataset"]["train_samples"] == 128 and meta["dataset"]["eval_samples"] == 32  # type: ignore[index]
    assert meta["dataset"]["val_layout"] == "flat, labels from LOC_val_solution.csv"  # type: ignore[index]
    report = validate_submission(out, spec=SPEC)
    assert report.exit_code() == 0, [f.to_dict() for f in report.findings]


@pytest.mark.slow
def test_cpu_run_trains_through_data_to_its_target_and_validates(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "acme" / "cpu-box"
    code, meta, result = run(tree, out)
    check_trained(code, meta, result, out)
    framework = meta["layers"]["framework"]  # type: ignore[index]
    assert framework == {**framework, "data_decoder": "pil", "augment_device": "cpu", "num_workers": 0}
    assert "data_cpu_share" not in framework and "data_decode_threads" not in framework  # nvjpeg's alone
    assert "augment_kernel" not in framework  # augment_device=cuda's alone
    assert result["settings"]["data_decoder"] == "pil"  # type: ignore[index]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_run_decodes_with_nvjpeg_and_augments_on_the_gpu(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "acme" / "gpu-box"
    code, meta, result = run(tree, out, device="cuda")
    check_trained(code, meta, result, out)
    framework = meta["layers"]["framework"]  # type: ignore[index]
    assert framework["data_decoder"] == "nvjpeg" and framework["augment_device"] == "cuda"  # type: ignore[index]
    assert framework["num_workers"] == common.workers_per_process()  # type: ignore[index]
    assert framework["data_cpu_share"] == "auto"  # type: ignore[index]
    assert framework["data_decode_threads"] == 3  # type: ignore[index]  # the default on a GPU
    assert framework["augment_kernel"] == "triton"  # type: ignore[index]  # torch's CUDA wheels ship Triton


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--set", "data_decoder=nvjpeg"],
            "error: data_decoder=nvjpeg with augment_device=cpu does not go together; choose libjpeg+cpu, "
            "libjpeg+cuda, nvjpeg+cuda, pil+cpu",
        ),
        (["--set", "data_decoder=dali"], "error: --set data_decoder=dali: expected one of pil, libjpeg, nvjpeg"),
        (
            ["--set", "data_cpu_share=0.5"],
            "error: --set data_cpu_share: applies to data_decoder=nvjpeg; this run decodes with pil",
        ),
        (
            ["--set", "data_decode_threads=2"],
            "error: --set data_decode_threads: applies to data_decoder=nvjpeg; this run decodes with pil",
        ),
        (["--set", "data_decode_threads=9"], "error: --set data_decode_threads=9: expected one of 1, 2, 3, 4"),
        (
            ["--set", "augment_kernel=triton"],
            "error: --set augment_kernel: applies to augment_device=cuda; this run augments on the CPU",
        ),
        (["--set", "augment_kernel=cuda"], "error: --set augment_kernel=cuda: expected one of triton, torch"),
    ],
)
def test_data_settings_that_cannot_work_fail_before_anything_starts(
    tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    out = tmp_path / "a" / "b"  # on the CPU, as on a machine without a GPU: pil is the default decoder there
    assert main(["execute", SPEC, "--data", str(tree), "--device", "cpu", "--out", str(out), *args]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == message
    assert not (tmp_path / "a").exists()


def test_throughput_runs_record_no_data_path_and_refuse_its_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "a" / "b"
    assert main(["execute", "caraml-resnet50", "--profile", "smoke", "--set", "num_workers=4", "--out", str(out)]) == 2
    assert "error: --set num_workers: applies to --data runs; spec 'caraml-resnet50' times synthetic tensors" in (
        capsys.readouterr().err
    )
    resolved = resolve(load_spec("caraml-resnet50"), "smoke")
    (config,) = build_configs(resolved, EXECUTOR.options, [], "cuda", EXECUTOR.defaults)
    assert {"num_workers", "data_decoder", "augment_device"} <= set(config.settings)
    EXECUTOR.check_config(resolved, config)
    assert not {"num_workers", "data_decoder", "augment_device"} & set(config.layers()["framework"])


def test_a_data_folder_without_imagenet_layout_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "data" / "train").mkdir(parents=True)
    assert main(["execute", SPEC, "--data", str(tmp_path / "data"), "--out", str(tmp_path / "a" / "b")]) == 2
    assert (
        f"error: --data {tmp_path / 'data'}: no folder {tmp_path / 'data' / 'val'}; expected train/<class>/<image>"
        in (capsys.readouterr().err)
    )


def test_workers_default_to_the_cores_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    option = WorkersOption("num_workers", "framework", "workers")
    monkeypatch.setattr(common.os, "sched_getaffinity", lambda pid: set(range(16)), raising=False)
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    assert option.default("cuda") == 15 and option.default("cpu") == 0
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")
    assert option.default("cuda") == 3
    monkeypatch.setattr(common.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert option.default("cuda") == 1


def test_a_gpu_run_without_triton_crops_with_torchs_kernels_and_records_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from specbench.data import cropkernel

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # a GPU machine, as the settings see it
    monkeypatch.setattr(cropkernel, "available", lambda device: False)
    resolved = resolve(load_spec(SPEC), "smoke")
    (config,) = build_configs(resolved, EXECUTOR.options, [], "cuda", EXECUTOR.defaults)
    assert config.settings["augment_kernel"] == "triton"  # the GPU default, before the check
    EXECUTOR.check_config(resolved, config)
    assert config.layers()["framework"]["augment_kernel"] == "torch"  # what runs is what is recorded
    (asked,) = build_configs(resolved, EXECUTOR.options, ["augment_kernel=triton"], "cuda", EXECUTOR.defaults)
    with pytest.raises(UsageError, match="--set augment_kernel=triton: Triton is not installed here"):
        EXECUTOR.check_config(resolved, asked)
