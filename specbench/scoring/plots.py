"""The index plot of a group: throughput (or time) against energy per sample, with the Pareto front marked.

A ranked point is on the front when no other ranked entry is both more frugal (less energy per sample)
and faster (more samples/s, or less time); an unranked entry (a smoke run, a refused rule) is a hollow
ring and never on the front. Each point is labelled with its system where a label fits without covering
another label or point and sits clearly nearer its own point than any other (with a leader line where it
sits further off); the rest are numbered, and listed by number below the plot.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from html import escape

from specbench.scoring.columns import spec_of, trains_whole_budget
from specbench.scoring.leaderboard import Entry, Group
from specbench.scoring.svg import (
    TITLE_SIZE,
    Box,
    Frame,
    Placer,
    Swatch,
    axes,
    left_margin,
    legend,
    svg,
    text,
    text_box,
    tick_text,
    ticks,
)
from specbench.scoring.units import Scale

FRONT, RANKED, UNRANKED = "#d62728", "#1f77b4", "#888888"
WIDTH, PLOT_HEIGHT = 640, 230
DISTANCES = (8, 16, 28, 42, 60, 80)
CLEARANCE = 10.0
"""How much nearer its own point a label must sit than any other point, in pixels."""
NEAREST_OTHER = 10.0
"""The least distance from a label to a point not its own, in pixels."""


@dataclass(frozen=True)
class Point:
    entry: Entry
    x: float
    y: float


def pareto_front(points: Sequence[Point], higher_y: bool) -> list[Point]:
    """The points no other point beats on both axes (less x, and more y where `higher_y`, else less y)."""

    def beats(q: Point, p: Point) -> bool:
        better_y = q.y >= p.y if higher_y else q.y <= p.y
        return q.x <= p.x and better_y and (q.x < p.x or q.y != p.y)

    return sorted((p for p in points if not any(beats(q, p) for q in points)), key=lambda p: p.x)


def _axes_keys(group: Group) -> tuple[str, str, str]:
    if group.key.kind == "throughput":
        return "samples_per_s", "throughput", "energy_per_sample_j"
    return "time_s", "time" if trains_whole_budget(group) else "time to quality", "energy_per_sample_j"


def _range(values: Sequence[float]) -> tuple[float, float]:
    low, high = min(values), max(values)
    pad = (high - low) * 0.12 if high > low else (abs(low) * 0.2 or 1.0)
    return (max(0.0, low - pad) if low >= 0 else low - pad), high + pad


def index_plot(group: Group, scales: dict[str, Scale]) -> tuple[str, list[Entry]]:
    """The group's plot (empty when no entry has both numbers) and the entries left off it."""
    y_key, y_name, x_key = _axes_keys(group)
    xs, ys = scales[x_key], scales[y_key]
    points, left_off = [], []
    for entry in group.entries:
        x, y = entry.value(x_key), entry.value(y_key)
        if x is None or y is None:
            left_off.append(entry)
        else:
            points.append(Point(entry, x / xs.divisor, y / ys.divisor))
    if not points:
        return "", left_off
    unit = spec_of(group).workload.sample_unit if spec_of(group) is not None else "sample"  # type: ignore[union-attr]
    title = f"{y_name} against energy per {unit}"
    x_range, y_range = _range([p.x for p in points]), _range([p.y for p in points])
    left = left_margin(tick_text(t) for t in ticks(*y_range))
    frame = Frame(left, 30, WIDTH - 16, 30 + PLOT_HEIGHT, *x_range, *y_range)
    placer = Placer(Box(0, 0, WIDTH, 10_000))
    placer.take(text_box(left, 18, title, size=TITLE_SIZE, bold=True))
    body = [text(left, 18, title, size=TITLE_SIZE, extra=' class="title"')]
    body += axes(frame, f"energy ({xs.unit})", f"{y_name} ({ys.unit})", placer)
    ranked = [p for p in points if p.entry.rank is not None]
    front = pareto_front(ranked, higher_y=group.key.kind == "throughput")
    body += _front_line(frame, front)
    body += _points(frame, points, front, placer)
    numbered = _labels(frame, points, group, placer, body)
    items: list[Swatch] = [("front", FRONT, "Pareto front")] if front else []
    items += [("dot", RANKED, "ranked")] if any(p not in front for p in ranked) else []
    items += [("ring", UNRANKED, "not ranked")] if len(ranked) < len(points) else []
    items += [("none", "", f"{n}: {_name(p.entry, group)}") for n, p in numbered]
    rows, used = legend(items, left, frame.bottom + 42, WIDTH - left - 16, placer)
    return svg(WIDTH, frame.bottom + 42 + used + 4, title, [*body, *rows]), left_off


