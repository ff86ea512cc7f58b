"""What reproduce prints when it is done: each metric compared, the verdict and its reasons, and what to do next."""

from __future__ import annotations

from tabulate import tabulate

from specbench.formats.reproduction import MetricCheck
from specbench.reproduce.rerun import Outcome
from specbench.textsafe import visible

HEADERS = ["metric", "unit", "submitted", "re-run", "ratio", "may fall short by", "verdict"]


def render_outcome(outcome: Outcome) -> str:
    """The comparison as a table, then the verdict with its reasons, the record's path and how to sign it."""
    rows = [_row(check) for check in outcome.record.metrics]
    lines = [tabulate(rows, headers=HEADERS, tablefmt="simple", disable_numparse=True), ""]
    lines += [f"{visible(check.metric)}: {visible(check.note)}" for check in outcome.record.metrics if check.note]
    lines.append(f"verdict: {outcome.record.verdict}")
    lines += [f"  {visible(reason)}" for reason in outcome.record.reasons]
    folder = outcome.path.parent
    lines.append(f"wrote {outcome.path}; sign it with: specbench sign {folder} -k KEY")
    return "\n".join(lines) + "\n"


def _row(check: MetricCheck) -> list[str]:
    ratio = f"{check.ratio:.3f}x" if check.ratio is not None else "-"
    tolerance = f"{check.tolerance:.1%}" if check.tolerance is not None else check.source
    return [
        visible(check.metric),
        visible(check.unit),
        _number(check.submitted),
        _number(check.reproduced),
        ratio,
        tolerance,
        check.verdict,
    ]


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"
