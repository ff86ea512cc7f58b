"""Findings: what the validator found, where, what was expected and found, and how to fix it."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from specbench.errors import Location, Problem
from specbench.validator.codes import CODES, Severity

MAX_PER_FILE_AND_CODE = 20
"""More findings of one code in one file are summarised in one last finding, so output stays readable."""


@dataclass(frozen=True)
class Finding:
    """One broken rule. `location.file` is relative to the submission folder (ORG/SYSTEM)."""

    code: str
    severity: Severity
    location: Location
    message: str
    hint: str

    @property
    def title(self) -> str:
        return CODES[self.code].title

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity,
            "file": self.location.file,
            "line": self.location.line,
            "column": self.location.column,
            "json_path": self.location.json_path or None,
            "message": self.message,
            "hint": self.hint,
        }

    def sort_key(self) -> tuple[int, str, int, int, str]:
        loc = self.location
        return (
            0 if self.severity == "error" else 1,
            loc.file or "",
            loc.line or 0,
            loc.column or 0,
            self.code,
        )


class Findings:
    """Collects every finding of one submission before anything is reported."""

    def __init__(self) -> None:
        self.items: list[Finding] = []
        self._counts: Counter[tuple[str | None, str]] = Counter()

    def add(
        self,
        code: str,
        file: str | None,
        message: str,
        *,
        line: int | None = None,
        column: int | None = None,
        json_path: str = "",
        hint: str | None = None,
    ) -> None:
        self.at(code, Location(file, line, column, json_path), message, hint=hint)

    def at(self, code: str, location: Location, message: str, *, hint: str | None = None) -> None:
        info = CODES[code]
        key = (location.file, code)
        self._counts[key] += 1
        count = self._counts[key]
        if count > MAX_PER_FILE_AND_CODE + 1:
            return
        if count == MAX_PER_FILE_AND_CODE + 1:
            location = Location(location.file)
            message = f"more findings of this kind in this file were left out (after {MAX_PER_FILE_AND_CODE})"
        self.items.append(Finding(code, info.severity, location, message, hint or info.hint))

    def problems(self, code: str, problems: list[Problem]) -> None:
        """Findings from located problems (YAML syntax, schema validation) raised by the spec package."""
        for problem in problems:
            self.at(code, problem.location, problem.message)

    def codes(self) -> set[str]:
        return {f.code for f in self.items}