def _front_line(frame: Frame, front: Sequence[Point]) -> list[str]:
    """The front as a staircase: the best speed to be had for a given energy per sample."""
    if len(front) < 2:
        return []
    corners = [(front[0].x, front[0].y)]
    for p in front[1:]:
        corners += [(p.x, corners[-1][1]), (p.x, p.y)]
    path = " ".join(f"{frame.sx(x):.1f},{frame.sy(y):.1f}" for x, y in corners)
    return [f'<polyline points="{path}" fill="none" stroke="{FRONT}" stroke-width="1.2" stroke-dasharray="5 3"/>']


def _points(frame: Frame, points: Sequence[Point], front: Sequence[Point], placer: Placer) -> list[str]:
    out = []
    for p in points:
        cx, cy = frame.sx(p.x), frame.sy(p.y)
        placer.take(Box(cx - 5, cy - 5, cx + 5, cy + 5))
        kind = "front" if p in front else "ranked" if p.entry.rank is not None else "unranked"
        colour = {"front": FRONT, "ranked": RANKED, "unranked": UNRANKED}[kind]
        fill = "none" if kind == "unranked" else colour
        tip = escape(f"{p.entry.submitter}/{p.entry.system}" + ("" if p.entry.rank is not None else ": not ranked"))
        out.append(
            f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="4.5" fill="{fill}" stroke="{colour}" stroke-width="1.5" '
            f'class="point {kind}" data-entry="{escape(p.entry.slug)}"><title>{tip}</title></circle>'
        )
    return out


def _candidates(cx: float, cy: float) -> Iterator[tuple[float, float, str]]:
    for d in DISTANCES:
        diagonal = d * 0.7
        yield cx + d, cy + 4, "start"
        yield cx - d, cy + 4, "end"
        yield cx, cy - d, "middle"
        yield cx, cy + d + 9, "middle"
        yield cx + diagonal, cy - diagonal, "start"
        yield cx - diagonal, cy - diagonal, "end"
        yield cx + diagonal, cy + diagonal + 8, "start"
        yield cx - diagonal, cy + diagonal + 8, "end"


def _distance(box: Box, x: float, y: float) -> float:
    return math.hypot(max(box.x0 - x, 0.0, x - box.x1), max(box.y0 - y, 0.0, y - box.y1))


def _own(box: Box, point: tuple[float, float], others: Sequence[tuple[float, float]]) -> bool:
    """Whether a label's box reads as its point's: clear of every other point and clearly nearer its own."""
    mine = _distance(box, *point)
    return all(_distance(box, *q) >= max(mine + CLEARANCE, NEAREST_OTHER) for q in others)


def _name(entry: Entry, group: Group) -> str:
    systems = [e.system for e in group.entries]
    return entry.system if systems.count(entry.system) == 1 else f"{entry.submitter}/{entry.system}"


def _labels(
    frame: Frame, points: Sequence[Point], group: Group, placer: Placer, body: list[str]
) -> list[tuple[int, Point]]:
    """Label each point where its name fits and reads as its own (best ranked first); return the points numbered
    instead (a number goes where it reads as its point's, or failing that wherever it fits)."""
    placer = Placer(frame.box, placer.taken)
    ordered = sorted(points, key=lambda p: (p.entry.rank is None, p.entry.rank or 0))
    pixels = [(frame.sx(p.x), frame.sy(p.y)) for p in points]
    numbered: list[tuple[int, Point]] = []
    for p in ordered:
        cx, cy = frame.sx(p.x), frame.sy(p.y)
        others = [q for q in pixels if q != (cx, cy)]
        name = _name(p.entry, group)
        reads_as_own = partial(_own, point=(cx, cy), others=others)
        spot = placer.first(_candidates(cx, cy), name, reads_as_own)
        if spot is None:
            number = str(len(numbered) + 1)
            spot = placer.first(_candidates(cx, cy), number, reads_as_own)
            spot = spot or placer.first(_candidates(cx, cy), number)
            numbered.append((len(numbered) + 1, p))
            if spot is None:
                continue
            name = number
        x, y, anchor = spot
        box = text_box(x, y, name, anchor)
        if max(box.x0 - cx, cx - box.x1, box.y0 - cy, cy - box.y1) > 10:
            tx, ty = min(max(cx, box.x0), box.x1), min(max(cy, box.y0), box.y1)
            body.append(f'<line x1="{cx:.1f}" y1="{cy:.1f}" x2="{tx:.1f}" y2="{ty:.1f}" class="leader"/>')
        body.append(text(x, y, name, anchor, extra=f' class="point-label" data-entry="{escape(p.entry.slug)}"'))
    return numbered
