"""`kernel_tuning`: inductor's coordinate-descent tuning on top of the compile mode, refused without a compile."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from specbench.errors import UsageError

pytestmark = pytest.mark.needs("torch")


def _ctx(**settings: Any) -> Any:
    return SimpleNamespace(
        settings=settings, dist=SimpleNamespace(active=False), device="cpu", progress=SimpleNamespace(message=print)
    )


@pytest.fixture
def compiled(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> list[dict[str, Any]]:
    import torch

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))

    calls: list[dict[str, Any]] = []

    def fake_compile(model: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return model

    monkeypatch.setattr(torch, "compile", fake_compile)
    return calls


def test_option_is_a_framework_choice() -> None:
    from specbench.workloads.conv import CONV_OPTIONS

    option = CONV_OPTIONS["kernel_tuning"]
    assert option.layer == "framework"
    assert option.choices == ("none", "coordinate-descent")
    assert option.default("cuda") == option.default("cpu") == "none"


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("default", {"coordinate_descent_tuning": True}),
        ("reduce-overhead", {"triton.cudagraphs": True, "coordinate_descent_tuning": True}),
    ],
)
def test_tuning_adds_to_the_modes_own_options(
    compiled: list[dict[str, Any]], mode: str, expected: dict[str, Any]
) -> None:
    import torch

    from specbench.workloads.conv import wrap_model

    wrap_model(_ctx(compile_mode=mode, kernel_tuning="coordinate-descent"), torch.nn.Linear(2, 2))
    assert compiled == [{"options": expected}]


def test_without_tuning_the_mode_is_passed_as_before(compiled: list[dict[str, Any]]) -> None:
    import torch

    from specbench.workloads.conv import wrap_model

    wrap_model(_ctx(compile_mode="reduce-overhead", kernel_tuning="none"), torch.nn.Linear(2, 2))
    wrap_model(_ctx(compile_mode="default"), torch.nn.Linear(2, 2))
    assert compiled == [{"mode": "reduce-overhead"}, {"mode": None}]


def test_tuning_without_compile_is_refused(compiled: list[dict[str, Any]]) -> None:
    import torch

    from specbench.workloads.conv import wrap_model

    with pytest.raises(UsageError, match="set compile_mode too"):
        wrap_model(_ctx(compile_mode="none", kernel_tuning="coordinate-descent"), torch.nn.Linear(2, 2))
    assert compiled == []


def test_tuning_without_compile_is_refused_before_the_run_starts(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from specbench.cli import main

    out = tmp_path / "org" / "sys"
    code = main(["execute", "caraml-resnet50", "--profile", "smoke", "--set", "kernel_tuning=coordinate-descent",
                 "--out", str(out)])  # fmt: skip
    assert code == 2
    assert "--set kernel_tuning=coordinate-descent: kernel_tuning tunes torch.compile's kernels" in (
        capsys.readouterr().err
    )
    assert not (tmp_path / "org").exists()
