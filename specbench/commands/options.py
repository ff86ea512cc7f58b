"""Options several commands share, written once so that their range, default and help agree."""

from __future__ import annotations

import click

interval_ms_option = click.option(
    "--interval-ms",
    "-i",
    type=click.FloatRange(10, 60000),
    default=100.0,
    show_default=True,
    help="Power sampling period.",
)
"""The power sampler's period of a run (`execute`, `reproduce`)."""
