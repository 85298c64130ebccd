"""Schema-typed conversion of XML-style parameter text into JSON values (fact sheet §3)."""
from __future__ import annotations

import ast
import json
import math
import re
from dataclasses import dataclass
from json.encoder import encode_basestring
from typing import Any, Callable

_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]')
_INT = re.compile(r"[-+]?[0-9]+\Z")
_ORDER = ("integer", "number", "boolean", "object", "array", "any", "string")
_FAIL = object()


@dataclass(frozen=True, slots=True)
class ValueKind:
    """The JSON types a parameter may take, in the order conversions are tried."""
    types: tuple[str, ...]
    nullable: bool = False

    @property
    def streamable(self) -> bool:
        """A plain string: its text can be sent as it arrives, inside a JSON string."""
        return self.types == ("string",) and not self.nullable


STRING = ValueKind(("string",))
ANY_JSON = ValueKind(("any",), True)

_ENUM_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number", type(None): "null"}


def _types_of(schema: Any) -> list[str]:
    if not isinstance(schema, dict):
        return []
    t = schema.get("type")
    if isinstance(t, str):
        return [t]
    if isinstance(t, list):
        return [x for x in t if isinstance(x, str)]
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return [x for branch in schema[key] for x in _types_of(branch)]
    if isinstance(schema.get("enum"), list):
        return [_ENUM_TYPES.get(type(v), "string") for v in schema["enum"]]
    if "properties" in schema:
        return ["object"]
    if "items" in schema:
        return ["array"]
    return []


def kind_of(schema: Any) -> ValueKind:
    """Resolve a parameter's JSON schema to the types its text converts to."""
    found = _types_of(schema)
    nullable = "null" in found
    types = tuple(t for t in _ORDER if t in found)
    if not types:
        return ValueKind(("string",), nullable) if nullable and found == ["null"] else STRING
    return ValueKind(types, nullable)


def _to_int(s: str) -> Any:
    return int(s) if _INT.match(s) else _FAIL


def _to_number(s: str) -> Any:
    try:
        v = float(s)
    except ValueError:
        return _FAIL
    if not math.isfinite(v):
        return _FAIL
    return int(v) if v.is_integer() and abs(v) < 2**53 else v


def _to_bool(s: str) -> Any:
    low = s.lower()
    return True if low == "true" else False if low == "false" else _FAIL


def _literal(s: str, want: type | None) -> Any:
    try:
        v = json.loads(s)
    except ValueError:
        try:
            v = ast.literal_eval(s)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return _FAIL
        if isinstance(v, tuple):
            v = list(v)
    if want is not None and not isinstance(v, want):
        return _FAIL
    return v


_CONVERT: dict[str, Callable[[str], Any]] = {
    "integer": _to_int,
    "number": _to_number,
    "boolean": _to_bool,
    "object": lambda s: _literal(s, dict),
    "array": lambda s: _literal(s, list),
    "any": lambda s: _literal(s, None),
}


def convert(text: str, kind: ValueKind) -> str:
    """The JSON text for one parameter value; a failed conversion keeps the text a string."""
    s = text.strip()
    if s in ("null", "None") and (kind.nullable or "string" not in kind.types):
        return "null"
    for t in kind.types:
        if t == "string":
            break
        v = _CONVERT[t](s)
        if v is not _FAIL:
            try:
                return json.dumps(v, ensure_ascii=False)
            except (TypeError, ValueError):
                continue
    return json.dumps(text, ensure_ascii=False)


def escape(text: str) -> str:
    """JSON-escape text for the inside of a JSON string (per character, so chunks concatenate)."""
    if _NEEDS_ESCAPE.search(text) is None:
        return text
    return encode_basestring(text)[1:-1]
