"""Lexicon: finds markers in text and says which tail could still grow into one."""
from __future__ import annotations

import re
from typing import Iterable


class Lexicon:
    """An immutable set of marker strings, built once per format state."""

    __slots__ = ("markers", "_find", "_prefixes", "_starts", "_max_len", "starts_search")

    def __init__(self, markers: Iterable[str]) -> None:
        self.markers = tuple(sorted(set(m for m in markers if m), key=len, reverse=True))
        self._max_len = max((len(m) for m in self.markers), default=0)
        self._find = (
            re.compile("|".join(re.escape(m) for m in self.markers)) if self.markers else None
        )
        # proper prefixes only: a complete marker is found by search()
        self._prefixes = frozenset(m[:i] for m in self.markers for i in range(1, len(m)))
        starts = "".join(sorted(set(m[0] for m in self.markers)))
        self._starts = re.compile("[" + re.escape(starts) + "]") if starts else None
        # search(text) -> a match where some marker could begin, or None
        self.starts_search = self._starts.search if self._starts else _never

    def search(self, buf: str, pos: int) -> tuple[int, str] | None:
        """The earliest complete marker at or after pos (the longest one at that place)."""
        if self._find is None:
            return None
        m = self._find.search(buf, pos)
        return (m.start(), m.group()) if m else None

    def may_grow(self, buf: str, start: int) -> bool:
        """True when the text from start to the end could still become a longer marker."""
        return len(buf) - start < self._max_len and buf[start:] in self._prefixes

    def first_start(self, buf: str, pos: int) -> int:
        """Index of the first character at or after pos that begins some marker, or -1."""
        if self._starts is None:
            return -1
        m = self._starts.search(buf, pos)
        return m.start() if m else -1

    def hold_start(self, buf: str, pos: int) -> int:
        """Where the held-back tail begins: the first index whose rest is a marker's prefix."""
        if self._starts is None:
            return len(buf)
        n = len(buf)
        lo = max(pos, n - self._max_len + 1)
        prefixes = self._prefixes
        for m in self._starts.finditer(buf, lo):
            i = m.start()
            if buf[i:] in prefixes:
                return i
        return n


def _never(text: str, pos: int = 0) -> None:
    return None
