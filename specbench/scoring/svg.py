"""Small inline SVG charts (power traces, quality curves) with no plotting library, and labels that never overlap.

Text is set in DejaVu Sans (Debian's default sans-serif, and as wide as the usual fallbacks or wider), so
a label's box is known before the browser draws it: each label takes the first free place among its
candidates, and what finds none goes to the legend below the plot.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f")
MAX_POINTS = 2000
FONT = "DejaVu Sans, Verdana, sans-serif"
SIZE = 11
TITLE_SIZE = 13
ROW = 16
WIDTHS = (
    318, 401, 460, 838, 636, 950, 780, 275, 390, 390, 500, 838, 318, 361, 318, 337, 636, 636, 636, 636, 636, 636,
    636, 636, 636, 636, 337, 337, 838, 838, 838, 531, 1000, 684, 686, 698, 770, 632, 575, 775, 752, 295, 295, 656,
    557, 863, 748, 787, 603, 787, 695, 635, 611, 732, 684, 989, 685, 611, 685, 390, 337, 390, 838, 500, 500, 613,
    635, 550, 635, 615, 352, 635, 634, 278, 278, 579, 278, 974, 634, 612, 635, 635, 411, 521, 392, 634, 592, 818,
    592, 592, 525, 636, 337, 636, 838,
)  # fmt: skip
"""Advance widths of DejaVu Sans for ASCII 32-126, in thousandths of an em (other characters count as 1 em)."""
ASCENT, DESCENT = 0.93, 0.24
"""DejaVu Sans' line box above and below the baseline, in em (what the browser's text box spans)."""
BOLD = 1.12
"""DejaVu Sans Bold is at most this much wider."""


def text_width(text: str, size: float = SIZE, bold: bool = False) -> float:
    """The drawn width of `text` in pixels (at least: DejaVu Sans is wider than the fallbacks)."""
    units = sum(WIDTHS[ord(c) - 32] if 32 <= ord(c) < 127 else 1000 for c in text)
    return units / 1000 * size * (BOLD if bold else 1.0)


@dataclass(frozen=True)
class Box:
    x0: float
    y0: float
    x1: float
    y1: float

    def overlaps(self, other: Box, gap: float = 1.0) -> bool:
        return not (
            self.x1 + gap <= other.x0
            or other.x1 + gap <= self.x0
            or self.y1 + gap <= other.y0
            or other.y1 + gap <= self.y0
        )

    def inside(self, other: Box) -> bool:
        return self.x0 >= other.x0 and self.x1 <= other.x1 and self.y0 >= other.y0 and self.y1 <= other.y1


def text_box(x: float, y: float, text: str, anchor: str = "start", size: float = SIZE, bold: bool = False) -> Box:
    """The box a text drawn at (x, y) (its baseline) with `anchor` covers."""
    width = text_width(text, size, bold)
    left = {"start": x, "middle": x - width / 2, "end": x - width}[anchor]
    return Box(left, y - ASCENT * size, left + width, y + DESCENT * size)


def text(x: float, y: float, content: str, anchor: str = "start", size: float = SIZE, extra: str = "") -> str:
    bold = ' font-weight="600"' if size == TITLE_SIZE else ""
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}"{bold}{extra}>{escape(content)}</text>'
    )


@dataclass
class Placer:
    """The boxes taken so far; a label takes the first candidate that is inside `area` and free."""

    area: Box
    taken: list[Box] = field(default_factory=list)

    def free(self, box: Box) -> bool:
        return box.inside(self.area) and not any(box.overlaps(t) for t in self.taken)

    def take(self, box: Box) -> Box:
        self.taken.append(box)
        return box

    def first(
        self,
        candidates: Iterable[tuple[float, float, str]],
        label: str,
        fits: Callable[[Box], bool] = lambda box: True,
    ) -> tuple[float, float, str] | None:
        """The first (x, y, anchor) where `label` is free and `fits`, now taken; None when none is."""
        for x, y, anchor in candidates:
            box = text_box(x, y, label, anchor)
            if self.free(box) and fits(box):
                self.take(box)
                return x, y, anchor
        return None


def ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round values from `low` to `high`, about `count` of them."""
    if high <= low:
        return [low]
    raw = (high - low) / count
    step = 10 ** math.floor(math.log10(raw))
    for mult in (1, 2, 5, 10):
        if raw <= mult * step:
            step *= mult
            break
    first = math.ceil(low / step - 1e-9) * step
    return [round(first + i * step, 12) for i in range(int((high - first) / step + 1e-9) + 1)]


