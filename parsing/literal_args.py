"""LiteralArgsScanner: incremental scan of literal call arguments (`(k=v)`, `{k:v}`) into JSON."""
from __future__ import annotations

import json
import re

from parsing.json_stream import DONE, ERROR
from parsing.literal_strings import DelimitedString, QuotedString
from parsing.literals import PYTHON, Dialect, atom_json, typed_json

# scanner modes: below JsonScanner's DONE and ERROR, which are shared (readers test `mode >= DONE`)
OPEN, KWKEY, KWNAME, KWEQ, STAR, VALUE, DKEY, COLON, AFTER, STRING, ATOM, DELIM = range(-12, 0)

_WS = frozenset(" \t\r\n")
_IDENT_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_ATOM_START = _IDENT_START | frozenset("0123456789+-.")
_IDENT = re.compile(r"\w+")
_ATOM = re.compile(r"[\w.+\-]+")
_PREFIXES = frozenset(("r", "u", "b", "br", "rb"))
# container kinds on the stack: K the arguments, ] list, t tuple, } dict, S a `**{...}` dict
_CLOSE_CHAR = {"]": "]", "t": ")", "}": "}", "S": "}"}
_CLOSE_OUT = {"K": "}", "]": "]", "t": "]", "}": "}", "S": ""}
_OPEN_OUT = {"K": "{", "]": "[", "t": "[", "}": "{", "S": ""}


