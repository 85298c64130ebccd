"""LiteralArgsScanner: incremental scan of literal call arguments (`(k=v)`, `{k:v}`) into JSON."""
from __future__ import annotations

import json
import re

from parsing.json_stream import DONE, ERROR
from parsing.literals import OCTAL, PYTHON, Dialect, atom_json, escape_json, json_char, json_text, typed_json

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
# runs of quoted-string characters copied as they are, per quote
_RUNS = {q: re.compile("[^" + re.escape(q + '"') + "\\\\\x00-\x1f]+") for q in "'\""}


class LiteralArgsScanner:
    """Scans literal arguments fed in pieces and forwards the same arguments as a JSON object.

    Used by HeaderReader for pythonic calls (the PYTHON dialect: strings in either quote, raw
    and triple-quoted too, True/False/None and JSON's literals, numbers with underscores or
    hex, lists, tuples as arrays, dicts with non-string keys made strings, `**{...}` merged)
    and for Gemma's calls (bare keys, strings between delimiter tokens). Separators are
    written as ", " and ": " whatever the input's spacing, so the output does not depend on
    how text is split. The interface is JsonScanner's: scan(), mode, completion().
    """

    __slots__ = ("d", "stack", "filled", "mode", "word", "quote", "raw", "triple", "esc", "in_key",
                 "element", "pending", "resume", "stars", "held")

    def __init__(self, dialect: Dialect = PYTHON) -> None:
        self.d = dialect
        self.stack: list[str] = []
        self.filled: list[bool | None] = []  # [level] something was written in it (None: a ** dict)
        self.mode = OPEN
        self.word = ""
        self.quote = '"'
        self.raw = self.triple = self.in_key = self.element = self.pending = False
        self.esc: str | None = None  # characters after a backslash, while an escape is open
        self.resume = OPEN
        self.stars = 0
        self.held: list[str] = []  # a typed delimited value, until its closing delimiter

    def scan(self, buf: str, pos: int) -> tuple[int, str]:
        """Consume buf from pos until the value ends, more text is needed, or an error."""
        n = len(buf)
        out: list[str] = []
        while pos < n and self.mode < DONE:
            mode = self.mode
            if mode == STRING:
                new = self._string(buf, pos, out)
            elif mode == DELIM:
                new = self._delimited(buf, pos, out)
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
            if ch != (self.d.key_sep if mode == KWEQ else ":"):
                return self._fail(pos)
            if mode == KWEQ:
                self._sep(out)
                out.append(json.dumps(self.word, ensure_ascii=False))
            out.append(": ")
            self.mode, self.element, self.pending = VALUE, False, True
            return pos + 1
        if mode == DKEY:
            if ch == "}" and top in "}S":
                self._close(out)
                return pos + 1
            return self._item(buf, pos, out, key=True)
        return self._item(buf, pos, out, key=False)  # VALUE

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

    # -- quoted strings (Python) -------------------------------------------------------

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
                out.append("\\\\" if self.raw else "")
                self.esc = "raw" if self.raw else ""
                pos += 1
            else:
                out.append('\\"' if ch == '"' else json_char(ch))
                pos += 1
        return pos

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

    # -- delimited strings (Gemma) -----------------------------------------------------

    def _open_delimited(self, buf: str, pos: int, out: list[str], key: bool) -> int:
        delim = self.d.delim
        if not buf.startswith(delim, pos):
            if delim.startswith(buf[pos:]):
                return pos  # the delimiter may still come: wait
            return self._fail(pos)
        self.in_key, self.held = key, []
        if not self.d.typed_delim:
            if key or self.element:
                self._sep(out)
            out.append('"')
        self.mode = DELIM
        return pos + len(delim)

    def _delimited(self, buf: str, pos: int, out: list[str]) -> int:
        delim = self.d.delim
        end = buf.find(delim, pos)
        stop = end if end >= 0 else _hold_point(buf, pos, delim)
        text = buf[pos:stop]
        if text:
            if self.d.typed_delim:
                self.held.append(text)
            else:
                out.append(json_text(text))
        if end < 0:
            return stop
        if self.d.typed_delim:
            self._emit_atom(typed_json("".join(self.held)) if not self.in_key
                            else json.dumps("".join(self.held), ensure_ascii=False), out)
        else:
            self._end_string(out)
        return end + len(delim)

    # -- truncation --------------------------------------------------------------------

    def completion(self) -> str:
        """The text that closes what scan() forwarded into a JSON object (cut-off output)."""
        mode = self.resume if self.mode == ERROR else self.mode
        parts: list[str] = []
        if mode == STRING or (mode == DELIM and not self.d.typed_delim):
            parts.append('"' + (": null" if self.in_key else ""))
        elif mode == DELIM and not self.in_key:
            parts.append((", " if self.element and self.filled[self._level()] else "")
                         + json.dumps("".join(self.held), ensure_ascii=False))
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


def _hold_point(buf: str, pos: int, delim: str) -> int:
    """Where a tail that could still grow into `delim` begins (len(buf) when none does)."""
    for k in range(min(len(delim) - 1, len(buf) - pos), 0, -1):
        if delim.startswith(buf[len(buf) - k:]):
            return len(buf) - k
    return len(buf)
