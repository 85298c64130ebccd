"""patternProperties: which schemas a property's value must meet by its name, and the members beyond the declared ones.

A name that a pattern matches takes that pattern's schema (with its own, if declared; all of the
matching patterns' schemas together); a name no pattern matches and no property declares takes
`additionalProperties`. The names of each case are a regular language of JSON string content
(grammar/frontends/regular.py), in canonical encodings. Our regex language of a pattern lies
within Python `re`'s (the validators'): a pattern's names are taken from ours, and the names no
pattern matches from outside a widened language that holds both, so a name on which the two
could disagree is in no case and is never written.
"""

from __future__ import annotations

import json
import re
from itertools import combinations
from typing import Any

from grammar.errors import GrammarError
from grammar.frontends.json_presence import escape
from grammar.frontends.json_keys import key_excluding
from grammar.frontends.json_text import canonical_text, json_char, quoted
from grammar.frontends.regex import regex_to_node
from grammar.frontends.regular import Dfa, intersect, minus, to_dfa, to_node, unbounded
from grammar.frontends.unicode import ALL_CHARS
from grammar.ir import NOTHING, Node, Repeat, alt, is_nothing, lit, seq

WIDEN_REPEATS_OVER = 16  # _unmatched_names: counted repeats past this many taken unbounded, where needed
MAX_MIXED_PATTERNS = 4  # overlapping patterns with different schemas: one case per subset of them that match


def pattern_schemas(schema: dict[str, Any], where: str) -> dict[str, Any]:
    """The object's patternProperties (pattern -> schema), each pattern checked to compile."""
    patterns = schema.get("patternProperties")
    if patterns is None:
        return {}
    if not isinstance(patterns, dict):
        raise GrammarError(f"{where}/patternProperties: must be an object")
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise GrammarError(f"{where}/patternProperties/{escape(pattern)}: invalid pattern ({exc})") from None
    return patterns


def matching(patterns: dict[str, Any], name: str) -> list[Any]:
    """The schemas of the patterns that match a declared name (as the validators see it)."""
    return [sub for pattern, sub in patterns.items() if re.search(pattern, name)]


def _canonical(schema: Any) -> str:
    return "true" if schema == {} else json.dumps(schema, sort_keys=True)


def extra_members(sc: Any, patterns: dict[str, Any], extra_schema: Any, names: list[str], where: str,
                  name_lang: Dfa | None = None, header: bool = False) -> tuple[Node | None, Node | None]:
    """(one member whose name is none of `names`, and in `name_lang` when given (propertyNames:
    grammar/frontends/json_names.py); with `header`, that member when its name starts with `$` too:
    a document's header, "$schema", "$id", "$comment"), each None where no such member is allowed;
    `sc` is the schema compiler (grammar/frontends/json_objects.py SchemaCompiler)."""
    ws = sc.ws
    if name_lang is None and (
            not patterns or (extra_schema is not False and {_canonical(s) for s in patterns.values()} == {_canonical(extra_schema)}
                             and not any(matching(patterns, n) for n in names))):  # fmt: skip
        if extra_schema is False:
            return None, None
        value = sc.node(extra_schema, f"{where}/additionalProperties")
        if is_nothing(value):
            return None, None
        head = seq(key_excluding(names, sc.char, "$"), ws, lit(":"), ws, value) if header else None
        return seq(key_excluding(names, sc.char), ws, lit(":"), ws, value), head
    if name_lang is not None:
        extra = _named_extra(sc, patterns, extra_schema, names, where, name_lang)
    else:
        cases = _pattern_cases(sc, patterns, names, where)
        if extra_schema is not False:
            value = sc.node(extra_schema, f"{where}/additionalProperties")
            if not is_nothing(value):
                other = _unmatched_names(patterns, f"{where}/patternProperties")
                cases.append((to_node(minus(other, _names(names))), value))
        members = [seq(quoted(keys), ws, lit(":"), ws, value) for keys, value in cases
                   if not is_nothing(keys) and not is_nothing(value)]
        extra = alt(*members) if members else None
    if extra is None or not header:
        return extra, None
    # a language's DFA for the rest (patterns with other schemas, propertyNames): rare
    dollar = to_dfa(seq(lit("$"), Repeat(json_char(ALL_CHARS), 0, None)))
    return extra, _named_extra(sc, patterns, extra_schema, [n for n in names if n.startswith("$")], where,
                               dollar if name_lang is None else intersect(dollar, name_lang))


def _named_extra(sc: Any, patterns: dict[str, Any], extra_schema: Any, names: list[str], where: str,
                 name_lang: Dfa) -> Node | None:
    """extra_members' cases with each name language intersected with `name_lang`."""
    cases = _pattern_cases(sc, patterns, names, where) if patterns else []
    if extra_schema is not False:
        value = sc.node(extra_schema, f"{where}/additionalProperties")
        if not is_nothing(value):
            other = _unmatched_names(patterns, f"{where}/patternProperties")
            cases.append((to_node(minus(other, _names(names))), value))
    members = []
    for keys, value in cases:
        keys = to_node(intersect(to_dfa(keys), name_lang))
        if not is_nothing(keys) and not is_nothing(value):
            members.append(seq(quoted(keys), sc.ws, lit(":"), sc.ws, value))
    return alt(*members) if members else None