class LiteralArgsScanner:
    """Scans literal arguments fed in pieces and forwards the same arguments as a JSON object.

    Used by HeaderReader for pythonic calls (the PYTHON dialect: strings in either quote, raw
    and triple-quoted too, True/False/None and JSON's literals, numbers with underscores or
    hex, lists, tuples as arrays, dicts with non-string keys made strings, `**{...}` merged)
    and for Gemma's calls (bare keys, strings between delimiter tokens). Separators are
    written as ", " and ": " whatever the input's spacing, so the output does not depend on
    how text is split. The interface is JsonScanner's: scan(), mode, completion().
    """

    __slots__ = ("d", "stack", "filled", "mode", "word", "string", "in_key", "element", "pending",
                 "resume", "stars")

    def __init__(self, dialect: Dialect = PYTHON) -> None:
        self.d = dialect
        self.stack: list[str] = []
        self.filled: list[bool | None] = []  # [level] something was written in it (None: a ** dict)
        self.mode = OPEN
        self.word = ""
        self.string: QuotedString | DelimitedString | None = None  # the string being read
        self.in_key = self.element = self.pending = False
        self.resume = OPEN
        self.stars = 0

    def scan(self, buf: str, pos: int) -> tuple[int, str]:
        """Consume buf from pos until the value ends, more text is needed, or an error."""
        n = len(buf)
        out: list[str] = []
        while pos < n and self.mode < DONE:
            mode = self.mode
            if mode in (STRING, DELIM):
                new = self._string(buf, pos, out)
            elif mode in (ATOM, KWNAME):
                new = self._word(buf, pos, out)
            elif buf[pos] in _WS:
                new = pos + 1
                while new < n and buf[new] in _WS:
                    new += 1
            else:
                new = self._token(buf, pos, out)
            if new == pos and self.mode == mode:
                break  # more text is needed to decide
            pos = new
        return pos, "".join(out)

    def plain(self, text: str) -> str | None:
        """The text to forward when `text` is all plain characters inside a string (then it
        is consumed), else None (scan() must read it)."""
        if self.mode in (STRING, DELIM):
            return self.string.plain(text)
        return None

    # -- structure ---------------------------------------------------------------------

    def _fail(self, pos: int) -> int:
        self.resume, self.mode = self.mode, ERROR
        return pos

    def _level(self) -> int:
        i = len(self.filled) - 1
        while self.filled[i] is None:
            i -= 1
        return i

    def _sep(self, out: list[str]) -> None:
        """A new member or element begins: a separator first unless it is the first."""
        i = self._level()
        if self.filled[i]:
            out.append(", ")
        self.filled[i] = True

    def _push(self, kind: str, out: list[str]) -> None:
        self.stack.append(kind)
        self.filled.append(None if kind == "S" else False)
        out.append(_OPEN_OUT[kind])

    def _close(self, out: list[str]) -> None:
        out.append(_CLOSE_OUT[self.stack.pop()])
        self.filled.pop()
        self._after_value()

    def _closer(self, kind: str) -> str:
        return self.d.close if kind == "K" else _CLOSE_CHAR[kind]

    def _after_value(self) -> None:
        self.pending = False
        self.mode = AFTER if self.stack else DONE

    def _token(self, buf: str, pos: int, out: list[str]) -> int:
        ch, mode = buf[pos], self.mode
        top = self.stack[-1] if self.stack else ""
        if mode == OPEN:
            if ch != self.d.open:
                return self._fail(pos)
            self._push("K", out)
            self.mode = KWKEY
            return pos + 1
        if mode == AFTER:
            if ch == ",":
                self.mode = KWKEY if top == "K" else DKEY if top in "}S" else VALUE
                self.element = top in "]t"
                return pos + 1
            if ch == self._closer(top):
                self._close(out)
                return pos + 1
            return self._fail(pos)
        if mode == KWKEY:
            if ch == self.d.close and top == "K":
                self._close(out)
                return pos + 1
            if ch == "*" and self.d is PYTHON:
                self.mode, self.stars = STAR, 1
                return pos + 1
            if ch in _IDENT_START:
                self.mode, self.word = KWNAME, ""
                return pos
            if self.d.key_sep == ":" and ch in self.d.quotes:  # an object dialect: a quoted key
                return self._open_string(buf, pos, out, True, "")
            return self._fail(pos)
        if mode == STAR:
            return self._star(ch, pos, out)
        if mode in (KWEQ, COLON):
            return self._key_sep(ch, pos, out)
        if mode == DKEY:
            if ch == "}" and top in "}S":
                self._close(out)
                return pos + 1
            return self._item(buf, pos, out, key=True)
        return self._item(buf, pos, out, key=False)  # VALUE

    def _key_sep(self, ch: str, pos: int, out: list[str]) -> int:
        """After an argument's name (KWEQ) or a dict key (COLON): its separator, then the value."""
        if ch != (self.d.key_sep if self.mode == KWEQ else ":"):
            return self._fail(pos)
        if self.mode == KWEQ:
            self._sep(out)
            out.append(json.dumps(self.word, ensure_ascii=False))
        out.append(": ")
        self.mode, self.element, self.pending = VALUE, False, True
        return pos + 1

    def _star(self, ch: str, pos: int, out: list[str]) -> int:
        if ch == "*" and self.stars == 1:
            self.stars = 2
            return pos + 1
        if ch == "{" and self.stars == 2:
            self._push("S", out)
            self.mode = DKEY
            return pos + 1
        return self._fail(pos)

    def _item(self, buf: str, pos: int, out: list[str], key: bool) -> int:
        ch = buf[pos]
        top = self.stack[-1]
        if not key and self.element and ch == self._closer(top):
            self._close(out)  # an empty list or tuple, or a trailing comma
            return pos + 1
        delim = self.d.delim
        if delim and ch == delim[0]:
            return self._open_delimited(buf, pos, out, key)
        if ch in self.d.quotes:
            return self._open_string(buf, pos, out, key, "")
        if ch in _ATOM_START:
            self.mode, self.word, self.in_key = ATOM, "", key
            return pos
        if key or ch not in "[({":
            return self._fail(pos)
        if self.element:
            self._sep(out)
        self._push({"[": "]", "(": "t", "{": "}"}[ch], out)
        self.pending = False
        self.mode, self.element = (DKEY, False) if ch == "{" else (VALUE, True)
        return pos + 1

    # -- words: argument names and literals --------------------------------------------

    def _word(self, buf: str, pos: int, out: list[str]) -> int:
        m = (_IDENT if self.mode == KWNAME else _ATOM).match(buf, pos)
        if m:
            self.word += m.group()
            pos = m.end()
            if len(self.word) > 256:
                return self._fail(pos)
        if pos >= len(buf):
            return pos  # the word may go on
        if self.mode == KWNAME:
            self.mode = KWEQ
            return pos
        if self.d.quotes and buf[pos] in self.d.quotes and self.word.lower() in _PREFIXES:
            return self._open_string(buf, pos, out, self.in_key, self.word.lower())
        text = atom_json(self.word)
        if text is None and self.in_key and self.d.bare_keys:
            text = json.dumps(self.word, ensure_ascii=False)  # a bare key
        if text is None:
            return self._fail(pos)
        self._emit_atom(text, out)
        return pos

    def _emit_atom(self, text: str, out: list[str]) -> None:
        if self.in_key:
            self._sep(out)
            out.append(text if text.startswith('"') else json.dumps(text))
            self.mode = COLON
            return
        if self.element:
            self._sep(out)
        out.append(text)
        self._after_value()

    # -- strings ---------------------------------------------------------------------

    def _open_string(self, buf: str, pos: int, out: list[str], key: bool, prefix: str) -> int:
        q, n = buf[pos], len(buf)
        if pos + 2 >= n and buf[pos:] == q * (n - pos):
            return pos  # `"` or `""` at the end: an empty string, or a triple quote
        triple = buf.startswith(q * 3, pos)
        if key or self.element:
            self._sep(out)
        self.string, self.in_key, self.mode = QuotedString(q, "r" in prefix, triple), key, STRING
        out.append('"')
        return pos + (3 if triple else 1)

    def _open_delimited(self, buf: str, pos: int, out: list[str], key: bool) -> int:
        delim = self.d.delim
        if not buf.startswith(delim, pos):
            if delim.startswith(buf[pos:]):
                return pos  # the delimiter may still come: wait
            return self._fail(pos)
        typed = self.d.typed_delim and not key
        if not typed:  # a typed value is written whole at its end, like a number
            if key or self.element:
                self._sep(out)
            out.append('"')
        self.string, self.in_key, self.mode = DelimitedString(delim, typed), key, DELIM
        return pos + len(delim)

    def _string(self, buf: str, pos: int, out: list[str]) -> int:
        string = self.string
        pos, ended = string.read(buf, pos, out)
        if not ended:
            return pos
        if isinstance(string, DelimitedString) and string.typed:
            self._emit_atom(typed_json(string.text), out)
        else:
            out.append('"')
            if self.in_key:
                self.mode = COLON
            else:
                self._after_value()
        return pos

    # -- truncation --------------------------------------------------------------------

    def completion(self) -> str:
        """The text that closes what scan() forwarded into a JSON object (cut-off output)."""
        mode = self.resume if self.mode == ERROR else self.mode
        parts: list[str] = []
        typed = isinstance(self.string, DelimitedString) and self.string.typed
        if mode == STRING or (mode == DELIM and not typed):
            parts.append('"' + (": null" if self.in_key else ""))
        elif mode == DELIM:
            parts.append((", " if self.element and self.filled[self._level()] else "")
                         + json.dumps(self.string.text, ensure_ascii=False))
        elif mode == ATOM:
            text = atom_json(self.word)
            if text is not None and not self.in_key:
                parts.append((", " if self.element and self.filled[self._level()] else "") + text)
            elif self.pending:
                parts.append("null")
        elif mode == COLON:
            parts.append(": null")
        elif mode == VALUE and self.pending:
            parts.append("null")
        parts.extend(_CLOSE_OUT[c] for c in reversed(self.stack))
        return "".join(parts)

