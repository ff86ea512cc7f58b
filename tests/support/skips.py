"""What a skipped test needs, read from its skip reason, and how to get it: the skip summary's groups (tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RUN_EXTRA = "pip install -e '.[run]'"
CORPUS = REPO.parent / "shared" / "corpus"
SKIP_NEEDS = (
    (("corpus", "round at", "round in"), "the MLPerf corpus", f"put it at {CORPUS} (../shared/corpus beside the checkout)"),
    (("playwright", "chromium"), "Chromium and playwright (the browser test)",
     "playwright comes with the dev extra; Chromium: apt-get install chromium (Debian's, as .ci/run installs it)"),
    (("gpu", "cuda", "triton's interpreter"), "an NVIDIA GPU", "run the suite on a host with one (and torch built for CUDA)"),
    (("run extra",), "the run extra (torch, torchvision, ...) of the core install", RUN_EXTRA),
    (("ssh-keygen",), "OpenSSH's ssh-keygen", "apt-get install openssh-client"),
    (("slurm",), "a running Slurm (the sbatch test)", "bash .ci/slurm.sh start"),
)  # fmt: skip
"""Skip reasons by what the skipped tests need, each with how to get it: (words of the reasons, need, how)."""


def needs_reason(absent: list[str]) -> str:
    """The reason of a test skipped by its `needs` marker (tests/conftest.py), naming the packages missing."""
    return f"needs {', '.join(absent)}, which this install lacks (the run extra: {RUN_EXTRA})"


def skip_reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return reason.removeprefix("Skipped: ")


def skip_need(reason: str) -> tuple[str, str]:
    """(what a skipped test needs, how to get it) for its reason; an unknown reason is its own need."""
    lowered = reason.lower()
    for words, need, how in SKIP_NEEDS:
        if any(word in lowered for word in words):
            return need, how
    return reason, ""
