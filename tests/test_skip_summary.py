"""The skip summary's groups: every skip reason the suite gives falls in one, and the README lists each."""

from __future__ import annotations

import pytest
from support.skips import CORPUS, RUN_EXTRA, SKIP_NEEDS, needs_reason, skip_need

REASONS = {
    f"no MLPerf corpus at {CORPUS / 'mlperf-training'}": "the MLPerf corpus",
    f"corpus missing: {CORPUS / 'mlperf-rounds' / 'hpc-v2.0'}": "the MLPerf corpus",
    f"no v4.0 round at {CORPUS / 'mlperf-v4.0-resnet-round'}": "the MLPerf corpus",
    "no v4.0 round in the corpus": "the MLPerf corpus",
    "the shared MLPerf corpus is not here": "the MLPerf corpus",
    "../shared/corpus is not beside this checkout": "the MLPerf corpus",
    "playwright or chromium is not installed": "Chromium and playwright (the browser test)",
    "needs a CUDA GPU": "an NVIDIA GPU",
    "this GPU has no hardware JPEG decoder": "an NVIDIA GPU",
    "Triton's interpreter before 3.8 cannot run the kernels' loops": "an NVIDIA GPU",
    needs_reason(["torch", "torchvision"]): "the run extra (torch, torchvision, ...) of the core install",
    "ssh-keygen (OpenSSH) is not installed": "OpenSSH's ssh-keygen",
    "no running Slurm here (start one with .ci/slurm.sh start)": "a running Slurm (the sbatch test)",
}


@pytest.mark.parametrize(("reason", "need"), REASONS.items())
def test_a_skip_reason_is_counted_under_what_it_needs(reason: str, need: str) -> None:
    assert skip_need(reason)[0] == need


def test_an_unknown_reason_is_its_own_group() -> None:
    assert skip_need("this host has the submission's 2 x NVIDIA H200") != skip_need("something else")
    assert skip_need("something else") == ("something else", "")


def test_the_run_extra_group_says_the_install_command() -> None:
    assert dict((need, how) for _, need, how in SKIP_NEEDS)[skip_need(needs_reason(["torch"]))[0]] == RUN_EXTRA
