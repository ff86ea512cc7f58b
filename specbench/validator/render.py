"""Reports as text (grouped by severity, then file) or JSON.

The text report shows what it quotes through `textsafe.visible`: a file name or message holding a line break
or a terminal escape shows it escaped, so it cannot forge a line of the report."""

from __future__ import annotations

import json
from itertools import groupby

from specbench.textsafe import visible
from specbench.validator.findings import Finding
from specbench.validator.model import Report, exit_code

REPORT_FORMAT_VERSION = 1


def _where(finding: Finding) -> str:
    loc = finding.location
    parts = []
    if loc.line is not None:
        parts.append(f"{loc.line}:{loc.column}" if loc.column is not None else str(loc.line))
    if loc.json_path:
        parts.append(loc.json_path)
    return visible(" ".join(parts))


def _verdict(report: Report, werror: bool) -> str:
    if not report.usable:
        return "unusable"
    counts = f"{len(report.errors)} error(s), {len(report.warnings)} warning(s)"
    state = "compliant" if report.compliant(werror) else "non-compliant"
    return state if not report.findings else f"{state}: {counts}"


def render_report(report: Report, werror: bool = False) -> str:
    lines = [f"{visible(str(report.path))}: {_verdict(report, werror)}"]
    if report.signature is not None:
        lines.append(f"  {visible(report.signature.describe())}")
    for severity, by_severity in groupby(report.findings, key=lambda f: f.severity):
        items = list(by_severity)
        lines.append("")
        lines.append(f"{severity}s ({len(items)})" + (" [--werror]" if severity == "warning" and werror else ""))
        for file, by_file in groupby(items, key=lambda f: f.location.file or ""):
            lines.append(f"  {visible(file) if file else '(the submission)'}")
            for finding in by_file:
                where = _where(finding)
                said = visible(f"{finding.code} {finding.title}: {finding.message}")
                lines.append(f"    {where + ': ' if where else ''}{said}")
                lines.append(f"      hint: {visible(finding.hint)}")
    return "\n".join(lines) + "\n"


def render_text(reports: list[Report], werror: bool = False) -> str:
    """Every report in turn, and a one-line tally when there are several."""
    out = "\n".join(render_report(r, werror) for r in reports)
    if len(reports) > 1:
        compliant = sum(r.compliant(werror) for r in reports)
        unusable = sum(not r.usable for r in reports)
        out += (
            f"\n{len(reports)} submissions: {compliant} compliant, "
            f"{len(reports) - compliant - unusable} non-compliant, {unusable} unusable\n"
        )
    return out


def render_json(reports: list[Report], werror: bool = False) -> str:
    data = {
        "format_version": REPORT_FORMAT_VERSION,
        "werror": werror,
        "exit_code": exit_code(reports, werror),
        "submissions": [r.to_dict(werror) for r in reports],
    }
    return json.dumps(data, indent=2, allow_nan=False) + "\n"
