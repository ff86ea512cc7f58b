"""Name registries (rule kinds, executors, meters) with 'did you mean' on unknown names."""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Sequence
from typing import Generic, TypeVar

from specbench.errors import UsageError

T = TypeVar("T")


def closest(name: str, choices: Sequence[str]) -> str | None:
    """The choice closest to `name` when one is close enough to be what was meant, else None."""
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(name: str, choices: Sequence[str]) -> str:
    """A ' (did you mean X?)' suffix when a close match exists, else ''."""
    close = closest(name, choices)
    return f" (did you mean {close!r}?)" if close else ""


class Registry(Generic[T]):
    """A mapping from names to objects of one family, with a clear error on unknown names."""

    def __init__(self, family: str) -> None:
        self.family = family
        self._items: dict[str, T] = {}

    def register(self, name: str, item: T) -> T:
        if name in self._items:
            raise ValueError(f"{self.family} {name!r} is registered twice")
        self._items[name] = item
        return item

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            known = sorted(self._items)
            raise UsageError(
                f"unknown {self.family} {name!r}{did_you_mean(name, known)}; known: {', '.join(known)}"
            ) from None

    def names(self) -> list[str]:
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
