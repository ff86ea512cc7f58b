"""The core packages import without torch or vendor libraries; docs are current."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from specbench.spec.reference import render

REPO = Path(__file__).resolve().parent.parent


def test_core_imports_without_heavy_dependencies() -> None:
    code = (
        "import sys\n"
        "import specbench.spec, specbench.scoring, specbench.accounting.flops, specbench.physics, specbench.cli\n"
        "heavy = [m for m in ('torch', 'torchvision', 'transformers', 'pynvml', 'amdsmi') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def test_the_mlperf_import_and_the_file_writers_need_no_run_workloads_or_data_package() -> None:
    code = (
        "import sys\n"
        "import specbench.files, specbench.mlperf.convert, specbench.mlperf.importer, specbench.mlperf.power\n"
        "loaded = [m for m in sys.modules if m.split('.')[:2] in (['specbench', 'run'], ['specbench', 'workloads'], ['specbench', 'data'])]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def test_spec_reference_is_current() -> None:
    committed = (REPO / "docs" / "spec-reference.md").read_text()
    assert committed == render(), "run: python -m specbench.spec.reference > docs/spec-reference.md"
