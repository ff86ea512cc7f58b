"""`fused_kernels`: the stem's pooling kernel by default on an NVIDIA GPU with Triton, torch's operators elsewhere."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.needs("torch", "torchvision")


@pytest.fixture
def option() -> Any:
    from specbench.workloads.resnet50.executor import OPTIONS

    return OPTIONS["fused_kernels"]


def test_a_framework_choice_of_three(option: Any) -> None:
    assert option.layer == "framework"
    assert option.choices == ("none", "pool", "triton")


def _triton(monkeypatch: pytest.MonkeyPatch, works: bool) -> None:
    import torch.utils._triton as triton_support

    monkeypatch.setattr(triton_support, "has_triton", lambda: works)


def test_pool_on_an_nvidia_gpu_with_triton(option: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    monkeypatch.setattr(torch.version, "hip", None)
    _triton(monkeypatch, True)
    assert option.default("cuda") == "pool"
    assert option.default("cpu") == "none"


def test_none_on_rocm_or_without_triton(option: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    _triton(monkeypatch, True)
    monkeypatch.setattr(torch.version, "hip", "6.2")
    assert option.default("cuda") == "none"
    monkeypatch.setattr(torch.version, "hip", None)
    _triton(monkeypatch, False)
    assert option.default("cuda") == "none"


def test_the_default_is_recorded_in_the_framework_layer(option: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A CUDA run's submission says which kernels ran: the setting is in the framework layer with the others."""
    import torch

    from specbench.run.config import build_configs
    from specbench.spec.loader import load_spec
    from specbench.spec.resolve import resolve
    from specbench.workloads.resnet50.executor import ResNet50Executor

    monkeypatch.setattr(torch.version, "hip", None)
    _triton(monkeypatch, True)
    executor = ResNet50Executor()
    resolved = resolve(load_spec("caraml-resnet50"), "smoke")
    (config,) = build_configs(resolved, executor.options, [], "cuda", executor.defaults)
    assert config.layers()["framework"]["fused_kernels"] == "pool"
    (config,) = build_configs(resolved, executor.options, ["fused_kernels=none"], "cuda", executor.defaults)
    assert config.layers()["framework"]["fused_kernels"] == "none"
    (config,) = build_configs(resolved, executor.options, [], "cpu", executor.defaults)
    assert config.layers()["framework"]["fused_kernels"] == "none"


@pytest.mark.parametrize("value", ["pool", "triton"])
def test_a_cpu_run_is_refused_before_it_starts(value: str, tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from specbench.cli import main

    out = tmp_path / "org" / "sys"
    code = main(["execute", "caraml-resnet50", "--profile", "smoke", "--device", "cpu", "--set",
                 f"fused_kernels={value}", "--out", str(out)])  # fmt: skip
    assert code == 2
    assert f"--set fused_kernels={value}: runs Triton kernels on a CUDA device (--device cuda)" in (
        capsys.readouterr().err
    )
    assert not (tmp_path / "org").exists()


def test_a_refused_default_names_itself(option: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A value nobody set is reported as the device's default, not as a --set."""
    from specbench.errors import UsageError
    from specbench.run.config import build_configs
    from specbench.spec.loader import load_spec
    from specbench.spec.resolve import resolve
    from specbench.workloads.resnet50.executor import ResNet50Executor

    monkeypatch.setattr(type(option), "default", lambda self, device: "pool")
    executor = ResNet50Executor()
    resolved = resolve(load_spec("caraml-resnet50"), "smoke")
    with pytest.raises(UsageError, match=r"^fused_kernels=pool \(the default on cpu\): runs Triton kernels"):
        build_configs(resolved, executor.options, [], "cpu", executor.defaults)


def test_a_context_built_by_hand_is_refused_off_cuda(tmp_path: Any) -> None:
    """setup checks again what build_configs refuses, for callers that skip it."""
    from types import SimpleNamespace

    from specbench.errors import UsageError
    from specbench.spec.loader import load_spec
    from specbench.spec.resolve import resolve
    from specbench.workloads.resnet50.executor import ResNet50Executor

    ctx = SimpleNamespace(
        spec=resolve(load_spec("caraml-resnet50"), "smoke"),
        device="cpu",
        settings={"fused_kernels": "pool", "precision": "fp32"},
        hyperparameters={"global_batch_size": 8},
        dist=SimpleNamespace(world=1, active=False, rank=0),
    )
    with pytest.raises(UsageError, match="fused_kernels=pool: runs Triton kernels on a CUDA device"):
        ResNet50Executor().setup(ctx)


def test_none_where_cuda_is_claimed_but_cannot_start(option: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Planning a CUDA run on a host whose driver is missing picks torch's pooling instead of failing."""
    import torch
    import torch.utils._triton as triton_support

    def no_driver() -> bool:
        raise RuntimeError("Found no NVIDIA driver on your system")

    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(triton_support, "has_triton", no_driver)
    assert option.default("cuda") == "none"
