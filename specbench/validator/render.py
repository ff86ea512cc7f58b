"""Reports as text (grouped by severity, then file; or summarised by code) or JSON.

The text report shows what it quotes through `textsafe.visible`: a file name or message holding a line break
or a terminal escape shows it escaped, so it cannot forge a line of the report."""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import groupby

from specbench.textsafe import visible
from specbench.validator.findings import Finding
from specbench.validator.model import Report, exit_code

REPORT_FORMAT_VERSION = 1
CAUSES = frozenset({"SB-LOG-001", "SB-STR-006", "SB-PWR-002"})
"""Codes of a file that could not be read whole (an MLLOG line, a YAML or JSON file, a power trace): other
findings of its folder (a key missing, a run incomplete, result.json disagreeing) may only follow from it, so
the text reports list it first and say how many may."""


def _where(finding: Finding) -> str:
    loc = finding.location
    parts = []
    if loc.line is not None:
        parts.append(f"{loc.line}:{loc.column}" if loc.column is not None else str(loc.line))
    if loc.json_path:
        parts.append(loc.json_path)
    return visible(" ".join(parts))


def located(finding: Finding) -> str:
    """'FILE:LINE:COLUMN JSON_PATH' of a finding (shown through `visible`), '(the submission)' without a file."""
    loc = finding.location
    shown = visible(loc.file) if loc.file else "(the submission)"
    if loc.line is not None:
        shown += f":{loc.line}" + (f":{loc.column}" if loc.column is not None else "")
    return f"{shown} {visible(loc.json_path)}" if loc.json_path else shown


def cause_first(findings: Sequence[Finding]) -> list[Finding]:
    """The findings in report order, but within each severity the files holding a cause (CAUSES) first, and
    within such a file the causes first; the JSON report keeps the validator's order."""
    cause_files = {f.location.file for f in findings if f.code in CAUSES}
    return sorted(
        findings,
        key=lambda f: (f.severity != "error", f.location.file not in cause_files, f.code not in CAUSES),
    )


def _scope(file: str | None) -> str:
    return posixpath.dirname(file or "")


def _in_scope(scope: str, file: str | None) -> bool:
    return not scope or file == scope or (file or "").startswith(scope + "/")


def consequence_notes(findings: Sequence[Finding]) -> dict[int, str]:
    """For the first cause of each folder (by its index in `findings`): how many other findings there may follow
    from it."""
    notes: dict[int, str] = {}
    seen: set[str] = set()
    for index, finding in enumerate(findings):
        scope = _scope(finding.location.file)
        if finding.code not in CAUSES or scope in seen:
            continue
        seen.add(scope)
        others = sum(1 for f in findings if f.code not in CAUSES and _in_scope(scope, f.location.file))
        if others:
            where = f"in {visible(scope)}" if scope else "of the submission"
            notes[index] = f"the other {others} finding(s) {where} may follow from this one: fix it first"
    return notes


@dataclass(frozen=True)
class CodeCount:
    """How many findings of one code a report holds, and the first of them (in the text report's order)."""

    code: str
    severity: str
    count: int
    first: Finding


def by_code(findings: Sequence[Finding]) -> list[CodeCount]:
    """One CodeCount per code, in the order the codes first appear in `cause_first(findings)`."""
    ordered = cause_first(findings)
    counts: dict[str, int] = {}
    first: dict[str, Finding] = {}
    for finding in ordered:
        counts[finding.code] = counts.get(finding.code, 0) + 1
        first.setdefault(finding.code, finding)
    return [CodeCount(code, first[code].severity, counts[code], first[code]) for code in first]


def render_summary(
    findings: Sequence[Finding],
    verdict: str,
    *,
    indent: str = "",
    werror: bool = False,
    source: Callable[[Finding], str | None] | None = None,
) -> list[str]:
    """Counts by finding code, each with its first finding (file, line, message, hint), then the verdict.

    The one summary of `validate --summary` and of `import mlperf`; `source` adds a line naming where a
    finding comes from (the MLPerf file an imported log was copied from)."""
    counts = by_code(findings)
    if not counts:
        return []
    ordered = cause_first(findings)
    notes = {id(ordered[i]): note for i, note in consequence_notes(ordered).items()}
    width = len(str(max(c.count for c in counts)))
    lines: list[str] = []
    for severity, group in groupby(counts, key=lambda c: c.severity):
        items = list(group)
        total = sum(c.count for c in items)
        marker = " [--werror]" if severity == "warning" and werror else ""
        lines += ["", f"{indent}{severity}s ({total}){marker}, by code with the first of each"]
        for item in items:
            finding = item.first
            lines.append(f"{indent}  {item.count:>{width}} {finding.code} {finding.title}")
            pad = f"{indent}  {' ' * width} "
            lines.append(f"{pad}  {located(finding)}: {visible(finding.message)}")
            origin = source(finding) if source is not None else None
            if origin is not None:
                lines.append(f"{pad}  MLPerf source: {visible(origin)}")
            lines.append(f"{pad}  hint: {visible(finding.hint)}")
            if id(finding) in notes:
                lines.append(f"{pad}  note: {notes[id(finding)]}")
    lines += [
        "",
        f"{indent}verdict: {verdict} ({len(findings)} finding(s) under {len(counts)} code(s); --full lists each)",
    ]
    return lines


def _verdict(report: Report, werror: bool) -> str:
    if not report.usable:
        return "unusable"
    counts = f"{len(report.errors)} error(s), {len(report.warnings)} warning(s)"
    state = "compliant" if report.compliant(werror) else "non-compliant"
    return state if not report.findings else f"{state}: {counts}"


def render_report(report: Report, werror: bool = False, summary: bool = False) -> str:
    """One submission's report: every finding grouped by severity and file, or with `summary` counts by code."""
    lines = [f"{visible(str(report.path))}: {_verdict(report, werror)}"]
    if report.signature is not None:
        lines.append(f"  {visible(report.signature.describe())}")
    if summary:
        lines += render_summary(report.findings, _verdict(report, werror), werror=werror)
        return "\n".join(lines) + "\n"
    findings = cause_first(report.findings)
    notes = consequence_notes(findings)
    for severity, by_severity in groupby(enumerate(findings), key=lambda item: item[1].severity):
        items = list(by_severity)
        lines.append("")
        lines.append(f"{severity}s ({len(items)})" + (" [--werror]" if severity == "warning" and werror else ""))
        for file, by_file in groupby(items, key=lambda item: item[1].location.file or ""):
            lines.append(f"  {visible(file) if file else '(the submission)'}")
            for index, finding in by_file:
                where = _where(finding)
                said = visible(f"{finding.code} {finding.title}: {finding.message}")
                lines.append(f"    {where + ': ' if where else ''}{said}")
                lines.append(f"      hint: {visible(finding.hint)}")
                if index in notes:
                    lines.append(f"      note: {notes[index]}")
    return "\n".join(lines) + "\n"


def render_text(reports: list[Report], werror: bool = False, summary: bool = False) -> str:
    """Every report in turn (each summarised by code with `summary`), and a one-line tally when there are several."""
    out = "\n".join(render_report(r, werror, summary) for r in reports)
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
