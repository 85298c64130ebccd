"""Literal dialects of call arguments (Python, Gemma 4, FunctionGemma) and their value helpers."""
from __future__ import annotations

import json
import math
import re
import unicodedata
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Dialect:
    """How a family writes a call's arguments as literals (read by LiteralArgsScanner).

    `open` starts the arguments ("(" for keyword arguments, "{" for an object with bare keys),
    `key_sep` follows each argument's name ("=" or ":"). `quotes` are Python's quoted strings
    (with escapes, prefixes and triple quotes); `delim` is a raw-string delimiter token (no
    escapes inside); `typed_delim`: a delimited value that parses as JSON is that value, as
    FunctionGemma's parser reads it. `bare_keys`: keys of nested objects may be bare names.
    """
    open: str
    key_sep: str
    quotes: str = ""
    delim: str = ""
    typed_delim: bool = False
    bare_keys: bool = False

    @property
    def close(self) -> str:
        return ")" if self.open == "(" else "}"


# get_weather(city="Paris", days=3): Python literals (and JSON's true/false/null, for Olmo 3)
PYTHON = Dialect("(", "=", quotes="'\"")
# Gemma 4: call:get_weather{city:<|"|>Paris<|"|>,days:3}; JSON's quoted keys and strings are
# read too (constrained decoding writes the arguments as JSON)
GEMMA = Dialect("{", ":", quotes='"', delim='<|"|>', bare_keys=True)
# FunctionGemma: call:get_weather{city:<escape>Paris<escape>,days:<escape>3<escape>}
FUNCTION_GEMMA = Dialect("{", ":", quotes='"', delim="<escape>", typed_delim=True, bare_keys=True)
DIALECTS = {"python": PYTHON, "gemma": GEMMA, "function_gemma": FUNCTION_GEMMA}

_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?\Z")
_LITERALS = {"True": "true", "true": "true", "False": "false", "false": "false", "None": "null", "null": "null"}
_SIMPLE_ESCAPES = {"n": "\\n", "t": "\\t", "r": "\\r", "b": "\\b", "f": "\\f", "\\": "\\\\", '"': '\\"',
                   "'": "'", "a": "\\u0007", "v": "\\u000b", "\n": ""}
_HEX_LEN = {"x": 2, "u": 4, "U": 8}
_HEX = frozenset("0123456789abcdefABCDEF")
OCTAL = frozenset("01234567")


def json_char(ch: str) -> str:
    """One character as it stands inside a JSON string."""
    return json.dumps(ch, ensure_ascii=False)[1:-1]


def json_text(text: str) -> str:
    """Text as it stands inside a JSON string."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


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


def typed_json(text: str) -> str:
    """A delimited value's JSON: the value when the text is JSON, else the text as a string."""
    try:
        return json.dumps(json.loads(text), ensure_ascii=False)
    except ValueError:
        return json.dumps(text, ensure_ascii=False)


def escape_json(esc: str) -> str | None:
    """JSON text for a complete Python escape (the characters after the backslash), or None
    while more characters are needed. An unknown escape keeps its backslash, as Python does."""
    c = esc[0]
    if c in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[c]
    if c in _HEX_LEN:
        digits = esc[1:]
        if digits and digits[-1] not in _HEX:
            return "\\\\" + json_text(esc)
        if len(digits) < _HEX_LEN[c]:
            return None
        code = int(digits, 16)
        return json_char(chr(code)) if code < 0x110000 else "\\\\" + esc
    if c == "N":
        if len(esc) == 1:
            return None
        if esc[1] != "{":
            return "\\\\N" + json_char(esc[1])
        if len(esc) == 2 or not esc.endswith("}"):
            return None if len(esc) < 64 else "\\\\" + json_text(esc)
        try:
            return json_char(unicodedata.lookup(esc[2:-1]))
        except KeyError:
            return "\\\\" + json_text(esc)
    if c in OCTAL:
        return None  # octal digits end at the first non-octal character (or after three)
    return "\\\\" + json_char(c)
