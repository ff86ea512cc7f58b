"""`specbench specs`: list the built-in specs."""

from __future__ import annotations

import click
from tabulate import tabulate

from specbench.accounting.quality import comparison
from specbench.spec import builtin
from specbench.spec.loader import load_spec


def spec_rows() -> list[list[str]]:
    """One row per built-in spec: id, version, kind, metric, target, title."""
    rows = []
    for path in builtin.spec_paths():
        spec = load_spec(path).spec
        if spec.quality is not None:
            metric = spec.quality.metric
            target = f"{comparison(spec.quality.direction)} {spec.quality.target:g}"
        else:
            metric = ", ".join(spec.throughput.metrics) if spec.throughput else ""
            target = "-"
        rows.append([spec.id, spec.version, spec.kind, metric, target, spec.title])
    return rows


@click.command(name="specs")
def command() -> None:
    """List the built-in specs with their kind, quality metric and target."""
    click.echo(tabulate(spec_rows(), headers=["id", "version", "kind", "metric", "target", "title"]))
