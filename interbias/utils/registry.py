"""One registry per pluggable kind (operator, encoder, corpus): exact-name lookup, no prefixes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from interbias.utils.errors import InterbiasError

T = TypeVar("T")


class Registry(Generic[T]):
    """Entries are added with :meth:`register` and found by their exact name.

    An unknown name raises ``error`` with a message that lists every valid name.
    """

    def __init__(self, kind: str, error: type[InterbiasError]) -> None:
        self.kind = kind
        self._error = error
        self._entries: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        def decorator(entry: T) -> T:
            if name in self._entries:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._entries[name] = entry
            return entry

        return decorator

    def get(self, name: str) -> T:
        try:
            return self._entries[name]
        except KeyError:
            valid = ", ".join(sorted(self._entries)) or "(none)"
            raise self._error(f"unknown {self.kind} {name!r}; valid: {valid}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._entries))

    def names(self) -> list[str]:
        return sorted(self._entries)

    def items(self) -> list[tuple[str, T]]:
        return sorted(self._entries.items())

    def registered(self) -> list[T]:
        """Every entry in the order it was registered."""
        return list(self._entries.values())
