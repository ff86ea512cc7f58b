"""`specbench data`: generate the data sets that tests, smoke profiles and throughput runs use."""

from __future__ import annotations

from pathlib import Path

import click


@click.group(name="data")
def command() -> None:
    """Generate benchmark data in the layout real data sets have (nothing is downloaded)."""


@command.command(name="extreme-weather")
@click.option("--out", "-o", type=click.Path(file_okay=False, path_type=Path), required=True, help="Folder to write.")
@click.option(
    "--samples", type=click.IntRange(min=2), required=True, help="Files in all (about 20% go to validation/)."
)
@click.option(
    "--size",
    type=(click.IntRange(min=16), click.IntRange(min=16)),
    default=(96, 144),
    show_default=True,
    metavar="H W",
    help="Height and width of each field (the real CAM5 data is 768 x 1152).",
)
@click.option("--seed", type=int, default=0, show_default=True)
def extreme_weather(out: Path, samples: int, size: tuple[int, int], seed: int) -> None:
    """CAM5-layout HDF5 files (climate/data H x W x 16, climate/labels_0) with stats.h5.

    Synthetic cyclone-like vortices and river-like filaments over smooth fields, labelled
    1 (tropical cyclone) and 2 (atmospheric river) from the fields that make them.
    """
    from specbench.data.climate import generate

    counts = generate(out, samples, size, seed=seed)
    click.echo(f"wrote {counts['train']} train and {counts['validation']} validation files to {out}")
