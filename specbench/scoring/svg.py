"""Small inline SVG line charts (power traces, quality curves) with no plotting library."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f")
MAX_POINTS = 2000


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    if high <= low:
        return [low]
    raw = (high - low) / count
    step = 10 ** math.floor(math.log10(raw))
    for mult in (1, 2, 5, 10):
        if raw <= mult * step:
            step *= mult
            break
    first = math.ceil(low / step) * step
    return [first + i * step for i in range(int((high - first) / step) + 1)]


def _thin(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    if len(points) <= MAX_POINTS:
        return list(points)
    stride = math.ceil(len(points) / MAX_POINTS)
    return list(points[::stride])


def line_chart(
    series: Mapping[str, Sequence[tuple[float, float]]],
    *,
    x_label: str,
    y_label: str,
    title: str,
    width: int = 640,
    height: int = 260,
    markers: dict[str, float] | None = None,
    hline: tuple[str, float] | None = None,
) -> str:
    """An SVG line chart; `markers` draws labelled vertical lines (e.g. run_start), `hline` a target."""
    left, right, top, bottom = 64, 16, 28, 40
    points = [p for values in series.values() for p in values]
    if not points:
        return f'<p class="empty">{escape(title)}: no data</p>'
    xs = [p[0] for p in points] + list((markers or {}).values())
    ys = [p[1] for p in points] + ([hline[1]] if hline else [])
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(0.0, min(ys)), max(ys) * 1.05 if max(ys) > 0 else 1.0
    x1 = x1 if x1 > x0 else x0 + 1
    y1 = y1 if y1 > y0 else y0 + 1

    def sx(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * (width - left - right)

    def sy(y: float) -> float:
        return height - bottom - (y - y0) / (y1 - y0) * (height - top - bottom)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
        f'<text x="{left}" y="16" class="title">{escape(title)}</text>',
        f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" class="axis"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" class="axis"/>',
    ]
    for tick in _ticks(y0, y1):
        out.append(f'<text x="{left - 6}" y="{sy(tick) + 4:.1f}" class="tick" text-anchor="end">{tick:g}</text>')
        out.append(f'<line x1="{left}" y1="{sy(tick):.1f}" x2="{width - right}" y2="{sy(tick):.1f}" class="grid"/>')
    for tick in _ticks(x0, x1):
        out.append(
            f'<text x="{sx(tick):.1f}" y="{height - bottom + 16}" class="tick" text-anchor="middle">{tick:g}</text>'
        )
    out.append(
        f'<text x="{(left + width - right) / 2}" y="{height - 4}" class="label" text-anchor="middle">{escape(x_label)}</text>'
    )
    out.append(
        f'<text x="14" y="{(top + height - bottom) / 2}" class="label" transform="rotate(-90 14 {(top + height - bottom) / 2})" text-anchor="middle">{escape(y_label)}</text>'
    )
    for name, x in (markers or {}).items():
        out.append(f'<line x1="{sx(x):.1f}" y1="{top}" x2="{sx(x):.1f}" y2="{height - bottom}" class="marker"/>')
        near_right = sx(x) > width - right - 70
        anchor, dx = ("end", -3) if near_right else ("start", 3)
        out.append(
            f'<text x="{sx(x) + dx:.1f}" y="{top + 10}" class="tick" text-anchor="{anchor}">{escape(name)}</text>'
        )
    if hline:
        out.append(
            f'<line x1="{left}" y1="{sy(hline[1]):.1f}" x2="{width - right}" y2="{sy(hline[1]):.1f}" class="target"/>'
        )
        out.append(
            f'<text x="{width - right - 4}" y="{sy(hline[1]) - 4:.1f}" class="tick" text-anchor="end">{escape(hline[0])}</text>'
        )
    for index, (name, values) in enumerate(series.items()):
        colour = PALETTE[index % len(PALETTE)]
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in _thin(values))
        out.append(
            f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.5"><title>{escape(name)}</title></polyline>'
        )
        if len(values) < 60:
            out.extend(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{colour}"/>' for x, y in values)
        out.append(
            f'<text x="{width - right - 4}" y="{top + 14 * (index + 1)}" fill="{colour}" class="tick" text-anchor="end">{escape(name)}</text>'
        )
    out.append("</svg>")
    return "\n".join(out)
