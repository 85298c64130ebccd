"""String literals inside literal arguments: Python's quoted strings and delimiter-token strings."""
from __future__ import annotations

import re

from parsing.literals import OCTAL, escape_json, json_char, json_text

# runs of quoted-string characters copied as they are, per quote
_RUNS = {q: re.compile("[^" + re.escape(q + '"') + "\\\\\x00-\x1f]+") for q in "'\""}


class QuotedString:
    """One Python string literal being read (after its opening quote), written out as the
    inside of a JSON string: escapes translated, a raw string's backslashes kept, a triple
    quote closed only by three quotes. read() returns (position, whether the string ended)."""

    __slots__ = ("quote", "raw", "triple", "esc")

    def __init__(self, quote: str, raw: bool, triple: bool) -> None:
        self.quote, self.raw, self.triple = quote, raw, triple
        self.esc: str | None = None  # characters after a backslash, while an escape is open

    def plain(self, text: str) -> str | None:
        """`text` as it is forwarded when it holds no quote, backslash or control character."""
        if self.esc is None and _RUNS[self.quote].fullmatch(text):
            return text
        return None

    def read(self, buf: str, pos: int, out: list[str]) -> tuple[int, bool]:
        n, q = len(buf), self.quote
        run = _RUNS[q]
        while pos < n:
            if self.esc is not None:
                pos = self._escape(buf, pos, out)
                continue
            m = run.match(buf, pos)
            if m:
                out.append(m.group())
                pos = m.end()
                if pos >= n:
                    break
            ch = buf[pos]
            if ch == q:
                if not self.triple:
                    return pos + 1, True
                if pos + 2 >= n and buf[pos:] == ch * (n - pos):
                    return pos, False  # maybe the closing triple quote: wait
                if buf.startswith(ch * 3, pos):
                    return pos + 3, True
                out.append('\\"' if ch == '"' else ch)
            elif ch == "\\":
                out.append("\\\\" if self.raw else "")
                self.esc = "raw" if self.raw else ""
            else:
                out.append('\\"' if ch == '"' else json_char(ch))
            pos += 1
        return pos, False

    def _escape(self, buf: str, pos: int, out: list[str]) -> int:
        """Read one more character of an escape; emit its JSON form once it is complete."""
        esc, ch = self.esc, buf[pos]
        if esc == "raw":  # after a raw string's backslash, a quote is data
            self.esc = None
            if ch == self.quote:
                out.append(json_char(ch))
                return pos + 1
            return pos
        if esc and esc[0] in OCTAL and (ch not in OCTAL or len(esc) == 3):
            self.esc = None
            out.append("\\u%04x" % int(esc, 8))
            return pos
        esc += ch
        self.esc = esc
        done = escape_json(esc)
        if done is not None:
            self.esc = None
            out.append(done)
        return pos + 1


class DelimitedString:
    """One string between two delimiter tokens (Gemma's `<|"|>`), raw text without escapes.
    read() returns (position, whether the string ended); its text goes to `out` as the inside
    of a JSON string, or is kept whole in `held` when `typed` (the value is decided at its end)."""

    __slots__ = ("delim", "typed", "held")

    def __init__(self, delim: str, typed: bool) -> None:
        self.delim, self.typed = delim, typed
        self.held: list[str] = []

    def plain(self, text: str) -> str | None:
        """`text` as it is forwarded when no delimiter can start in it (typed values wait)."""
        if self.typed or self.delim[0] in text:
            return None
        return json_text(text)

    def read(self, buf: str, pos: int, out: list[str]) -> tuple[int, bool]:
        end = buf.find(self.delim, pos)
        stop = end if end >= 0 else hold_point(buf, pos, self.delim)
        text = buf[pos:stop]
        if text:
            if self.typed:
                self.held.append(text)
            else:
                out.append(json_text(text))
        if end < 0:
            return stop, False
        return end + len(self.delim), True

    @property
    def text(self) -> str:
        return "".join(self.held)


def hold_point(buf: str, pos: int, delim: str) -> int:
    """Where a tail that could still grow into `delim` begins (len(buf) when none does)."""
    for k in range(min(len(delim) - 1, len(buf) - pos), 0, -1):
        if delim.startswith(buf[len(buf) - k:]):
            return len(buf) - k
    return len(buf)