def tick_text(value: float) -> str:
    return f"{value:.10g}" if abs(value) < 1e6 else f"{value:.3g}"


def thin(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    if len(points) <= MAX_POINTS:
        return list(points)
    stride = math.ceil(len(points) / MAX_POINTS)
    return list(points[::stride])


@dataclass(frozen=True)
class Frame:
    """A plot's area in pixels and the data range it maps."""

    left: float
    top: float
    right: float
    bottom: float
    x0: float
    x1: float
    y0: float
    y1: float

    def sx(self, x: float) -> float:
        return self.left + (x - self.x0) / (self.x1 - self.x0) * (self.right - self.left)

    def sy(self, y: float) -> float:
        return self.bottom - (y - self.y0) / (self.y1 - self.y0) * (self.bottom - self.top)

    @property
    def box(self) -> Box:
        return Box(self.left, self.top, self.right, self.bottom)


def axes(
    frame: Frame, x_label: str, y_label: str, placer: Placer, fmt: Callable[[float], str] = tick_text
) -> list[str]:
    """Axis lines, grid, tick labels and axis labels (their boxes taken in `placer`)."""
    out = [
        f'<line x1="{frame.left}" y1="{frame.bottom}" x2="{frame.right}" y2="{frame.bottom}" class="axis"/>',
        f'<line x1="{frame.left}" y1="{frame.top}" x2="{frame.left}" y2="{frame.bottom}" class="axis"/>',
    ]
    for tick in ticks(frame.y0, frame.y1):
        y = frame.sy(tick)
        out.append(f'<line x1="{frame.left}" y1="{y:.1f}" x2="{frame.right}" y2="{y:.1f}" class="grid"/>')
        placer.take(text_box(frame.left - 6, y + 4, fmt(tick), "end"))
        out.append(text(frame.left - 6, y + 4, fmt(tick), "end"))
    last = -math.inf
    for tick in ticks(frame.x0, frame.x1):
        box = text_box(frame.sx(tick), frame.bottom + 16, fmt(tick), "middle")
        if box.x0 < last + 4:
            continue
        last = placer.take(box).x1
        out.append(text(frame.sx(tick), frame.bottom + 16, fmt(tick), "middle"))
    middle = (frame.left + frame.right) / 2
    placer.take(text_box(middle, frame.bottom + 32, x_label, "middle"))
    out.append(text(middle, frame.bottom + 32, x_label, "middle", extra=' class="label"'))
    y_mid = (frame.top + frame.bottom) / 2
    out.append(text(14, y_mid, y_label, "middle", extra=f' class="label" transform="rotate(-90 14 {y_mid:.1f})"'))
    return out


def left_margin(labels: Iterable[str]) -> float:
    """Room for the rotated axis label and the widest tick label."""
    return max(48.0, 30.0 + max((text_width(t) for t in labels), default=0.0))


Swatch = tuple[str, str, str]
"""(kind, colour, name): kind is 'line', 'dash', 'dot', 'ring', 'front' or 'none' (the name alone)."""


def legend(items: Sequence[Swatch], left: float, top: float, width: float, placer: Placer) -> tuple[list[str], float]:
    """Legend rows from `top`, wrapped to `width`; returns the SVG and the height used."""
    out: list[str] = []
    x, y = left, top + SIZE
    for kind, colour, name in items:
        indent = 0 if kind == "none" else 22
        span = indent + text_width(name) + 14
        if x > left and x + span > left + width:
            x, y = left, y + ROW
        if kind != "none":
            out.append(_swatch(kind, colour, x, y - 4))
        placer.take(text_box(x + indent, y, name))
        out.append(text(x + indent, y, name, extra=f' fill="{colour}"' if kind == "line" else ""))
        x += span
    return out, (y - top + 6 if items else 0.0)


def _swatch(kind: str, colour: str, x: float, y: float) -> str:
    if kind in ("dot", "ring", "front"):
        fill = "none" if kind == "ring" else colour
        marker = {"dot": "ranked", "ring": "unranked", "front": "front"}[kind]
        return (
            f'<circle cx="{x + 9}" cy="{y}" r="4" fill="{fill}" stroke="{colour}" stroke-width="1.5" '
            f'class="swatch {marker}"/>'
        )
    dash = ' stroke-dasharray="4 3"' if kind == "dash" else ""
    return f'<line x1="{x}" y1="{y}" x2="{x + 18}" y2="{y}" stroke="{colour}" stroke-width="2"{dash}/>'


def line_chart(
    series: Mapping[str, Sequence[tuple[float, float]]],
    *,
    x_label: str,
    y_label: str,
    title: str,
    width: int = 640,
    markers: dict[str, float] | None = None,
    hline: tuple[str, float] | None = None,
) -> str:
    """An SVG line chart; `markers` draws labelled vertical lines (e.g. run_start), `hline` a target.

    Marker names sit above the plot, the target's name inside it where it covers the fewest points, and
    the series' names in a legend below.
    """
    points = [p for values in series.values() for p in values]
    if not points:
        return f'<p class="empty">{escape(title)}: no data</p>'
    markers = markers or {}
    xs = [p[0] for p in points] + list(markers.values())
    ys = [p[1] for p in points] + ([hline[1]] if hline else [])
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(0.0, min(ys)), max(ys) * 1.05 if max(ys) > 0 else 1.0
    x1, y1 = (x1 if x1 > x0 else x0 + 1), (y1 if y1 > y0 else y0 + 1)
    top = 30 + (2 * ROW if markers else 0)
    left = left_margin(tick_text(t) for t in ticks(y0, y1))
    frame = Frame(left, top, width - 16, top + 180, x0, x1, y0, y1)
    placer = Placer(Box(0, 0, width, 10_000))
    placer.take(text_box(left, 18, title, size=TITLE_SIZE, bold=True))
    body = [text(left, 18, title, size=TITLE_SIZE, extra=' class="title"'), *axes(frame, x_label, y_label, placer)]
    unlabelled: list[Swatch] = []
    for name, x in markers.items():
        body.append(
            f'<line x1="{frame.sx(x):.1f}" y1="{top}" x2="{frame.sx(x):.1f}" y2="{frame.bottom}" class="marker"/>'
        )
        spot = placer.first(_marker_candidates(frame.sx(x), top), name)
        if spot is None:
            unlabelled.append(("dash", "#999", name))
        else:
            body.append(text(*spot[:2], name, spot[2]))
    if hline and not _hline(frame, hline, points, placer, body):
        unlabelled.append(("dash", "#2ca02c", hline[0]))
    items: list[Swatch] = []
    for index, (name, values) in enumerate(series.items()):
        colour = PALETTE[index % len(PALETTE)]
        path = " ".join(f"{frame.sx(x):.1f},{frame.sy(y):.1f}" for x, y in thin(values))
        body.append(
            f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.5"><title>{escape(name)}</title></polyline>'
        )
        if len(values) < 60:
            body.extend(
                f'<circle cx="{frame.sx(x):.1f}" cy="{frame.sy(y):.1f}" r="3" fill="{colour}"/>' for x, y in values
            )
        items.append(("line", colour, name))
    rows, used = legend([*items, *unlabelled], left, frame.bottom + 42, width - left - 16, placer)
    return svg(width, frame.bottom + 42 + used + 4, title, [*body, *rows])


def _marker_candidates(x: float, top: float) -> list[tuple[float, float, str]]:
    rows = (top - 6, top - 6 - ROW)
    return [(x + dx, y, anchor) for y in rows for dx, anchor in ((0, "middle"), (3, "start"), (-3, "end"))]


def _hline(
    frame: Frame, hline: tuple[str, float], points: Sequence[tuple[float, float]], placer: Placer, out: list[str]
) -> bool:
    """The target line, and its name where it covers the fewest points; False when the name found no place."""
    name, value = hline
    y = frame.sy(value)
    out.append(f'<line x1="{frame.left}" y1="{y:.1f}" x2="{frame.right}" y2="{y:.1f}" class="target"/>')
    spots = [(frame.right - 4, y - 4, "end"), (frame.right - 4, y + 13, "end"), (frame.left + 4, y - 4, "start")]
    spots.append((frame.left + 4, y + 13, "start"))
    pixels = [(frame.sx(px), frame.sy(py)) for px, py in points]

    def covered(spot: tuple[float, float, str]) -> int:
        box = text_box(*spot[:2], name, spot[2])
        return sum(box.x0 - 4 <= px <= box.x1 + 4 and box.y0 - 4 <= py <= box.y1 + 4 for px, py in pixels)

    inside = [s for s in spots if text_box(*s[:2], name, s[2]).inside(frame.box)] or spots
    spot = placer.first(sorted(inside, key=covered), name)
    if spot is not None:
        out.append(text(*spot[:2], name, spot[2], extra=' class="target-label"'))
    return spot is not None


def svg(width: float, height: float, title: str, body: Sequence[str]) -> str:
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="{FONT}" role="img" aria-label="{escape(title)}">'
    )
    return "\n".join([head, *body, "</svg>"])
