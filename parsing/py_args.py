"""PyArgsScanner: incremental scan of Python keyword arguments `(k=v, ...)` into a JSON object."""
from __future__ import annotations

import json
import math
import re
import unicodedata

from parsing.json_stream import DONE, ERROR

# scanner modes: below JsonScanner's DONE and ERROR, which are shared (readers test `mode >= DONE`)
OPEN, KWKEY, KWNAME, KWEQ, STAR, VALUE, DKEY, COLON, AFTER, STRING, ATOM = range(-11, 0)

_WS = frozenset(" \t\r\n")
_IDENT_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_ATOM_START = _IDENT_START | frozenset("0123456789+-.")
_IDENT = re.compile(r"\w+")
_ATOM = re.compile(r"[\w.+\-]+")
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?\Z")
_LITERALS = {"True": "true", "true": "true", "False": "false", "false": "false", "None": "null", "null": "null"}
_PREFIXES = frozenset(("r", "u", "b", "br", "rb"))
_CLOSE_CHAR = {")": ")", "]": "]", "t": ")", "}": "}", "S": "}"}
_CLOSE_OUT = {")": "}", "]": "]", "t": "]", "}": "}", "S": ""}
_SIMPLE_ESCAPES = {"n": "\\n", "t": "\\t", "r": "\\r", "b": "\\b", "f": "\\f", "\\": "\\\\", '"': '\\"',
                   "'": "'", "a": "\\u0007", "v": "\\u000b", "\n": ""}
_HEX_LEN = {"x": 2, "u": 4, "U": 8}
_HEX = frozenset("0123456789abcdefABCDEF")
_OCTAL = frozenset("01234567")
# runs of string characters copied as they are, per (quote, raw)
_RUNS = {q: re.compile("[^" + re.escape(q + '"') + "\\\\\x00-\x1f]+") for q in "'\""}


def _json_char(ch: str) -> str:
    return json.dumps(ch, ensure_ascii=False)[1:-1]


def atom_json(atom: str) -> str | None:
    """The JSON text of a Python (or JSON) literal name or number, or None."""
    if atom in _LITERALS:
        return _LITERALS[atom]
    if _JSON_NUMBER.match(atom):
        return atom
    text = atom.replace("_", "")
    try:
        value: float | int = int(text, 0)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            return None
        if not math.isfinite(value):
            return None
    return json.dumps(value)


