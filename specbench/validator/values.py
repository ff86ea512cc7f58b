"""Small helpers on values read from files: type tests, equality without bool/int confusion, display."""

from __future__ import annotations

import json
import math
from typing import Any, TypeGuard


def is_number(value: Any) -> TypeGuard[float]:
    """A finite int or float, not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def same(a: Any, b: Any) -> bool:
    """Equal as data: numbers by value (1 == 1.0), booleans only with booleans, lists element by element."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if is_number(a) and is_number(b):
        return bool(a == b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def close(a: float, b: float, rel: float = 1e-9, abs_tol: float = 0.0) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_tol)


def show(value: Any, limit: int = 60) -> str:
    """A short, unambiguous rendering of a value for messages."""
    try:
        text = json.dumps(value, allow_nan=True, default=str)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
