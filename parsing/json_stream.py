"""JsonScanner: incremental, string-aware scan of one JSON value that forwards its text."""
from __future__ import annotations

import re

_WS = re.compile(r"[ \t\r\n]+")
_STR_RUN = re.compile(r'[^"\\\x00-\x1f]+')
_ATOM = re.compile(r"[0-9A-Za-z.+\-]+")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?\Z")
_HEX = frozenset("0123456789abcdefABCDEF")
_ESCAPES = frozenset('"\\/bfnrt')
_LITERALS = frozenset(("true", "false", "null"))
_ATOM_START = frozenset("-0123456789tfn")
_CONTROL = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}

# scanner modes
VALUE, FIRST_VALUE, FIRST_KEY, KEY, COLON, AFTER, STRING, ATOM, DONE, ERROR = range(10)


class JsonScanner:
    """Scans one JSON value fed in pieces; used for tool-call arguments and envelope fields.

    scan() forwards the value's text verbatim except that a comma (with the whitespace after
    it) and a number or literal are held until the next token shows they are complete, and
    raw control characters inside strings are escaped. completion() gives the text that
    turns what was forwarded into valid JSON when the output is cut off.
    """

    __slots__ = ("stack", "mode", "in_key", "escape", "atom", "held", "resume")

    def __init__(self) -> None:
        self.stack: list[str] = []
        self.mode = VALUE
        self.in_key = False
        self.escape = 0  # 0: none, 1: after a backslash, 2..5: \u with (escape - 2) hex digits
        self.atom = ""
        self.held: list[str] = []  # a comma and the whitespace after it
        self.resume = VALUE

    @property
    def done(self) -> bool:
        return self.mode == DONE

    @property
    def failed(self) -> bool:
        return self.mode == ERROR

    def plain(self, text: str) -> str | None:
        """The text to forward when `text` is all plain characters inside a string (then it
        is consumed), else None (scan() must read it)."""
        if self.mode == STRING and not self.escape and _STR_RUN.fullmatch(text):
            return text
        return None

    def scan(self, buf: str, pos: int) -> tuple[int, str]:
        """Consume buf from pos until the value ends or the text runs out: (new pos, text)."""
        n = len(buf)
        if self.mode == STRING and not self.escape:  # fast path: a run inside a string
            m = _STR_RUN.match(buf, pos)
            if m is not None and m.end() == n:
                return n, m.group()
        out: list[str] = []
        while pos < n and self.mode < DONE:
            mode = self.mode
            if mode == STRING:
                pos = self._string(buf, pos, out)
            elif mode == ATOM:
                pos = self._atom(buf, pos, out)
            elif buf[pos] in " \t\r\n":
                end = _WS.match(buf, pos).end()
                if self.held:
                    self.held.append(buf[pos:end])
                else:
                    out.append(buf[pos:end])
                pos = end
            else:
                pos = self._token(buf[pos], pos, out)
        return pos, "".join(out)

    def _fail(self, pos: int) -> int:
        self.resume = self.mode
        self.mode = ERROR
        return pos

    def _flush(self, out: list[str]) -> None:
        if self.held:
            out.extend(self.held)
            self.held = []

    def _after_value(self) -> None:
        self.mode = AFTER if self.stack else DONE

    def _token(self, ch: str, pos: int, out: list[str]) -> int:
        mode = self.mode
        if mode == AFTER:
            if ch == ",":
                self.held = [","]
                self.mode = KEY if self.stack[-1] == "}" else VALUE
                return pos + 1
            if ch == self.stack[-1]:
                out.append(ch)
                self.stack.pop()
                self._after_value()
                return pos + 1
            return self._fail(pos)
        if mode == COLON:
            if ch != ":":
                return self._fail(pos)
            out.append(ch)
            self.mode = VALUE
            return pos + 1
        if mode in (FIRST_KEY, KEY):
            if ch == "}" and mode == FIRST_KEY:
                out.append(ch)
                self.stack.pop()
                self._after_value()
                return pos + 1
            if ch != '"':
                return self._fail(pos)
            self._flush(out)
            out.append(ch)
            self.mode, self.in_key = STRING, True
            return pos + 1
        if ch == "]" and mode == FIRST_VALUE:
            out.append(ch)
            self.stack.pop()
            self._after_value()
            return pos + 1
        return self._value(ch, pos, out)

    def _value(self, ch: str, pos: int, out: list[str]) -> int:
        if ch in _ATOM_START:
            self.mode, self.atom = ATOM, ""
            return pos
        self._flush(out)
        if ch == "{":
            self.stack.append("}")
            self.mode = FIRST_KEY
        elif ch == "[":
            self.stack.append("]")
            self.mode = FIRST_VALUE
        elif ch == '"':
            self.mode, self.in_key = STRING, False
        else:
            return self._fail(pos)
        out.append(ch)
        return pos + 1

    def _atom(self, buf: str, pos: int, out: list[str]) -> int:
        m = _ATOM.match(buf, pos)
        if m:
            self.atom += m.group()
            pos = m.end()
            if len(self.atom) > 64:
                self.mode = VALUE
                return self._fail(pos)
        if pos < len(buf):
            if not _atom_ok(self.atom):
                self.mode = VALUE
                return self._fail(pos)
            self._flush(out)
            out.append(self.atom)
            self.atom = ""
            self._after_value()
        return pos

    def _string(self, buf: str, pos: int, out: list[str]) -> int:
        n = len(buf)
        while pos < n:
            if self.escape:
                ch = buf[pos]
                if self.escape == 1:
                    if ch == "u":
                        self.escape = 2
                    elif ch in _ESCAPES:
                        self.escape = 0
                    else:
                        return self._fail(pos)
                elif ch in _HEX:
                    self.escape = 0 if self.escape == 5 else self.escape + 1
                else:
                    return self._fail(pos)
                out.append(ch)
                pos += 1
                continue
            m = _STR_RUN.match(buf, pos)
            if m:
                out.append(m.group())
                pos = m.end()
                if pos >= n:
                    break
            ch = buf[pos]
            pos += 1
            if ch == '"':
                out.append(ch)
                if self.in_key:
                    self.mode = COLON
                else:
                    self._after_value()
                return pos
            if ch == "\\":
                out.append(ch)
                self.escape = 1
            else:  # a raw control character: escape it so the text stays valid JSON
                out.append(_CONTROL.get(ch) or "\\u%04x" % ord(ch))
        return pos

    def completion(self) -> str:
        """The text that closes what scan() forwarded into valid JSON (for cut-off output)."""
        mode = self.resume if self.mode == ERROR else self.mode
        parts: list[str] = []
        if mode == ATOM:
            if _atom_ok(self.atom):
                parts.append("".join(self.held) + self.atom)
                mode = AFTER
            else:
                mode = AFTER if self.held else VALUE
        elif self.held:
            mode = AFTER
        if mode == STRING:
            if self.escape == 1:
                parts.append("\\")
            elif self.escape >= 2:
                parts.append("0" * (6 - self.escape))
            parts.append('"')
            if self.in_key:
                parts.append(": null")
        elif mode == COLON:
            parts.append(": null")
        elif mode == VALUE:
            parts.append("null")
        parts.extend(reversed(self.stack))
        return "".join(parts)


def _atom_ok(atom: str) -> bool:
    return atom in _LITERALS or _NUMBER.match(atom) is not None
