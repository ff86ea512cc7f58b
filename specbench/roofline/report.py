"""The text summary of a roofline: ceilings with their energy efficiency, and the workloads' points."""

from __future__ import annotations

from tabulate import tabulate

from specbench.roofline.format import PowerMeasure, Roofline, eng


def _rate(value: float | None, unit: str = "FLOP/s") -> str:
    return "-" if value is None else eng(value, unit)


def _per_w(power: PowerMeasure, unit: str) -> str:
    """Work per joule (the same number as work/s per watt), with the mean power of its window."""
    if not power.measured or power.work_per_j is None:
        return "not measured"
    text = eng(power.work_per_j, f"{unit}/J")
    return f"{text} ({power.mean_power_w:.0f} W)" if power.mean_power_w else text


def render_text(roofline: Roofline) -> str:
    """Ceilings, skipped precisions, workload points and the runs that could not be placed."""
    device = roofline.device
    lines = [f"device: {device.name} ({device.kind}), torch {device.torch_version}, measured {roofline.created_at}"]
    rows = [
        [f"gemm {c.precision}", _rate(c.flops_per_s), f"{c.m}x{c.n}x{c.k}", _per_w(c.power, "FLOP")]
        for c in roofline.ceilings.compute
    ]
    rows += [
        [
            f"conv {c.precision} {c.direction}",
            _rate(c.flops_per_s),
            f"best {_rate(c.best_flops_per_s)}",
            _per_w(c.power, "FLOP"),
        ]
        for c in roofline.ceilings.conv
    ]
    memory = roofline.ceilings.memory
    rows.append(
        ["copy", _rate(memory.bytes_per_s, "B/s"), f"{memory.buffer_bytes / 2**20:.0f} MiB", _per_w(memory.power, "B")]
    )
    lines.append(tabulate(rows, headers=["ceiling", "rate", "at", "per joule (mean power)"]))
    lines += [f"skipped {s.what} {s.precision}: {s.reason}" for s in roofline.skipped]
    if roofline.workloads:
        points = [
            [
                w.label,
                _rate(w.flops_per_s),
                f"{w.intensity_flop_per_byte:.1f} ({w.intensity_fused_flop_per_byte:.1f})",
                w.bound or "-",
                _rate(w.attainable_flops_per_s),
                f"{w.fraction_of_attainable:.0%}" if w.fraction_of_attainable else "-",
            ]
            for w in roofline.workloads
        ]
        lines += ["", tabulate(points, headers=["workload", "achieved", "FLOP/B (fused)", "bound", "roof", "of roof"])]
        lines += [f"intensity: {model}" for model in dict.fromkeys(w.bytes_model for w in roofline.workloads)]
        lines += [f"note: {w.label}: {w.note}" for w in roofline.workloads if w.note]
    lines += [f"not placed: {s.what}: {s.reason}" for s in roofline.workloads_skipped]
    return "\n".join(lines)
