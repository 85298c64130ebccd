"""JSON lexical pieces as byte grammars: strings and their characters, formats, whitespace, any value."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from grammar.errors import GrammarError
from grammar.frontends.json_merge import EXCLUDE_STRINGS
from grammar.frontends.regular import Dfa, counted, intersect, minus, to_dfa, to_node
from grammar.ir import (NOTHING, EMPTY, Bytes, Grammar, Graph, Node, Ref, Repeat, alt, byte_set, lit, merge_ranges, opt, seq,
                        star, subtract_ranges)  # fmt: skip
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
    pattern, fmt = schema.get("pattern"), schema.get("format")
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
        if fmt not in FORMATS:
            raise GrammarError(f"{where}/format: unsupported format {fmt!r}")
        parts.append(("format", regex_to_node(FORMATS[fmt], json_char, f"{where}/format")))
    excluded = schema.get(EXCLUDE_STRINGS, [])
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


def key_excluding(names: list[str], char: Node) -> Node:
    """A quoted key whose raw bytes spell none of `names` (escapes only after diverging): a trie
    of the names whose nodes may also leave for `free` (any key text), `close` or, from nodes
    with only ASCII children, `multi` (a multi-byte character, then free)."""
    trie = _key_trie(names)
    children, ends, mid_char, byte_in = trie.children, trie.ends, trie.mid_char, trie.byte_in
    free, close, multi = len(children), len(children) + 1, len(children) + 2
    start = len(children) + 3  # Graph state 0 must be the start: the trie's root is numbered `start`
    quote = _BYTE_NODES[34]
    edges: list[tuple[int, int, Node | None]] = [(free, free, char), (free, close, quote),
                                                 (multi, free, codepoint_ranges_to_node(((0x80, 0x10FFFF),)))]
    done = 0  # nodes below this have their edges
    for i in sorted(trie.special):
        # The plain nodes before i: one ASCII child, the next node (what the loop below makes of them).
        edges += [e for k in range(done, i) for e in ((k, k + 1, _BYTE_NODES[byte_in[k + 1]]), (k, close, quote),
                                                      (k, free, _DIVERGING_ASCII[byte_in[k + 1]]), (k, multi, None))]
        done = i + 1
        at = i or start
        kids = children[i]
        for b, child in kids.items():
            edges.append((at, child, _BYTE_NODES[b]))
        if i in mid_char:
            continue
        if i not in ends:
            edges.append((at, close, quote))
        firsts = _diverging(tuple(sorted(kids)))
        if firsts is not None:
            edges.append((at, free, firsts))
        if all(b < 0x80 for b in kids):  # any multi-byte character through the shared state
            edges.append((at, multi, None))
    edges.append((0, start, quote))
    return Graph(len(children) + 4, tuple(edges), (close,))


@dataclass(slots=True)
class _KeyTrie:
    """The trie of key_excluding's names: children per node (byte -> node; a node's first child
    is the next node), the nodes where a name ends, the nodes inside a multi-byte character, the
    byte into each node, and the nodes that are not plain (plain: one ASCII child, no name ending)."""

    children: list[dict[int, int]] = field(default_factory=lambda: [{}])
    ends: set[int] = field(default_factory=set)
    mid_char: set[int] = field(default_factory=set)
    byte_in: list[int] = field(default_factory=lambda: [-1])
    special: set[int] = field(default_factory=lambda: {0})


def _key_trie(names: list[str]) -> _KeyTrie:
    """The names' raw bytes (as JSON writes them, escapes and all) in a trie."""
    trie = _KeyTrie()
    children, byte_in, special = trie.children, trie.byte_in, trie.special
    for name in names:
        plain = type(name) is str and not _NEEDS_ESCAPE.search(name)
        word = name.encode() if plain else json_string(name)[1:-1].encode()
        if not word.isascii():
            _add_word(trie, word)
            continue
        node, j = 0, 0
        for b in word:  # down the shared prefix
            nxt = children[node].get(b)
            if nxt is None:
                break
            node, j = nxt, j + 1
        if j < len(word):  # the rest as new nodes in a chain
            kids = children[node]
            if kids:
                special.add(node)  # a second child
            first = len(children)
            kids[word[j]] = first
            children += [{b: first + k + 1} for k, b in enumerate(word[j + 1:])]
            children.append({})
            byte_in += word[j:]
            node = len(children) - 1
        trie.ends.add(node)
    special |= trie.ends
    return trie


