"""`specbench score`: validate, then score and rank submissions."""

from __future__ import annotations

import os
from pathlib import Path

import click

FORMATS = ("table", "markdown", "csv", "json", "html")


@click.command(
    name="score",
    epilog="""\b
Exit codes: 0 scored (non-compliant submissions are listed with their
reasons and never ranked); 2 no submission found or unusable input.""",
)
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--format", "-f", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option(
    "--out",
    "-o",
    type=click.Path(path_type=Path),
    default=None,
    help="File to write (folder for html) [default: stdout; ./leaderboard for html].",
)
@click.option("--spec", "-S", default=None, help="An extra spec file (or built-in id) submissions may answer.")
@click.option(
    "--jobs", "-j", type=click.IntRange(min=1), default=None, help="Validation processes  [default: the CPUs available]"
)
@click.option(
    "--allowed-signers",
    "-a",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="OpenSSH allowed_signers file: only submissions whose manifest.json a listed key signed are ranked.",
)
@click.option(
    "--devices",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="A device facts table used instead of specbench/physics/devices.yaml (same format, each row with its "
    "sources; docs/devices.md).",
)
@click.option(
    "--reproductions",
    "-r",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Folder of `specbench reproduce` re-runs: each entry shows reproduced or contradicted; a contradicted one "
    "is never ranked, an unconfirmed one only once reproduced (docs/reproduce.md).",
)
def command(
    paths: tuple[Path, ...],
    fmt: str,
    out: Path | None,
    spec: str | None,
    jobs: int | None,
    allowed_signers: Path | None,
    devices: Path | None,
    reproductions: Path | None,
) -> None:
    """Validate and score PATHS (submission folders, or folders holding them, e.g. submissions/).

    Per run: time to quality, energy over the timed window, FLOPs by the spec's
    accounting, Valid FLOPS and Valid FLOPS/W (throughput: samples/s, TFLOP/s per
    device, MFU, energy per sample). Runs combine as the spec says (olympic mean
    drops the fastest and slowest). One table per spec, version, level, profile and
    power scope; smoke profiles and non-compliant submissions are never ranked. With
    --allowed-signers, an unsigned submission or one signed by another key is non-compliant.
    """
    from specbench.errors import InternalError, UsageError
    from specbench.scoring import render
    from specbench.scoring.leaderboard import build
    from specbench.sshsig import load_allowed_signers
    from specbench.textsafe import visible
    from specbench.validator import discover, validate_many
    from specbench.validator.validate import available_cpus

    folders = _unique([folder for path in paths for folder in discover(path)])
    if not folders:
        raise UsageError(
            f"no submission folder (with system.yaml or submission.yaml) under {', '.join(map(str, paths))}"
        )
    signers = None if allowed_signers is None else load_allowed_signers(allowed_signers)
    reports = validate_many(folders, spec, jobs=jobs or available_cpus(), signers=signers, devices=devices)
    reruns = []
    if reproductions is not None:
        from specbench.scoring.reproductions import RETAINED, notices, reproduction_folders, reruns_of

        found = reproduction_folders(reproductions)
        validated = validate_many(
            found, jobs=jobs or available_cpus(), signers=signers, devices=devices, retain=RETAINED
        )
        reruns = reruns_of(validated)
    board = build(reports, roots=paths, reruns=reruns)
    if reproductions is not None:
        for line in notices(reproductions, reruns, board):
            click.echo(f"reproductions: {line}", err=True)
    if fmt == "html":
        from specbench.scoring.html import write_site

        site = write_site(board, out or Path("leaderboard"))
        click.echo(render.render_table(board), nl=False)
        click.echo(f"\nleaderboard: {site.index}")
        if site.not_rendered:
            for failure in site.not_rendered:
                click.echo("\n".join(visible(line) for line in failure.trace.splitlines()), err=True)
                click.echo(f"not rendered: {visible(failure.what)}: {visible(failure.reason)}", err=True)
            raise InternalError(f"{len(site.not_rendered)} part(s) of the board not rendered; the rest is written")
        return
    text = {
        "table": lambda: render.render_table(board),
        "markdown": lambda: render.render_table(board, "github"),
        "csv": lambda: render.render_csv(board),
        "json": lambda: render.render_json(board),
    }[fmt]()
    if out is None:
        click.echo(text, nl=False)
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        click.echo(f"wrote {out}", err=True)


def _unique(folders: list[Path]) -> list[Path]:
    """Each folder once, in the order first given: a folder named twice (or through a link) is one submission."""
    seen: dict[str, Path] = {}
    for folder in folders:
        seen.setdefault(os.path.realpath(folder), folder)
    return list(seen.values())
