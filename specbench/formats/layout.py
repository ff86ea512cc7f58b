"""The submission layout: every file and folder name of a submission, defined here once.

    ORG/SYSTEM/system.yaml, manifest.json, manifest.json.sig, import.json, reproduction.json
    ORG/SYSTEM/BENCHMARK/submission.yaml
    ORG/SYSTEM/BENCHMARK/run_N/log.txt, result.json, state.json, power.csv, power.json, error.txt

The executors write it and the validator judges it; both take the names from here (docs/submission-format.md).
Each file's format has its own module: the manifest in specbench.files, system.yaml and submission.yaml in
specbench.spec.system, result.json in specbench.spec.result, power.json in specbench.power.metadata,
log.txt in specbench.formats.mllog, import.json in specbench.formats.mlperf_import, reproduction.json in
specbench.formats.reproduction.
"""

from __future__ import annotations

import re

from specbench.files import MANIFEST, SIGNATURE_FILE
from specbench.formats.mlperf_import import IMPORT_FILE
from specbench.formats.reproduction import REPRODUCTION_FILE

SYSTEM_FILE = "system.yaml"
BENCHMARK_FILE = "submission.yaml"
ROOT_FILES = (SYSTEM_FILE, MANIFEST, SIGNATURE_FILE, IMPORT_FILE, REPRODUCTION_FILE)
"""What ORG/SYSTEM may hold beside its BENCHMARK folders."""

RUN_FOLDER = re.compile(r"^run_([1-9][0-9]{0,5})$")
LOG_FILE = "log.txt"
RESULT_FILE = "result.json"
STATE_FILE = "state.json"
ERROR_FILE = "error.txt"
POWER_CSV = "power.csv"
POWER_JSON = "power.json"
RUN_REQUIRED = (LOG_FILE, RESULT_FILE, STATE_FILE)
RUN_OPTIONAL = (POWER_CSV, POWER_JSON, ERROR_FILE)

__all__ = [
    "BENCHMARK_FILE",
    "ERROR_FILE",
    "IMPORT_FILE",
    "LOG_FILE",
    "MANIFEST",
    "POWER_CSV",
    "POWER_JSON",
    "REPRODUCTION_FILE",
    "RESULT_FILE",
    "ROOT_FILES",
    "RUN_FOLDER",
    "RUN_OPTIONAL",
    "RUN_REQUIRED",
    "SIGNATURE_FILE",
    "STATE_FILE",
    "SYSTEM_FILE",
]
