"""`specbench execute`: run a spec on this machine into a submission folder."""

from __future__ import annotations

import socket
from pathlib import Path

import click

from specbench.spec.rules import LEVELS


def default_out() -> Path:
    host = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in socket.gethostname())[:64] or "localhost"
    return Path("submissions") / "local" / host


@click.command(
    name="execute",
    epilog="""\b
Exit codes: 0 every run reached its target (or completed, for throughput);
1 a run failed to reach its target; 2 unusable spec, options or data;
3 a run crashed (out of memory, ...); 130 interrupted. Runs already in
--out are kept and counted: executing again continues with the next run.""",
)
@click.argument("spec")
@click.option("--profile", default="official", show_default=True, help="Profile: official, smoke, ...")
@click.option(
    "--level", type=click.Choice(LEVELS), default=None, help="Benchmarking level [default: the spec's first]."
)
@click.option(
    "--runs", type=click.IntRange(min=1), default=None, help="Completed runs wanted [default: the spec's count]."
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Submission folder ORG/SYSTEM [default: submissions/local/<hostname>].",
)
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a hyperparameter or executor option; KEY=V1,V2 sweeps, each value its own result.",
)
@click.option(
    "--data",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Dataset folder (ImageNet: train/ and val/ in ImageFolder layout).",
)
@click.option(
    "--synthetic", is_flag=True, help="Random tensors on the device (throughput only; never ranked for quality)."
)
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True)
@click.option(
    "--power",
    default="auto",
    show_default=True,
    metavar="auto|none|nvml,rapl,...",
    help="Power meters; 'none' runs unmeasured (the result says so and is not ranked per watt).",
)
@click.option(
    "--interval-ms", type=click.FloatRange(10, 60000), default=100.0, show_default=True, help="Power sampling period."
)
def command(
    spec: str,
    profile: str,
    level: str | None,
    runs: int | None,
    out: Path | None,
    sets: tuple[str, ...],
    data: Path | None,
    synthetic: bool,
    device: str,
    power: str,
    interval_ms: float,
) -> None:
    """Run SPEC (a file or a built-in id) and write a submission folder.

    The spec, profile, level and every --set are checked against the level's rules
    before anything starts. Each run gets its own folder with the MLLOG log, the
    power trace and result.json; system.yaml, submission.yaml and manifest.json
    describe the machine, the configuration and every file's sha256.

    \b
    Example (the CPU-sized embedded default, about a minute on 2 cores):
      specbench execute resnet50 --profile smoke
    """
    from specbench.executors.harness import ExecuteRequest, execute

    request = ExecuteRequest(
        spec=spec,
        out=out or default_out(),
        profile=profile,
        level=level,  # type: ignore[arg-type]
        runs=runs,
        sets=list(sets),
        data=data,
        synthetic=synthetic,
        device=device,
        power=power,
        interval_ms=interval_ms,
    )
    code = execute(request)
    click.echo(f"submission: {request.out}", err=True)
    raise click.exceptions.Exit(code)
