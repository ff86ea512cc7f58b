"""Bounds on numbers read from files: JSON and YAML allow integers of any size, specbench does not."""

from __future__ import annotations

import math
from typing import Any

MAX_INT = 2**63 - 1
"""The largest integer accepted (int64): beyond it no counter, count or time of a real run lies."""


def number_problem(value: Any, floats: bool = True) -> str | None:
    """Why a number read from a file is refused (beyond int64, or, with `floats`, not finite), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and not -MAX_INT - 1 <= value <= MAX_INT:
        digits = len(str(abs(value))) if value.bit_length() < 20_000 else value.bit_length() * 3 // 10
        return f"an integer of {digits} digits is out of range (at most {MAX_INT})"
    if floats and isinstance(value, float) and not math.isfinite(value):
        return f"{value!r} is not a finite number"
    return None


def first_bad_number(
    data: Any, path: tuple[str | int, ...] = (), floats: bool = True
) -> tuple[tuple[str | int, ...], str] | None:
    """The JSON path of the first refused number in plain data, and why; None when every number is fine."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, path)]
    while stack:
        value, where = stack.pop()
        if isinstance(value, dict):
            stack.extend((v, (*where, k)) for k, v in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend((v, (*where, i)) for i, v in reversed(list(enumerate(value))))
        else:
            problem = number_problem(value, floats)
            if problem is not None:
                return where, problem
    return None
