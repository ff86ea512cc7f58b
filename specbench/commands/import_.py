"""`specbench import`: results of other benchmark suites as specbench submissions (MLPerf Training)."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import click


@click.group(name="import")
def command() -> None:
    """Import results published by other benchmark suites as specbench submissions."""


@command.command(
    name="mlperf",
    epilog="\b\nMapping, power and partial coverage: docs/mlperf-import.md. Finding codes: docs/rules.md.\n"
    "Exit codes: 0 every imported submission compliant, 1 some non-compliant (errors, or warnings\n"
    "with --werror), 2 nothing importable under RESULTS_ROOT, or --out inside it.",
)
@click.argument("root", metavar="RESULTS_ROOT", type=click.Path(path_type=Path))
@click.option(
    "--out",
    "-o",
    required=True,
    type=click.Path(path_type=Path),
    help="Folder for the submissions (ORG/SYSTEM below the round's folder); must lie outside RESULTS_ROOT.",
)
@click.option(
    "--spec",
    "-S",
    default=None,
    help="Import only the benchmark this spec answers (file or built-in id) [default: every benchmark a "
    "built-in MLPerf spec answers: `specbench specs` lists them].",
)
@click.option("--format", "-f", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--werror", "-W", is_flag=True, help="Treat warnings as errors in the exit code.")
@click.option(
    "--summary/--full",
    default=True,
    help="Text report: each system's findings as counts by code, each with its first finding, then the verdict; "
    "or every finding with its MLPerf source  [default: --summary]",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Systems converted and validated at once, in that many processes [default: the CPUs available].",
)
@click.pass_context
def mlperf(
    ctx: click.Context,
    root: Path,
    out: Path,
    spec: str | None,
    fmt: str,
    werror: bool,
    summary: bool,
    jobs: int | None,
) -> None:
    """Convert an MLPerf Training results tree into validated, scored specbench submissions.

    RESULTS_ROOT holds <org>/systems/<system>.json and <org>/results/<system>/<benchmark>/
    result_*.txt (with optional power/result_*/node_N.txt and sw_N.txt), or rounds of them
    (v4.0/<org>/...). Each system becomes OUT/[round/]ORG/SYSTEM with the logs verbatim, node
    power logs as a node-scope trace, the system mapped onto the nine layers, and import.json
    recording every source file's sha256. RESULTS_ROOT is only read.
    """
    collecting = gc.isenabled()
    gc.disable()  # the modules' classes and the logs' events hold no cycles to collect (import_results says more)
    try:
        from specbench.mlperf import import_results
        from specbench.mlperf.report import render_json, render_text
        from specbench.run.progress import Progress

        outcome = import_results(root, out, spec, jobs, progress=Progress().phase)
        sys.stdout.write(render_json(outcome, werror) if fmt == "json" else render_text(outcome, werror, not summary))
    finally:
        if collecting:
            gc.enable()
    ctx.exit(outcome.exit_code(werror))