def _add_word(trie: _KeyTrie, word: bytes) -> None:
    """Add a word with multi-byte characters, byte by byte."""
    children, pending, node = trie.children, 0, 0
    for b in word:
        pending = (3 if b >= 0xF0 else 2 if b >= 0xE0 else 1 if b >= 0xC0 else 0) if b >= 0xC0 or b < 0x80 else pending - 1
        kids = children[node]
        nxt = kids.get(b)
        if nxt is None:
            if kids or b >= 0x80:
                trie.special.add(node)
            nxt = kids[b] = len(children)
            children.append({})
            trie.byte_in.append(b)
        node = nxt
        if pending:
            trie.mid_char.add(node)
    trie.ends.add(node)


def json_string(name: Any) -> str:
    """`json.dumps(name, ensure_ascii=False)`, without its call for a plain string."""
    if type(name) is str and not _NEEDS_ESCAPE.search(name):
        return f'"{name}"'
    return json.dumps(name, ensure_ascii=False)


_NEEDS_ESCAPE = re.compile(r'[\x00-\x1f"\\]')  # what json.dumps escapes in a string (ensure_ascii=False)
_BYTE_NODES = tuple(lit(bytes((b,))) for b in range(256))  # the shared one-byte literals


@lru_cache(maxsize=FRAGMENT_CACHE)
def _diverging(taken: tuple[int, ...]) -> Node | None:
    """The characters that leave a key trie's node whose children are the bytes `taken` (None:
    none): by ASCII byte class when every child is ASCII (multi-byte characters go through the
    shared state), else whole characters by their first byte. Built once per set of bytes."""
    taken_ranges = merge_ranges([(b, b) for b in taken])
    if all(b < 0x80 for b in taken):
        firsts = subtract_ranges(subtract_ranges(((0x20, 0x7F),), SPECIAL), taken_ranges)
        return Bytes(firsts) if firsts else None
    firsts = subtract_ranges(subtract_ranges(((0x20, 0x7F), (0xC2, 0xF4)), SPECIAL), taken_ranges)
    return _chars_starting_with(firsts) if firsts else None


_DIVERGING_ASCII = tuple(_diverging((b,)) for b in range(0x80))  # never None: a key's one ASCII next byte


def _chars_starting_with(firsts: Ranges) -> Node:
    """Whole UTF-8 characters (no escapes) whose first byte is in `firsts`."""
    options: list[Node] = []
    for lo, hi in firsts:
        a1, b1 = max(lo, 0x20), min(hi, 0x7F)
        if a1 <= b1:
            options.append(Bytes(((a1, b1),)))
        for lead_lo, lead_hi, cp_lo, cp_hi in ((0xC2, 0xDF, 0x80, 0x7FF), (0xE0, 0xEF, 0x800, 0xFFFF), (0xF0, 0xF4, 0x10000, 0x10FFFF)):
            a, b = max(lo, lead_lo), min(hi, lead_hi)
            if a <= b:
                cps = _lead_range_to_cps(a, b, cp_lo, cp_hi)
                options.append(codepoint_ranges_to_node(cps))
    return alt(*options)


def _lead_range_to_cps(a: int, b: int, cp_lo: int, cp_hi: int) -> Ranges:
    n = 2 if cp_hi == 0x7FF else 3 if cp_hi == 0xFFFF else 4
    shift = 6 * (n - 1)
    base = {2: 0xC0, 3: 0xE0, 4: 0xF0}[n]
    lo = max(cp_lo, (a - base) << shift)
    hi = min(cp_hi, ((b - base + 1) << shift) - 1)
    return ((lo, hi),)


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
    obj = seq(lit("{"), ws, opt(seq(member, star(seq(comma, member)))), ws, lit("}"))
    arr = seq(lit("["), ws, opt(seq(value, star(seq(comma, value)))), ws, lit("]"))
    scalars = alt(lit("null"), lit("true"), lit("false"), number_node(None, None, None), quoted(star(char)))
    return alt(scalars, obj, arr)
