"""`specbench reproduce`: re-run a submitted benchmark on this host and record whether it reproduces."""

from __future__ import annotations

from pathlib import Path

import click

from specbench.commands.options import interval_ms_option


@click.command(
    name="reproduce",
    epilog="""\b
Exit codes: 0 reproduced; 1 contradicted (a metric beyond its tolerance);
2 refused or no verdict: the submission is not compliant, its spec is not
installed, this host's devices differ in model or count, the re-run's
processes exceed this host's usable CPUs (a CPU run) or visible GPUs (a
GPU run), --out already holds a reproduction, or the re-run cannot settle
the claim; 4 a run of
the re-run crashed; 130 interrupted.
Tolerances and the record's fields: docs/reproduce.md.""",
)
@click.argument("submission", type=click.Path(path_type=Path), metavar="SUBMISSION")
@click.option(
    "--runs",
    type=click.IntRange(min=1),
    default=None,
    help="Runs of the re-run [default: as many as the submission has]; its best run is compared with the claim.",
)
@click.option(
    "--out",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder ORG/SYSTEM of the re-run and its reproduction.json [default: reproductions/ORG/SYSTEM, the "
    "submission's names].",
)
@click.option(
    "--data",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="This host's copy of the dataset the submission trained on (its facts must match the submission's).",
)
@click.option(
    "--power",
    "-m",
    default="auto",
    show_default=True,
    metavar="auto|none|nvml,rapl,...",
    help="Power meters of the re-run ('none' only where the submission measured no energy).",
)
@interval_ms_option
def command(
    submission: Path, runs: int | None, out: Path | None, data: Path | None, power: str, interval_ms: float
) -> None:
    """Re-run SUBMISSION on this host and judge its claim: reproduced or contradicted.

    SUBMISSION is an ORG/SYSTEM folder holding one benchmark, or a BENCHMARK folder. It is
    validated first (a non-compliant one is refused); its spec is found by sha256 among the
    installed specs. The re-run is `specbench execute` of the same spec, profile, level,
    hyperparameters and settings (as --set overrides, checked by the spec's rules) and seeds,
    on a host with the same devices in model and count (refused otherwise). Time or
    throughput, quality and energy per sample are compared within tolerances derived from
    the spec; reproduction.json in --out records both values of each, the ratio, the
    tolerance and the verdict; `specbench sign OUT -k KEY` signs it with the re-run's files.

    \b
    Examples:
      specbench reproduce submissions/specbench/h200 --out reproductions/specbench/h200
      specbench reproduce submissions/acme/box/caraml-resnet50 --runs 5
      specbench score submissions/ --reproductions reproductions/
    """
    from specbench.reproduce.plan import RerunRequest
    from specbench.reproduce.report import render_outcome
    from specbench.reproduce.rerun import reproduce

    request = RerunRequest(out=out, runs=runs, data=data, power=power, interval_ms=interval_ms)
    outcome = reproduce(submission, request)
    click.echo(render_outcome(outcome), nl=False)
    raise click.exceptions.Exit(outcome.exit_code)
