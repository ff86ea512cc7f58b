"""The validator: every rule of spec, log, power trace and files, checked before anything is scored.

Imports neither torch nor vendor libraries. Typical use by a scorer:

    report = validate_submission("submissions/acme/box1")
    if report.compliant():
        for bench in report.benchmarks:
            for run in bench.runs:
                run.duration_s, run.best, run.power.energy_j if run.power else None
"""

from __future__ import annotations

from specbench.formats.mllog import LogEvent, ParsedLog, parse_log
from specbench.validator.codes import CODES, Code, Severity
from specbench.validator.files import DEFAULT_LIMITS, Limits
from specbench.validator.findings import Finding
from specbench.validator.model import BenchmarkData, Evaluation, PowerData, Report, RunData, exit_code
from specbench.validator.render import render_json, render_text
from specbench.validator.validate import classify, discover, validate_many, validate_submission

__all__ = [
    "CODES",
    "DEFAULT_LIMITS",
    "BenchmarkData",
    "Code",
    "Evaluation",
    "Finding",
    "Limits",
    "LogEvent",
    "ParsedLog",
    "PowerData",
    "Report",
    "RunData",
    "Severity",
    "classify",
    "discover",
    "exit_code",
    "parse_log",
    "render_json",
    "render_text",
    "validate_many",
    "validate_submission",
]
