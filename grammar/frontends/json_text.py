"""JSON lexical pieces as byte grammars: strings and their characters, formats, whitespace, any value."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from grammar.errors import GrammarError
from grammar.frontends.json_merge import EXCLUDE_STRINGS
from grammar.frontends.regular import Dfa, counted, intersect, minus, to_dfa, to_node
from grammar.ir import (NOTHING, EMPTY, Bytes, Grammar, Graph, Node, Ref, Repeat, accepts_empty, alt, byte_set, lit,
                        merge_ranges, opt, renewed, seq, star, subtract_ranges)  # fmt: skip
from grammar.frontends.json_numbers import number_node
from grammar.frontends.regex import Ranges, regex_to_node
from grammar.frontends.unicode import ALL_CHARS, FRAGMENT_CACHE, codepoint_ranges_to_node

SPECIAL: Ranges = ((0, 31), (34, 34), (92, 92))
_SHORT = {8: "b", 9: "t", 10: "n", 12: "f", 13: "r", 34: '"', 92: "\\"}
HEX = Bytes(((48, 57), (65, 70), (97, 102)))
HEX4_NO_SURROGATE = alt(
    seq(Bytes(((48, 57), (65, 67), (69, 70), (97, 99), (101, 102))), HEX, HEX, HEX),
    seq(byte_set("dD"), Bytes(((48, 55),)), HEX, HEX),
)
MAX_FLEXIBLE_WS = 24
ANY_VALUE = "@any"

# RFC 3986 pieces, for uri and uri-reference (a percent sign must start a %XX escape).
_UNRESERVED = r"A-Za-z0-9\-._~"
_SUB_DELIMS = r"!$&'()*+,;="
_PCT = r"%[0-9A-Fa-f]{2}"
_PCHAR = rf"([{_UNRESERVED}{_SUB_DELIMS}:@]|{_PCT})"
_SEGMENT_NC = rf"([{_UNRESERVED}{_SUB_DELIMS}@]|{_PCT})"  # a first relative segment: no ':'
_AUTHORITY = (rf"(([{_UNRESERVED}{_SUB_DELIMS}:]|{_PCT})*@)?"
              rf"(\[[0-9A-Fa-f:.]+\]|([{_UNRESERVED}{_SUB_DELIMS}]|{_PCT})*)(:[0-9]*)?")  # fmt: skip
_PATH_ABEMPTY = rf"(/{_PCHAR}*)*"
_QUERY = rf"(\?({_PCHAR}|[/?])*)?(#({_PCHAR}|[/?])*)?"


def _hier_part(first_segment: str) -> str:
    """Authority and path, or an absolute path, or a relative path from `first_segment`, or nothing."""
    return rf"(//{_AUTHORITY}{_PATH_ABEMPTY}|/({_PCHAR}+{_PATH_ABEMPTY})?|{first_segment}+{_PATH_ABEMPTY})?"


_URI = rf"[a-zA-Z][a-zA-Z0-9+.\-]*:{_hier_part(_PCHAR)}{_QUERY}"
_RELATIVE_REF = rf"{_hier_part(_SEGMENT_NC)}{_QUERY}"
# RFC 4291 text forms: eight groups, or fewer around one "::", the last 32 bits maybe dotted.
_H16 = r"[0-9A-Fa-f]{1,4}"
_IPV4 = r"(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}"
_LS32 = rf"({_H16}:{_H16}|{_IPV4})"
_IPV6 = "|".join([
    rf"({_H16}:){{6}}{_LS32}",
    rf"::({_H16}:){{5}}{_LS32}",
    rf"({_H16})?::({_H16}:){{4}}{_LS32}",
    rf"(({_H16}:){{0,1}}{_H16})?::({_H16}:){{3}}{_LS32}",
    rf"(({_H16}:){{0,2}}{_H16})?::({_H16}:){{2}}{_LS32}",
    rf"(({_H16}:){{0,3}}{_H16})?::{_H16}:{_LS32}",
    rf"(({_H16}:){{0,4}}{_H16})?::{_LS32}",
    rf"(({_H16}:){{0,5}}{_H16})?::{_H16}",
    rf"(({_H16}:){{0,6}}{_H16})?::",
])
# RFC 3339 appendix A: P then a date part (Y[M[D]] / M[D] / D) with an optional time part,
# a time part alone (H[M[S]] / M[S] / S), or weeks.
_DUR_TIME = r"T(\d+H(\d+M(\d+S)?)?|\d+M(\d+S)?|\d+S)"
_DURATION = rf"P((\d+Y(\d+M(\d+D)?)?|\d+M(\d+D)?|\d+D)({_DUR_TIME})?|{_DUR_TIME}|\d+W)"
# RFC 6570 level 4: literal characters (ASCII) and {expressions}.
_URI_TEMPLATE_LITERAL = r"[!#$&()*+,\-./0-9:;=?@A-Z\[\]_a-z~]"
_VARNAME = r"([A-Za-z0-9_]|%[0-9A-Fa-f]{2})(\.?([A-Za-z0-9_]|%[0-9A-Fa-f]{2}))*"
_VARSPEC = rf"{_VARNAME}(:[1-9]\d{{0,3}}|\*)?"
_URI_TEMPLATE = rf"({_URI_TEMPLATE_LITERAL}|{_PCT}|\{{[+#./;?&=,!@|]?{_VARSPEC}(,{_VARSPEC})*\}})*"

FORMATS = {
    "date": r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])",
    "time": r"([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)",
    "date-time": r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[Tt]([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)",
    "duration": _DURATION,
    "email": r"[a-zA-Z0-9_+-]+(\.[a-zA-Z0-9_+-]+)*@[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)+",
    "uuid": r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
    "uri": _URI,
    "uri-reference": f"{_URI}|{_RELATIVE_REF}",
    "uri-template": _URI_TEMPLATE,
    "ipv4": _IPV4,
    "ipv6": _IPV6,
    "hostname": r"[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)*",
    "json-pointer": r"(/([^/~]|~[01])*)*",
    "relative-json-pointer": r"(0|[1-9]\d*)(#|(/([^/~]|~[01])*)*)",
    # OpenAPI: base64 data; "binary" and "password" say nothing about the characters.
    "byte": r"([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?",
    "binary": r".*",
    "password": r".*",
}
# Spellings users write for the formats above.
FORMAT_ALIASES = {"datetime": "date-time", "full-date": "date", "full-time": "time"}
# JSON Schema's own formats that we cannot state as a regular language (internationalized names,
# ECMA-262 regexes): a validator that asserts formats checks them, so they are refused, not ignored.
UNENFORCED_FORMATS = frozenset({"idn-email", "idn-hostname", "iri", "iri-reference", "regex"})


def string_format(schema: dict[str, Any], where: str) -> str | None:
    """The regex of the schema's `format`, None when it has none or one we do not know: JSON Schema
    makes an unknown format an annotation, so the string compiles without it (the schema compiler
    logs it: json_schema.py SchemaCompiler.unknown_format)."""
    fmt = schema.get("format")
    if fmt is None:
        return None
    if not isinstance(fmt, str):
        raise GrammarError(f"{where}/format: must be a string")
    regex = FORMATS.get(FORMAT_ALIASES.get(fmt, fmt))
    if regex is None:
        if fmt in UNENFORCED_FORMATS:
            raise GrammarError(f"{where}/format: format {fmt!r} cannot be enforced exactly")
    return regex


def json_char(ranges: Ranges) -> Node:
    """One string character from `ranges`, as it may be written inside a JSON string."""
    return _json_char(merge_ranges(ranges))


@lru_cache(maxsize=FRAGMENT_CACHE)
def _json_char(ranges: Ranges) -> Node:
    options: list[Node] = [codepoint_ranges_to_node(subtract_ranges(ranges, SPECIAL))]
    for lo, hi in ranges:
        for cp in range(lo, min(hi, 92) + 1):
            if cp < 32 or cp in (34, 92):
                short = _SHORT.get(cp)
                options.append(lit("\\" + short) if short else lit(f"\\u{cp:04x}"))
    if any(lo <= 47 <= hi for lo, hi in ranges):
        options.append(lit("\\/"))
    return alt(*options)


@lru_cache(maxsize=1)
def any_json_char() -> Node:
    """Any string character, including every escape form (\\uXXXX outside surrogates); built once."""
    raw = codepoint_ranges_to_node(subtract_ranges(ALL_CHARS, SPECIAL))
    return alt(raw, seq(lit("\\"), alt(byte_set('"\\/bfnrt'), seq(lit("u"), HEX4_NO_SURROGATE))))


def quoted(content: Node) -> Node:
    return seq(lit('"'), content, lit('"'))


def string_body(schema: dict[str, Any], where: str, char: Node, memo: dict[str, Dfa] | None = None) -> Node:
    """The content between the quotes for a string schema (pattern, format and length): one
    constraint as its own grammar, several as the intersection of their languages; `memo` keeps
    the languages of other oneOf branches' strings for the schema's compile."""
    memo = {} if memo is None else memo
    pattern, fmt = schema.get("pattern"), string_format(schema, where)
    min_len, max_len = schema.get("minLength", 0), schema.get("maxLength")
    if isinstance(min_len, float) and min_len.is_integer():
        min_len = int(min_len)
    if isinstance(max_len, float) and max_len.is_integer():
        max_len = int(max_len)
    if not isinstance(min_len, int) or isinstance(min_len, bool) or min_len < 0 or (
            max_len is not None and (not isinstance(max_len, int) or isinstance(max_len, bool))):
        raise GrammarError(f"{where}/minLength: lengths must be non-negative integers")
    if max_len is not None and max_len < min_len:
        return NOTHING
    parts: list[tuple[str, Node | tuple[int, int | None]]] = []
    if pattern is not None:
        if not isinstance(pattern, str):
            raise GrammarError(f"{where}/pattern: must be a string")
        parts.append(("pattern", regex_to_node(pattern, json_char, f"{where}/pattern", search=True)))
    if fmt is not None:
        try:
            parts.append(("format", renewed(_format_node(fmt))))
        except GrammarError as exc:
            raise GrammarError(f"{where}/format: {exc}") from None
    excluded = schema.get(EXCLUDE_STRINGS, [])
    if min_len == 1 and max_len is None and parts and not accepts_empty(parts[0][1]):
        min_len = 0  # `minLength: 1` beside a pattern that takes no empty string: no intersection to build
    if min_len or max_len is not None:
        if not parts and not excluded:
            return Repeat(char, min_len, max_len)
        parts.append(("maxLength" if max_len is not None else "minLength", (min_len, max_len)))  # counted below
    if not parts:
        if not excluded:
            return Repeat(char, 0, None)
        parts.append(("type", Repeat(json_char(ALL_CHARS), 0, None)))  # canonical, to subtract from
    if len(parts) == 1 and not excluded:
        return parts[0][1]
    try:
        dfa = _language(parts[0][1])
        for _, part in parts[1:]:
            dfa = intersect(dfa, _language(part))
        for constraint in excluded:
            key = json.dumps(constraint, sort_keys=True)
            other = memo.get(key)
            if other is None:
                other = memo[key] = _valid_strings(constraint, where)
            dfa = minus(dfa, other)
    except GrammarError as exc:
        raise GrammarError(f"{where}/{parts[-1][0]}: {exc}") from None
    return to_node(dfa)


@lru_cache(maxsize=FRAGMENT_CACHE)
def _format_node(regex: str) -> Node:
    """A known format's regex as string content, built once per process (FORMATS holds a few
    dozen; `date-time`'s took ~0.3 ms a schema: issue 39); callers get it renewed."""
    return regex_to_node(regex, json_char, "format")


