"""The one exception hierarchy of specbench, with source locations for input errors."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

EXIT_OK = 0
EXIT_NONCOMPLIANT = 1
"""Non-compliant; for execute, a run that ended without reaching its target."""
EXIT_UNUSABLE = 2
EXIT_INTERNAL = 3
"""An error inside specbench itself (a bug), never a verdict on the input: the traceback is shown."""
EXIT_RUN_FAILED = 4
"""A run crashed (out of memory, an exception in the training); earlier runs are intact."""
EXIT_INTERRUPTED = 130
"""Ctrl-C or SIGTERM (128 + SIGINT, as shells report it)."""


def _display_path(file: str) -> str:
    """A path relative to the working folder when it lies inside it, else as given."""
    path = Path(file)
    if path.is_absolute():
        try:
            return str(path.relative_to(Path.cwd()))
        except ValueError:
            return file
    return file


@dataclass(frozen=True)
class Location:
    """Where a value came from: file, 1-based line and column, and the JSON path inside the document."""

    file: str | None = None
    line: int | None = None
    column: int | None = None
    json_path: str = ""

    def __str__(self) -> str:
        parts = [_display_path(self.file) if self.file else "<input>"]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        return ":".join(parts)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input: where, what was expected and what was found."""

    location: Location
    message: str
    code: str = "SPEC000"

    def render(self) -> str:
        path = f" {self.location.json_path}:" if self.location.json_path else ""
        return f"{self.location}:{path} {self.message}"


class SpecbenchError(Exception):
    """Base class of every error specbench raises on purpose; the CLI exits with its `exit_code`."""

    exit_code = EXIT_UNUSABLE


class InputError(SpecbenchError):
    """An input file (spec, rule set, submission) cannot be used; carries every problem found."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(p.render() for p in problems))


class UsageError(SpecbenchError):
    """A command was called with arguments that cannot work."""


class InternalError(SpecbenchError):
    """A bug of specbench's that it contained (e.g. one entry of a board not rendered while the rest was written)."""

    exit_code = EXIT_INTERNAL
