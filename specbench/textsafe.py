"""Text from a submission made safe to quote in an output: the terminal, Markdown, CSV.

Every renderer quotes submission text through these functions, so what a file says cannot forge a
line, print a terminal escape, run script in a Markdown viewer or a formula in a spreadsheet. JSON
escapes by itself, and HTML by Jinja's autoescape.
"""

from __future__ import annotations

import re
import unicodedata

INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
"""Control, format (zero-width, bidirectional), surrogate, private-use and unassigned code points, line breaks."""
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_MARKDOWN = {
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    '"': "&quot;",
    "'": "&#39;",
    **{c: "\\" + c for c in "\\`*_[]|~"},
}
"""HTML's significant characters as entities; what opens code, emphasis, a link or a table cell backslashed."""
_MARKDOWN_SPECIALS = re.compile(r"[&<>\"'\\`*_\[\]|~]")
_BLOCK_START = re.compile(r"^([-+=#]|\d{1,9}[.)])")
"""What makes a line a list item, heading or setext underline (only where text starts a line)."""
CSV_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""Where a spreadsheet takes a cell for a formula (OWASP, CSV injection)."""


def is_invisible(char: str) -> bool:
    """Whether `char` is a control, format (bidirectional, zero-width), line-break or unprintable code point."""
    return unicodedata.category(char) in INVISIBLE_CATEGORIES


def has_control(text: str) -> bool:
    """Whether `text` holds a character `visible` shows escaped."""
    return not text.isprintable() and any(is_invisible(c) for c in text)


def _escape(char: str) -> str:
    if char in _SHORT:
        return _SHORT[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible(text: str) -> str:
    """`text` with each invisible character written as Python writes it in a literal (`\\n`, `\\x1b`, `\\u202e`).

    For the terminal and plain-text reports: one line stays one line and no escape sequence reaches the
    terminal. Backslashes are kept as they are, so the form is for reading; JSON output holds the exact text."""
    if text.isprintable():
        return text
    return "".join(_escape(c) if is_invisible(c) else c for c in text)


def markdown(text: str) -> str:
    """`text` as literal Markdown (CommonMark and GitHub tables): invisible characters shown escaped, `<>&"'` as
    entities, `` \\`*_[]|~ `` backslashed, and a leading list, heading or underline marker backslashed."""
    escaped = _MARKDOWN_SPECIALS.sub(lambda m: _MARKDOWN[m.group()], visible(text))
    return _BLOCK_START.sub(lambda m: m.group()[:-1] + "\\" + m.group()[-1], escaped)


def csv_cell(text: str) -> str:
    """`text` as a CSV cell a spreadsheet shows as text: a cell starting with `= + - @`, tab or CR gets a leading
    single quote (OWASP). For strings from a submission only; numbers specbench computes are written as numbers."""
    return "'" + text if text.startswith(CSV_FORMULA_START) else text