def _language(part: Node | tuple[int, int | None]) -> Dfa:
    """The DFA of a node, or of (min, max) canonical characters."""
    if isinstance(part, tuple):
        return counted(to_dfa(json_char(ALL_CHARS)), *part)
    return to_dfa(part)


def _valid_strings(constraint: dict[str, Any], where: str) -> Dfa:
    """A superset, in canonical encodings, of the strings valid under another oneOf branch's string
    constraints (grammar/frontends/json_one_of.py): its pattern as Python `re` may read it, its
    lengths, its enum; its format is not asserted (validators need not)."""
    out: list[Node | tuple[int, int | None]] = []
    if "pattern" in constraint:
        out.append(regex_to_node(constraint["pattern"], json_char, f"{where}/oneOf", search=True, wide=True))
    lo, hi = constraint.get("minLength", 0), constraint.get("maxLength")
    if lo or hi is not None:
        out.append((lo, hi))
    values = [constraint["const"]] if "const" in constraint else constraint.get("enum")
    if values is not None:
        out.append(alt(*[canonical_text(v) for v in values if isinstance(v, str)]))
    dfa = _language(out[0] if out else (0, None))
    for part in out[1:]:
        dfa = intersect(dfa, _language(part))
    return dfa


def canonical_text(text: str) -> Node:
    """Every canonical encoding of `text` as JSON string content (`/` may be written `\\/`)."""
    return seq(*[json_char(((ord(c), ord(c)),)) for c in text]) if text else EMPTY


