"""`specbench power -- CMD`: run a command while measuring power and energy, then summarize."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import click
from tabulate import tabulate

from specbench.power import close_meters, measure_command, probe_meters
from specbench.power.run import MeasuredCommand
from specbench.power.window import Window


@click.command(
    name="power",
    context_settings={
        "ignore_unknown_options": True,
        "allow_interspersed_args": False,
        "help_option_names": ["-h", "--help"],
    },
    epilog="\b\nTrace format: docs/power.md. Example:\n  specbench power --interval-ms 10 -- python train.py",
)
@click.option(
    "--meters",
    "-m",
    default="auto",
    show_default=True,
    metavar="auto|NAME[,NAME...]",
    help="Meters to use: nvml, amdsmi, rapl, hwmon, null, replay:DIR. 'auto' uses every one available here.",
)
@click.option(
    "--interval-ms",
    "-i",
    type=click.FloatRange(min=10, max=60_000),
    default=100,
    show_default=True,
    help="Sampling period of the power trace in milliseconds (10 to 60000).",
)
@click.option(
    "--out",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder for power.csv and power.json [default: ./power-YYYYmmdd-HHMMSS].",
)
@click.option(
    "--owner/--no-owner",
    default=None,
    help="Measure (or not) regardless of the local rank; default: only local rank 0 measures.",
)
@click.argument("cmd", nargs=-1, type=click.UNPROCESSED, required=True)
@click.pass_context
def command(
    ctx: click.Context, meters: str, interval_ms: float, out: Path | None, owner: bool | None, cmd: tuple[str, ...]
) -> None:
    """Run CMD, measure power and energy while it runs, write the trace, exit with CMD's exit code."""
    folder = out or Path(f"power-{datetime.now():%Y%m%d-%H%M%S}")
    opened, skipped = probe_meters(meters, owner=owner)
    try:
        result = measure_command(
            list(cmd), opened, folder, interval_s=interval_ms / 1000, metadata={"skipped_meters": skipped}
        )
    finally:
        close_meters(opened)
    click.echo(render_summary(result, skipped), err=True)
    ctx.exit(result.exit_code)


def render_summary(result: MeasuredCommand, skipped: dict[str, str]) -> str:
    """What is printed after the command: energy per device and scope (or why none), notes, where the trace is.

    Each reason is printed once: where no meter works, the skipped meters' reasons are the notes.
    """
    window = result.window
    if any(e.scope != "none" for e in window.devices):
        lines = [_device_table(window), ""]
        for scope, total in window.totals_by_scope().items():
            if scope != "none":
                lines.append(
                    f"{scope}: {total:.1f} J over {window.duration_s:.3f} s"
                    if total is not None
                    else f"{scope}: not measured"
                )
        notes = [f"{e.device}: {e.note}" for e in window.devices if e.note]
    else:
        lines = [f"duration: {window.duration_s:.3f} s", f"energy: not measured: {_why_not_measured(window, skipped)}"]
        notes = []
    notes += [f"{name} skipped: {reason}" for name, reason in skipped.items()]
    lines += [f"note: {note}" for note in notes]
    lines.append(f"trace: {result.trace_dir}/power.csv, {result.trace_dir}/power.json; exit code {result.exit_code}")
    return "\n".join(lines)


def _device_table(window: Window) -> str:
    rows = [
        [
            energy.device,
            energy.scope,
            _fmt(energy.energy_j, ".1f"),
            _fmt(energy.mean_power_w, ".1f"),
            energy.method.replace("_", " "),
            _fmt(energy.cross_check_ratio, ".4f", missing="n/a"),
            energy.samples,
        ]
        for energy in window.devices
    ]
    return tabulate(
        rows,
        headers=["device", "scope", "energy J", "mean power W", "method", "counter/integral", "samples"],
        disable_numparse=True,
    )


def _why_not_measured(window: Window, skipped: dict[str, str]) -> str:
    """Where every meter 'auto' tried was skipped, their reasons follow as notes; else the null meter's reason."""
    if skipped:
        return f"no power meter works here ({len(skipped)} skipped, each with its reason below)"
    return "; ".join(e.note for e in window.devices if e.note) or "no power meter was asked for"


def _fmt(value: float | None, spec: str, missing: str = "not measured") -> str:
    return missing if value is None else format(value, spec)
