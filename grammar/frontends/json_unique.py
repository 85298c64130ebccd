"""`uniqueItems` where it is a regular language: arrays whose items are one of a few values.

An array of items drawn from k values (an `enum` or `const`, `boolean`, `null`, or an `anyOf` of
such), each at most once, is a graph with a state per set of values written so far (2**k sets, as
the any-order objects of json_order.py): from a set, each value not in it leads to the set with
it; min/maxItems are the set's size. Values equal as JSON Schema compares them (`1` and `1.0`) are
one value, written in any of its texts. Built while its copies of the values stay small
(MAX_UNIQUE_VALUES, MAX_UNIQUE_SIZE); any other `uniqueItems` array (strings, numbers, objects:
not a regular language over unbounded items) stays a GrammarError naming the keyword, which the
lenient mode drops and checks afterwards (json_lenient.py).
"""

from __future__ import annotations

import json
from typing import Any

from grammar.errors import GrammarError
from grammar.frontends.json_merge import ANNOTATIONS, merge_all
from grammar.frontends.json_text import literal_texts
from grammar.ir import NOTHING, Graph, Node, alt, lit, seq

MAX_UNIQUE_VALUES = 12  # values of the items: 2**k sets
MAX_UNIQUE_SIZE = 20_000  # bytes of value text the graph's edges may hold in all


def unique_array_node(sc: Any, schema: dict[str, Any], where: str, lo: int, hi: int | None) -> Node:
    """`[` distinct values `]` for an array schema with `uniqueItems` and more than one item
    allowed; GrammarError when its items are not a few values."""
    refused = GrammarError(f"{where}/uniqueItems: keyword 'uniqueItems' is not supported beside items that are not "
                           f"a few const/enum/boolean/null values")  # fmt: skip
    items = schema.get("items")
    if not isinstance(items, dict) or "prefixItems" in schema or "additionalItems" in schema:
        raise refused
    groups = _finite_values(sc, items, f"{where}/items", 0)
    if groups is None or len(groups) > MAX_UNIQUE_VALUES:
        raise refused
    k = len(groups)
    top = k if hi is None else min(hi, k)
    if lo > top:
        return NOTHING
    texts = [[lit(t) for t in group] for group in groups]
    size = 2 ** max(k - 1, 0) * sum(len(t) + 1 for group in groups for t in group)
    if size > MAX_UNIQUE_SIZE:
        raise refused
    ws = sc.ws
    comma = seq(ws, lit(","), ws)
    values = [alt(*group) for group in texts]
    edges: list[tuple[int, int, Node | None]] = []
    finals = []
    for written in range(2**k):
        count = bin(written).count("1")
        if count > top:
            continue
        if lo <= count:
            finals.append(written)
        if count == top:
            continue
        sep = comma if written else ws
        for i in range(k):
            if not written >> i & 1:
                edges.append((written, written | 1 << i, seq(sep, values[i])))
    body = Graph(2**k, tuple(edges), tuple(finals))
    return seq(lit("["), body, ws, lit("]"))


def _finite_values(sc: Any, items: Any, where: str, depth: int) -> list[list[bytes]] | None:
    """The item values as groups of texts, one group per value (values equal as JSON Schema
    compares them share a group), or None when the items are not a finite set of values."""
    if not isinstance(items, dict) or depth > 4:
        return None
    if "$ref" in items or "allOf" in items:
        items = merge_all(sc.root, items, where)
        if items is False:
            return []
        if not isinstance(items, dict):
            return None
    keys = items.keys() - ANNOTATIONS
    if "enum" in items or "const" in items:
        values = [items["const"]] if "const" in items else items["enum"]
        if not isinstance(values, list):
            return None
        rest = {k: v for k, v in items.items() if k not in ("enum", "const")}
        checker = sc.value_checker(rest) if rest.keys() - ANNOTATIONS else None
        return _grouped([v for v in values if checker is None or _valid(checker, v)])
    if keys == {"anyOf"} and isinstance(items["anyOf"], list):
        out: list[Any] = []
        for i, branch in enumerate(items["anyOf"]):
            part = _finite_values(sc, branch, f"{where}/anyOf/{i}", depth + 1)
            if part is None:
                return None
            out += part
        return _merge_groups(out)
    if keys == {"type"}:
        types = [items["type"]] if isinstance(items["type"], str) else items["type"]
        if isinstance(types, list) and types and set(types) <= {"boolean", "null"}:
            return _grouped([v for t in types for v in ((True, False) if t == "boolean" else (None,))])
    return None


def _valid(checker: Any, value: Any) -> bool:
    try:
        return bool(checker.is_valid(value))
    except Exception:  # a value the validator cannot judge: not written
        return False


def _key(value: Any) -> str:
    """Equal keys for values JSON Schema calls equal: numbers by value (1 == 1.0), booleans apart
    from numbers, objects whatever their member order."""
    def norm(v: Any) -> Any:
        if isinstance(v, bool) or v is None or isinstance(v, str):
            return v
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, list):
            return [norm(x) for x in v]
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        return v

    return json.dumps(norm(value), sort_keys=True)


def _grouped(values: list[Any]) -> list[list[bytes]]:
    groups: dict[str, list[bytes]] = {}
    for v in values:
        texts = groups.setdefault(_key(v), [])
        texts += [t for t in literal_texts(v) if t not in texts]
    return list(groups.values())


def _merge_groups(groups: list[list[bytes]]) -> list[list[bytes]]:
    """Groups sharing a text are one value (the same value listed by two anyOf branches)."""
    out: list[list[bytes]] = []
    for group in groups:
        for mine in out:
            if set(mine) & set(group):
                mine += [t for t in group if t not in mine]
                break
        else:
            out.append(list(group))
    return out