@lru_cache(maxsize=4)
def whitespace(mode: str) -> Node:
    """The whitespace between tokens; one shared node per mode (a repeat of a leaf: `alt`
    dedupes it by value, so sharing it changes no grammar)."""
    if mode == "compact":
        return EMPTY
    if mode == "flexible":
        return Repeat(byte_set(" \t\n"), 0, MAX_FLEXIBLE_WS)
    raise GrammarError(f"whitespace must be 'compact' or 'flexible', not {mode!r}")


def json_literal(value: Any) -> Node:
    """The compact serialization of a JSON value; an integral float also as the integer (2.0 == 2
    in JSON Schema, and a model writes 2)."""
    return alt(*[lit(t) for t in literal_texts(value)])


def literal_texts(value: Any) -> list[bytes]:
    """json_literal's texts (UTF-8)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return [str(int(value)).encode(), text]
    return [text]


def json_string(name: Any) -> str:
    """`json.dumps(name, ensure_ascii=False)`, without its call for a plain string."""
    if type(name) is str and not _NEEDS_ESCAPE.search(name):
        return f'"{name}"'
    return json.dumps(name, ensure_ascii=False)


def json_string_content(name: Any) -> bytes:
    """The UTF-8 bytes between the quotes of `json_string(name)`."""
    return json_string(name)[1:-1].encode()


_NEEDS_ESCAPE = re.compile(r'[\x00-\x1f"\\]')  # what json.dumps escapes in a string (ensure_ascii=False)

def add_any_value(grammar: Grammar, mode: str) -> None:
    """Define the recursive `@any` rule (any JSON value) for whitespace `mode`."""
    if ANY_VALUE not in grammar.rules:
        grammar.rules[ANY_VALUE] = _any_value(mode)


@lru_cache(maxsize=4)
def _any_value(mode: str) -> Node:
    """The `@any` rule's node, built once per whitespace mode: schema-independent, and reached
    only through its (recursive, so called) rule, so one shared copy builds the same automaton."""
    ws, char = whitespace(mode), any_json_char()
    value = Ref(ANY_VALUE)
    key = quoted(star(char))
    member = seq(key, ws, lit(":"), ws, value)
    comma = seq(ws, lit(","), ws)
    # the whitespace after `{` / `[` leads the first member (an empty one is `{ ws }`, not `{ ws ws }`:
    # grammar/frontends/json_objects.py object_node)
    obj = seq(lit("{"), opt(seq(ws, member, star(seq(comma, member)))), ws, lit("}"))
    arr = seq(lit("["), opt(seq(ws, value, star(seq(comma, value)))), ws, lit("]"))
    scalars = alt(lit("null"), lit("true"), lit("false"), number_node(None, None, None), quoted(star(char)))
    return alt(scalars, obj, arr)
