"""Strict JSON: no NaN or Infinity, no duplicate keys, numbers within specbench's bounds.

One reader for every JSON text specbench takes from outside (MLLOG lines, import records, results).
"""

from __future__ import annotations

import json
import math
from typing import Any

from specbench.spec.numbers import number_problem


class JsonValueError(ValueError):
    pass


class NumberError(JsonValueError):
    """A number beyond what specbench accepts; `token` is its text, to locate it."""

    def __init__(self, message: str, token: str) -> None:
        super().__init__(message)
        self.token = token


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) == len(pairs):
        return out
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise JsonValueError(f"duplicate key {key!r}")
        seen.add(key)
    return out


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise NumberError(f"number {text} is out of range (not finite)", text)
    return value


def _reject_constant(name: str) -> Any:
    raise JsonValueError(f"{name} is not a number JSON allows; expected a finite number")


def _bounded_int(text: str) -> int:
    if len(text) > 19:
        value = int(text)
        problem = number_problem(value)
        if problem is not None:
            raise NumberError(problem, text)
        return value
    return int(text)


_STRICT = json.JSONDecoder(
    parse_constant=_reject_constant,
    parse_float=_finite_float,
    parse_int=_bounded_int,
    object_pairs_hook=_no_duplicates,
)
"""One decoder for every call: json.loads would build a new one per call (most of the cost of a short line)."""

_SHORT_INTS = json.JSONDecoder(
    parse_constant=_reject_constant, parse_float=_finite_float, object_pairs_hook=_no_duplicates
)
"""_STRICT for a text without 19 digits in a row: there every integer is one `_bounded_int` reads as `int`
does, so the decoder's own C conversion reads it (about a fifth of the time of an MLLOG log)."""

_ANY_KEYS = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float, parse_int=_bounded_int)
_ANY_KEYS_SHORT_INTS = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)
"""_STRICT and _SHORT_INTS without the duplicate-key hook, for parse_json_records (which proves there is none)."""

_DIGITS_AS_ZERO = bytes.maketrans(b"0123456789", b"0" * 10)
_NINETEEN_DIGITS = b"0" * 19


def _decoder(text: str, duplicates_checked: bool = True) -> json.JSONDecoder:
    """_SHORT_INTS where no integer of the text can be longer than 19 characters (a sign and 18 digits), else _STRICT
    (without `duplicates_checked`: the same without the duplicate-key hook)."""
    digits = text.encode("utf-8", "surrogatepass").translate(_DIGITS_AS_ZERO)
    if _NINETEEN_DIGITS in digits:
        return _STRICT if duplicates_checked else _ANY_KEYS
    return _SHORT_INTS if duplicates_checked else _ANY_KEYS_SHORT_INTS


def parse_json_text(text: str) -> Any:
    """Strict JSON: no NaN or Infinity, no duplicate keys, finite numbers only."""
    decoder = _decoder(text) if len(text) > 4096 else _STRICT
    try:
        value, end = decoder.scan_once(text, 0)  # type: ignore[attr-defined]
    except StopIteration:
        return _STRICT.decode(text)  # leading whitespace or no value: decode says which, with its position
    if end != len(text) and text[end:].strip(" \t\n\r"):
        return _STRICT.decode(text)  # raises "Extra data" at its position
    return value


def parse_json_records(text: str, nested: tuple[str, ...]) -> Any:
    """parse_json_text of a JSON array of objects (MLLOG events), decoded without the duplicate-key hook where
    counting proves that no object repeats a key; else parse_json_text itself, which decides and says why.

    The proof: every '{' of the text is one of the array's objects or an object under a `nested` key of one, and
    those objects hold as many keys together as the text has ':'. A text has at least one ':' per key it writes
    (more where strings hold some), and an object that repeats a key keeps fewer keys than the text writes, so
    the counts meet only where no object repeats a key. Numbers are read as parse_json_text reads them.
    """
    names = tuple(dict.fromkeys(nested))  # each object counted once
    try:
        value, end = _decoder(text, duplicates_checked=False).scan_once(text, 0)  # type: ignore[attr-defined]
    except (StopIteration, ValueError, RecursionError):
        return parse_json_text(text)
    if type(value) is not list or (end != len(text) and text[end:].strip(" \t\n\r")):
        return parse_json_text(text)
    objects = keys = 0
    for record in value:
        if type(record) is dict:
            objects += 1
            keys += len(record)
            for name in names:
                inner = record.get(name)
                if type(inner) is dict:
                    objects += 1
                    keys += len(inner)
    if objects != text.count("{") or keys != text.count(":"):
        return parse_json_text(text)
    return value
