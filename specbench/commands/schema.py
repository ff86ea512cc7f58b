"""`specbench schema`: export the JSON Schemas of the file formats."""

from __future__ import annotations

from pathlib import Path

import click

from specbench.spec.schema import SCHEMAS, export, render


@click.command(name="schema")
@click.option(
    "--out",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder to write <name>.schema.json files into (e.g. schemas/).",
)
@click.argument("name", required=False, type=click.Choice(sorted(SCHEMAS)))
def command(out: Path | None, name: str | None) -> None:
    """Print the JSON Schema NAME, or write all schemas with --out.

    Schemas: spec, ruleset, system (system.yaml), submission (submission.yaml).
    """
    if out is not None:
        for path in export(out):
            click.echo(f"wrote {path}")
        return
    if name is None:
        raise click.UsageError("give a schema NAME to print, or --out DIR to write them all")
    click.echo(render(name), nl=False)
