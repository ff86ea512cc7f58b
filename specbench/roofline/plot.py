"""The roofline plot (PNG and SVG): a compute ceiling per precision, the bandwidth slope, the workloads' points.

matplotlib is imported here only, with the Agg backend through a bare Figure (no pyplot state). The legend sits
below the axes, so it never hides a point or a ceiling.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specbench.errors import UsageError
from specbench.roofline.format import Roofline, WorkloadPoint, eng

COLORS = {"fp8": "#7b3294", "fp16": "#d95f02", "bf16": "#1b9e77", "tf32": "#2c7fb8", "fp32": "#636363"}
FORMATS = ("png", "svg")


def _figure() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib.figure import Figure
    except ImportError as err:
        raise UsageError("plotting a roofline needs matplotlib: pip install 'specbench[run]'") from err
    return Figure(figsize=(11, 7.5), layout="constrained")


def drawn_points(roofline: Roofline) -> list[WorkloadPoint]:
    """Points of runs on this device (or an unknown one); runs on other devices are listed, not drawn."""
    return [w for w in roofline.workloads if w.same_device is not False]


def _x_range(roofline: Roofline, points: list[WorkloadPoint]) -> tuple[float, float]:
    bandwidth = roofline.ceilings.memory.bytes_per_s
    ridges = [c.flops_per_s / bandwidth for c in roofline.ceilings.compute]
    xs = ridges + [w.intensity_flop_per_byte for w in points] + [w.intensity_fused_flop_per_byte for w in points]
    return min(0.1, min(xs) / 4), max(xs) * 8


def _roof(ax: Any, roofline: Roofline, lo: float, hi: float) -> None:
    """The bandwidth slope in black up to the highest ridge, then one horizontal ceiling per precision."""
    memory = roofline.ceilings.memory
    bandwidth = memory.bytes_per_s
    top = max(c.flops_per_s for c in roofline.ceilings.compute)
    per_j = memory.power.work_per_j
    energy = f", {eng(per_j, 'B/J')}" if per_j else ", B/J not measured"
    ax.plot(
        [lo, top / bandwidth],
        [bandwidth * lo, top],
        color="black",
        linewidth=2,
        label=f"copy {eng(bandwidth, 'B/s')}{energy}",
    )
    ax.annotate(
        eng(bandwidth, "B/s"), (lo * 3, bandwidth * lo * 3), xytext=(6, -14), textcoords="offset points", fontsize=9
    )
    for ceiling in sorted(roofline.ceilings.compute, key=lambda c: -c.flops_per_s):
        per_w = ceiling.power.work_per_j
        energy = f", {eng(per_w, 'FLOP/J')}" if per_w else ", FLOP/J not measured"
        label = f"{ceiling.precision} GEMM {eng(ceiling.flops_per_s, 'FLOP/s')}{energy}"
        ridge = ceiling.flops_per_s / bandwidth
        ax.plot([ridge, hi], [ceiling.flops_per_s] * 2, color=COLORS[ceiling.precision], linewidth=2, label=label)
    for conv in roofline.ceilings.conv:
        if conv.direction != "training":
            continue
        per_w = conv.power.work_per_j
        energy = f", {eng(per_w, 'FLOP/J')}" if per_w else ", FLOP/J not measured"
        label = f"{conv.precision} conv, ResNet-50 training mix {eng(conv.flops_per_s, 'FLOP/s')}{energy}"
        ridge = conv.flops_per_s / bandwidth
        ax.plot(
            [ridge, hi],
            [conv.flops_per_s] * 2,
            color=COLORS[conv.precision],
            linestyle=(0, (5, 3)),
            linewidth=2.5,
            zorder=3,
            label=label,
        )


def _points(ax: Any, points: list[WorkloadPoint]) -> None:
    """Each run as a marker with a bar to its fused intensity; runs at the same spot share one tag."""
    tags: dict[tuple[float, float], tuple[float, float, list[int]]] = {}
    for index, point in enumerate(points, start=1):
        color = COLORS.get(point.ceiling_precision or "", "black")
        x, y = point.intensity_flop_per_byte, point.flops_per_s
        roof = f", {point.fraction_of_attainable:.0%} of roof" if point.fraction_of_attainable else ""
        ax.errorbar(
            [x],
            [y],
            xerr=[[0.0], [point.intensity_fused_flop_per_byte - x]],
            fmt="o",
            color=color,
            markersize=8,
            capsize=4,
            zorder=4,
            label=f"[{index}] {point.label}: {eng(y, 'FLOP/s')}, {x:.3g} FLOP/B{roof}",
        )
        tags.setdefault((round(x, 1), float(f"{y:.2g}")), (x, y, []))[2].append(index)
    for x, y, indices in tags.values():
        text = "[" + ",".join(str(i) for i in indices) + "]"
        ax.annotate(text, (x, y), xytext=(6, 6), textcoords="offset points", fontsize=9)


def render(roofline: Roofline) -> Any:
    """The figure for `roofline` (not yet saved)."""
    fig = _figure()
    ax = fig.add_subplot()
    points = drawn_points(roofline)
    lo, hi = _x_range(roofline, points)
    _roof(ax, roofline, lo, hi)
    _points(ax, points)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    tops = [c.flops_per_s for c in roofline.ceilings.compute]
    bottoms = [roofline.ceilings.memory.bytes_per_s * lo] + [w.flops_per_s for w in points]
    ax.set_ylim(min(bottoms) / 2, max(tops) * 2.5)
    ax.set_xlabel("operational intensity (FLOP per byte of device memory)")
    ax.set_ylabel("FLOP/s per device")
    ax.grid(True, which="both", alpha=0.3)
    device = roofline.device
    ax.set_title(f"Roofline of {device.name} ({device.kind}), measured {roofline.created_at[:10]}")
    notes = ["Ceilings: median of timed launches after warm-up; FLOP/J and B/J over a sustained window."]
    if points:
        methods = "/".join(sorted({w.bytes_method for w in points}))
        notes.append(f"Workload intensity: {methods} byte count; point: unfused layers, bar: conv/fc operands only.")
    hidden = len(roofline.workloads) - len(points)
    if hidden:
        notes.append(f"{hidden} run(s) from other devices are in roofline.json, not drawn.")
    ax.text(0.01, 0.99, "\n".join(notes), transform=ax.transAxes, va="top", fontsize=8, bbox={"facecolor": "white"})
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=2, fontsize=8)
    return fig


def save_plots(roofline: Roofline, folder: str | Path, stem: str = "roofline") -> list[Path]:
    """Write `stem`.png and `stem`.svg into `folder`; returns their paths."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    fig = render(roofline)
    import matplotlib

    paths = []
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "specbench"}):
        for fmt in FORMATS:
            path = out / f"{stem}.{fmt}"
            metadata = {"Date": None} if fmt == "svg" else {"Software": None}
            fig.savefig(path, format=fmt, dpi=150, metadata=metadata)
            paths.append(path)
    return paths