class PyArgsScanner:
    """Scans `(k=v, ...)` fed in pieces and forwards the same arguments as a JSON object.

    Used by HeaderReader for pythonic calls. Python literals become JSON: strings in either
    quote (raw and triple-quoted too), True/False/None and JSON's true/false/null, numbers
    (underscores, hex, `1.`), lists, tuples (as arrays) and dicts (non-string keys become
    strings); `**{...}` merges a dict into the arguments. Separators are written as ", " and
    ": " whatever the input's spacing, so the output does not depend on how text is split.
    The interface is JsonScanner's: scan(), mode, completion().
    """

    __slots__ = ("stack", "filled", "mode", "word", "quote", "raw", "triple", "esc", "in_key",
                 "element", "pending", "resume", "stars")

    def __init__(self) -> None:
        self.stack: list[str] = []
        self.filled: list[bool | None] = []  # [level] something was written in it (None: a ** dict)
        self.mode = OPEN
        self.word = ""
        self.quote = '"'
        self.raw = self.triple = self.in_key = self.element = self.pending = False
        self.esc: str | None = None  # characters after a backslash, while an escape is open
        self.resume = OPEN
        self.stars = 0

    def scan(self, buf: str, pos: int) -> tuple[int, str]:
        """Consume buf from pos until the value ends, more text is needed, or an error."""
        n = len(buf)
        out: list[str] = []
        while pos < n and self.mode < DONE:
            mode = self.mode
            if mode == STRING:
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
        out.append({")": "{", "]": "[", "t": "[", "}": "{", "S": ""}[kind])

    def _close(self, out: list[str]) -> None:
        out.append(_CLOSE_OUT[self.stack.pop()])
        self.filled.pop()
        self._after_value()

    def _after_value(self) -> None:
        self.pending = False
        self.mode = AFTER if self.stack else DONE

    def _token(self, buf: str, pos: int, out: list[str]) -> int:
        ch, mode = buf[pos], self.mode
        top = self.stack[-1] if self.stack else ""
        if mode == OPEN:
            if ch != "(":
                return self._fail(pos)
            self._push(")", out)
            self.mode = KWKEY
            return pos + 1
        if mode == AFTER:
            if ch == ",":
                self.mode = KWKEY if top == ")" else DKEY if top in "}S" else VALUE
                self.element = top in "]t"
                return pos + 1
            if ch == _CLOSE_CHAR[top]:
                self._close(out)
                return pos + 1
            return self._fail(pos)
        if mode == KWKEY:
            if ch == ")" and top == ")":
                self._close(out)
                return pos + 1
            if ch == "*":
                self.mode, self.stars = STAR, 1
                return pos + 1
            if ch in _IDENT_START:
                self.mode, self.word = KWNAME, ""
                return pos
            return self._fail(pos)
        if mode == STAR:
            if ch == "*" and self.stars == 1:
                self.stars = 2
                return pos + 1
            if ch == "{" and self.stars == 2:
                self._push("S", out)
                self.mode = DKEY
                return pos + 1
            return self._fail(pos)
        if mode == KWEQ:
            if ch != "=":
                return self._fail(pos)
            self._sep(out)
            out.append(json.dumps(self.word, ensure_ascii=False) + ": ")
            self.mode, self.element, self.pending = VALUE, False, True
            return pos + 1
        if mode == COLON:
            if ch != ":":
                return self._fail(pos)
            out.append(": ")
            self.mode, self.element, self.pending = VALUE, False, True
            return pos + 1
        if mode == DKEY:
            if ch == "}" and top in "}S":
                self._close(out)
                return pos + 1
            return self._item(buf, pos, out, key=True)
        return self._item(buf, pos, out, key=False)  # VALUE

    def _item(self, buf: str, pos: int, out: list[str], key: bool) -> int:
        ch = buf[pos]
        top = self.stack[-1]
        if not key and self.element and ch == _CLOSE_CHAR[top]:
            self._close(out)  # an empty list or tuple, or a trailing comma
            return pos + 1
        if ch in "'\"":
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

    # -- words: keyword names and literals --------------------------------------------

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
        if buf[pos] in "'\"" and self.word.lower() in _PREFIXES:
            return self._open_string(buf, pos, out, self.in_key, self.word.lower())
        text = atom_json(self.word)
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

    # -- strings -----------------------------------------------------------------------

    def _open_string(self, buf: str, pos: int, out: list[str], key: bool, prefix: str) -> int:
        q, n = buf[pos], len(buf)
        if pos + 2 >= n and buf[pos:] == q * (n - pos):
            return pos  # `"` or `""` at the end: an empty string, or a triple quote
        triple = buf.startswith(q * 3, pos)
        if key or self.element:
            self._sep(out)
        self.quote, self.raw, self.triple, self.in_key = q, "r" in prefix, triple, key
        self.esc = None
        self.mode = STRING
        out.append('"')
        return pos + (3 if triple else 1)

    def _end_string(self, out: list[str]) -> None:
        out.append('"')
        if self.in_key:
            self.mode = COLON
        else:
            self._after_value()

    def _string(self, buf: str, pos: int, out: list[str]) -> int:
        n = len(buf)
        run = _RUNS[self.quote]
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
            if ch == self.quote:
                if not self.triple:
                    self._end_string(out)
                    return pos + 1
                if pos + 2 >= n and buf[pos:] == ch * (n - pos):
                    return pos  # maybe the closing triple quote: wait
                if buf.startswith(ch * 3, pos):
                    self._end_string(out)
                    return pos + 3
                out.append('\\"' if ch == '"' else ch)
                pos += 1
            elif ch == "\\":
                if self.raw:
                    out.append("\\\\")
                    if pos + 1 < n and buf[pos + 1] == self.quote:
                        out.append(_json_char(self.quote))
                        pos += 1
                    elif pos + 1 >= n:
                        self.esc = "raw"
                        return pos + 1
                    pos += 1
                else:
                    self.esc = ""
                    pos += 1
            else:
                out.append('\\"' if ch == '"' else _json_char(ch))
                pos += 1
        return pos

    def _escape(self, buf: str, pos: int, out: list[str]) -> int:
        """Read one more character of an escape; emit its JSON form once it is complete."""
        esc, ch = self.esc, buf[pos]
        if esc == "raw":  # a raw string's backslash at the end of the last piece
            self.esc = None
            if ch == self.quote:
                out.append(_json_char(ch))
                return pos + 1
            return pos
        if esc and esc[0] in _OCTAL and (ch not in _OCTAL or len(esc) == 3):
            self.esc = None
            out.append("\\u%04x" % int(esc, 8))
            return pos
        esc += ch
        self.esc = esc
        done = _escape_json(esc)
        if done is not None:
            self.esc = None
            out.append(done)
        return pos + 1

    # -- truncation --------------------------------------------------------------------

    def completion(self) -> str:
        """The text that closes what scan() forwarded into a JSON object (cut-off output)."""
        mode = self.resume if self.mode == ERROR else self.mode
        parts: list[str] = []
        if mode == STRING:
            parts.append('"' + (": null" if self.in_key else ""))
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


def _escape_json(esc: str) -> str | None:
    """JSON text for a complete Python escape (the characters after the backslash), or None
    while more characters are needed. An unknown escape keeps its backslash, as Python does."""
    c = esc[0]
    if c in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[c]
    if c in _HEX_LEN:
        digits = esc[1:]
        if digits and digits[-1] not in _HEX:
            return "\\\\" + "".join(_json_char(x) for x in esc)
        if len(digits) < _HEX_LEN[c]:
            return None
        code = int(digits, 16)
        return _json_char(chr(code)) if code < 0x110000 else "\\\\" + esc
    if c == "N":
        if len(esc) == 1:
            return None
        if esc[1] != "{":
            return "\\\\N" + _json_char(esc[1])
        if len(esc) == 2 or not esc.endswith("}"):
            return None if len(esc) < 64 else "\\\\" + "".join(_json_char(x) for x in esc)
        try:
            return _json_char(unicodedata.lookup(esc[2:-1]))
        except KeyError:
            return "\\\\" + "".join(_json_char(x) for x in esc)
    if c in _OCTAL:
        return None  # octal digits end at the first non-octal character (or after three)
    return "\\\\" + _json_char(c)
