"""`specbench specs`: list the built-in specs, and which of them specbench runs."""

from __future__ import annotations

import click
from tabulate import tabulate

from specbench.accounting.quality import comparison
from specbench.spec import builtin
from specbench.spec.loader import load_spec
from specbench.spec.models import Spec

HEADERS = ["id", "version", "kind", "metric", "target", "runs", "title"]
IMPORTED = "import"
"""The `runs` column of a spec without an executor: an MLPerf benchmark whose results are imported."""


def runs_with(spec: Spec) -> str:
    """How the spec runs: its executor, with `+ smoke` where a smoke profile runs it small, or `import`."""
    executor = spec.workload.executor
    if executor is None:
        return IMPORTED
    return f"{executor} + smoke" if "smoke" in spec.profiles else executor


def spec_rows() -> list[list[str]]:
    """One row per built-in spec: id, version, kind, metric, target, how it runs, title."""
    rows = []
    for path in builtin.spec_paths():
        spec = load_spec(path).spec
        if spec.quality is not None:
            metric = spec.quality.metric
            target = f"{comparison(spec.quality.direction)} {spec.quality.target:g}"
        else:
            metric = ", ".join(spec.throughput.metrics) if spec.throughput else ""
            target = "-"
        rows.append([spec.id, spec.version, spec.kind, metric, target, runs_with(spec), spec.title])
    return rows


def footer(rows: list[list[str]]) -> str:
    """What the `runs` column says, with the counts and the commands."""
    runnable = [row[0] for row in rows if row[5] != IMPORTED]
    smoke = [row[0] for row in rows if row[5].endswith("+ smoke")]
    return (
        f"{len(runnable)} of {len(rows)} specs run here (runs: the executor), {len(smoke)} of them with a smoke profile "
        "(the same code at a small scale, on a CPU, never ranked): specbench execute SPEC --profile smoke "
        "(docs/execute.md).\n"
        f"The other {len(rows) - len(runnable)} are MLPerf benchmarks whose published results are imported "
        "(runs: import): specbench import mlperf RESULTS_ROOT --out DIR."
    )


@click.command(name="specs")
def command() -> None:
    """List the built-in specs with their kind, quality metric, target, and how each runs (its executor and smoke
    profile, or `import` for an MLPerf benchmark whose results are imported)."""
    rows = spec_rows()
    click.echo(tabulate(rows, headers=HEADERS))
    click.echo()
    click.echo(footer(rows))
