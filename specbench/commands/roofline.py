"""`specbench roofline`: measure this device's ceilings, place submitted runs under them, write JSON and plots."""

from __future__ import annotations

import shlex
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

if TYPE_CHECKING:
    from specbench.roofline import Roofline

MEASURE_OPTIONS = (
    "device",
    "profile",
    "precisions",
    "sizes",
    "conv_precisions",
    "conv_batch",
    "hold_s",
    "power",
    "interval_ms",
    "threads",
)


def _csv(value: str | None) -> tuple[str, ...] | None:
    return tuple(part.strip() for part in value.split(",") if part.strip()) if value else None


def _sizes(value: str | None) -> tuple[int, ...] | None:
    parts = _csv(value)
    if parts is None:
        return None
    if not all(part.isdigit() and int(part) > 0 for part in parts):
        raise click.BadParameter(f"expected positive integers separated by commas, got {value!r}", param_hint="--sizes")
    return tuple(int(part) for part in parts)


def _command_line(ctx: click.Context) -> str:
    """The invocation as options given on the command line (what roofline.json records as `command`)."""
    words = ["specbench", "roofline"]
    for name, value in ctx.params.items():
        if ctx.get_parameter_source(name) != ParameterSource.COMMANDLINE or name == "submissions":
            continue
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            words.append(flag if value else "--no-" + name.replace("_", "-"))
        else:
            words += [flag, str(value)]
    words += [str(path) for path in ctx.params.get("submissions", ())]
    return shlex.join(words)


@click.command(
    name="roofline",
    epilog="""\b
Output: DIR/roofline.json (format: docs/roofline.md), DIR/roofline.png, DIR/roofline.svg.
Examples:
  specbench roofline --out out/roofline submissions/specbench/h200
  specbench roofline --from benchmarks/results/roofline_h200.json --out /tmp/r submissions/specbench/h200""",
)
@click.argument("submissions", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--from",
    "from_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Read ceilings from this roofline.json instead of measuring (no GPU or torch needed).",
)
@click.option(
    "--out",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Output folder [default: ./roofline-YYYYmmdd-HHMMSS].",
)
@click.option("--device", "-d", type=click.Choice(["auto", "cuda", "cpu"]), default="auto", show_default=True)
@click.option(
    "--profile",
    "-p",
    type=click.Choice(["full", "quick"]),
    default="full",
    show_default=True,
    help="Sizes and repeats: 'quick' is a small, fast pass (CI).",
)
@click.option("--precisions", default=None, help="GEMM precisions, from fp32,tf32,bf16,fp16,fp8 [default: profile's].")
@click.option(
    "--sizes", default=None, help="GEMM sizes N of the N x N x N sweep, comma-separated [default: profile's]."
)
@click.option("--conv-precisions", default=None, help="Convolution precisions [default: profile's].")
@click.option("--conv-batch", type=click.IntRange(min=1), default=None, help="Convolution batch [default: profile's].")
@click.option(
    "--hold-s",
    type=click.FloatRange(min=0),
    default=None,
    help="Seconds of sustained load per power window; 0 measures no power [default: profile's].",
)
@click.option(
    "--power",
    "-m",
    default="auto",
    show_default=True,
    metavar="auto|none|nvml,rapl,...",
    help="Power meters; 'none' measures no energy (the file says 'not measured').",
)
@click.option("--interval-ms", "-i", type=click.FloatRange(10, 60000), default=100.0, show_default=True)
@click.option("--threads", type=click.IntRange(min=1), default=None, help="torch CPU threads [default: torch's].")
@click.option("--plot/--no-plot", default=True, show_default=True, help="Write roofline.png and roofline.svg.")
@click.pass_context
def command(
    ctx: click.Context,
    submissions: tuple[Path, ...],
    from_file: Path | None,
    out: Path | None,
    plot: bool,
    **measure_options: Any,
) -> None:
    """Measure compute and memory ceilings here and place SUBMISSIONS' runs under them.

    GEMM per precision over a size sweep, ResNet-50's convolutions (forward, backward-data,
    backward-filter) and a device-to-device copy, each timed after warm-up (median of
    launches) on fresh random inputs, with energy over a sustained window where a meter
    exists. Each SUBMISSION (result.json, run, benchmark or ORG/SYSTEM folder) gives one
    point per run: FLOP/s per device against FLOPs per byte of an analytical byte count.
    """
    from specbench.errors import UsageError
    from specbench.roofline import place, read_roofline, render_text, save_plots, write_roofline

    folder = out or Path(f"roofline-{datetime.now():%Y%m%d-%H%M%S}")
    if from_file is not None:
        given = [n for n in MEASURE_OPTIONS if ctx.get_parameter_source(n) == ParameterSource.COMMANDLINE]
        if given:
            flags = ", ".join("--" + n.replace("_", "-") for n in given)
            raise UsageError(f"--from reads ceilings already measured; {flags} would not be used: drop them")
        roofline = read_roofline(from_file)
    else:
        roofline = _measure(_command_line(ctx), **measure_options)
    roofline = place(roofline, submissions)
    written = [write_roofline(roofline, folder / "roofline.json")]
    if plot:
        written += save_plots(roofline, folder)
    click.echo(render_text(roofline))
    click.echo("wrote " + ", ".join(str(p) for p in written), err=True)


def _measure(
    command_line: str,
    device: str,
    profile: str,
    precisions: str | None,
    sizes: str | None,
    conv_precisions: str | None,
    conv_batch: int | None,
    hold_s: float | None,
    power: str,
    interval_ms: float,
    threads: int | None,
) -> Roofline:
    from specbench.power import Meter, NullMeter, close_meters, open_meters
    from specbench.roofline import default_config, measure
    from specbench.roofline.device import choose_device

    chosen = choose_device(device)
    config = default_config(
        chosen,
        profile,
        precisions=_csv(precisions),
        gemm_sizes=_sizes(sizes),
        conv_precisions=_csv(conv_precisions),
        conv_batch=conv_batch,
        hold_s=hold_s,
        interval_s=interval_ms / 1000.0,
        threads=threads,
        command=command_line,
    )
    meters: list[Meter] = (
        [NullMeter("measurement switched off (--power none)")]
        if power == "none"
        else open_meters(power, gpus=gpu_selection(chosen))
    )
    try:
        return measure(config, meters, progress=lambda line: click.echo(line, err=True))
    finally:
        close_meters(meters)


def gpu_selection(device: str) -> list[str] | None:
    """The UUID of the GPU torch runs on, so the meters measure that GPU only."""
    if device != "cuda":
        return None
    import torch

    from specbench.roofline.device import gpu_uuid

    if torch.version.hip:
        return None

    uuid = gpu_uuid(torch, torch.device("cuda"))
    return [uuid] if uuid else None