def _pattern_cases(sc: Any, patterns: dict[str, Any], names: list[str], where: str) -> list[tuple[Node, Node]]:
    """(names, value) for the names some pattern matches: one case when the patterns share a
    schema, else one per set of patterns that match together."""
    here = f"{where}/patternProperties"
    named = any(matching(patterns, n) for n in names)
    schemas = {_canonical(s) for s in patterns.values()}
    if len(schemas) == 1:
        pattern, schema = next(iter(patterns.items()))
        keys = alt(*[regex_to_node(p, json_char, f"{here}/{escape(p)}", search=True) for p in patterns])
        if named:  # a declared name is a member of its own
            keys = to_node(minus(to_dfa(keys), _names(names)))
        return [(keys, sc.node(schema, f"{here}/{escape(pattern)}"))]
    narrow = {p: _language(p, here, wide=False) for p in patterns}
    wide = {p: _language(p, here, wide=True) for p in patterns}
    declared = _names(names)
    out: list[tuple[Node, Node]] = []
    for group in _overlapping(list(patterns), wide):
        if len(group) > MAX_MIXED_PATTERNS:
            raise GrammarError(f"{here}: more than {MAX_MIXED_PATTERNS} patterns with different schemas whose names "
                               f"overlap are not supported")  # fmt: skip
        for size in range(1, len(group) + 1):
            for chosen in combinations(group, size):
                keys = _any_name()
                for p in group:  # the other groups' patterns match none of these names (wide languages disjoint)
                    keys = intersect(keys, narrow[p]) if p in chosen else minus(keys, wide[p])
                keys = minus(keys, declared)
                if keys.is_empty():
                    continue
                value = sc.node({"allOf": [patterns[p] for p in chosen]}, f"{here}/{escape(chosen[0])}")
                out.append((to_node(keys), value))
    return out


def _overlapping(patterns: list[str], wide: dict[str, Dfa]) -> list[list[str]]:
    """The patterns in groups whose (widened) name languages overlap, transitively: a name matched
    by patterns of one group is matched by none of another's, so each group's subsets are enough."""
    parent = list(range(len(patterns)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(patterns)):
        for j in range(i + 1, len(patterns)):
            if root(i) != root(j) and not intersect(wide[patterns[i]], wide[patterns[j]]).is_empty():
                parent[root(j)] = root(i)
    groups: dict[int, list[str]] = {}
    for i, p in enumerate(patterns):
        groups.setdefault(root(i), []).append(p)
    return list(groups.values())


def _unmatched_names(patterns: dict[str, Any], where: str) -> Dfa:
    """The names no pattern matches (outside each one's widened language). Where a pattern's
    counted repeat makes that difference too large (`^/[/.\\w-]{0,254}$`), its repeats of more
    than WIDEN_REPEATS_OVER are taken unbounded first: a larger language subtracted, so fewer extra
    names, each still matched by no pattern (a subset of the valid objects, never a wider one)."""
    other = _any_name()
    for pattern in patterns:
        try:
            other = minus(other, _language(pattern, where, wide=True))
        except GrammarError:
            node = regex_to_node(pattern, json_char, f"{where}/{escape(pattern)}", search=True, wide=True)
            other = minus(other, to_dfa(unbounded(node, WIDEN_REPEATS_OVER)))
    return other


def _language(pattern: str, where: str, wide: bool) -> Dfa:
    return to_dfa(regex_to_node(pattern, json_char, f"{where}/{escape(pattern)}", search=True, wide=wide))


def _any_name() -> Dfa:
    return to_dfa(Repeat(json_char(ALL_CHARS), 0, None))


def _names(names: list[str]) -> Dfa:
    """The declared names, in every canonical encoding."""
    return to_dfa(alt(*[canonical_text(n) for n in names]) if names else NOTHING)


def names_apart(names: list[str], patterns: dict[str, Any], other_names: list[str], other_patterns: dict[str, Any],
                where: str) -> bool:
    """True when no name is both one of `names` or matched by `patterns` and one of `other_names`
    or matched by `other_patterns` (each pattern by its widened language: a superset of what a
    validator matches); False also when the languages are too large to compare."""
    def language(declared: list[str], pats: dict[str, Any]) -> Dfa:
        return to_dfa(alt(*[canonical_text(n) for n in declared if isinstance(n, str)],
                          *[regex_to_node(p, json_char, f"{where}/{escape(p)}", search=True, wide=True) for p in pats]))

    try:
        return intersect(language(names, patterns), language(other_names, other_patterns)).is_empty()
    except GrammarError:
        return False
