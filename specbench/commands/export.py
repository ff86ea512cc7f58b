"""`specbench export`: specbench submissions in other benchmark suites' layouts (MLPerf Training)."""

from __future__ import annotations

import sys
from pathlib import Path

import click


@click.group(name="export")
def command() -> None:
    """Write specbench submissions in the layouts of other benchmark suites."""


@command.command(
    name="mlperf",
    epilog="\b\nLayout, system description and power logs: docs/mlperf-export.md.\n"
    "Exit codes: 0 written and the submission compliant, 1 written but the submission non-compliant\n"
    "(or warnings with --werror), 2 unusable submission, no MLPerf benchmark, or files in the way.",
)
@click.argument("submission", metavar="SUBMISSION", type=click.Path(path_type=Path))
@click.option(
    "--out",
    "-o",
    required=True,
    type=click.Path(path_type=Path),
    help="The MLPerf organisation folder to write (systems/, results/); existing files are never replaced.",
)
@click.option(
    "--field",
    "fields",
    multiple=True,
    metavar="KEY=VALUE",
    help="A field of MLPerf's system description that system.yaml does not state (repeatable), "
    "e.g. host_processors_per_node=2.",
)
@click.option("--format", "-f", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--werror", "-W", is_flag=True, help="Treat warnings as errors in the exit code.")
@click.pass_context
def mlperf(ctx: click.Context, submission: Path, out: Path, fields: tuple[str, ...], fmt: str, werror: bool) -> None:
    """Write SUBMISSION (ORG/SYSTEM) in MLPerf Training's layout, for MLPerf's package checker and summarizer.

    Its benchmarks that answer an MLPerf spec (mlperf-resnet50 -> resnet) go to
    OUT/results/<system>/<benchmark>/result_N.txt (each log verbatim), with power/ in MLPerf's
    node-log format where a run measured whole nodes, and OUT/systems/<system>.json. An imported
    MLPerf result goes back under its own names. SUBMISSION is validated first and only read.
    """
    from specbench.mlperf.export import export_submission, render_json, render_text

    outcome = export_submission(submission, out, list(fields))
    sys.stdout.write(render_json(outcome, werror) if fmt == "json" else render_text(outcome, werror))
    ctx.exit(outcome.exit_code(werror))
