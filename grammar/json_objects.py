"""JSON objects (ordered properties, required, additionalProperties) and arrays as grammar nodes."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from grammar.ir import EMPTY, NOTHING, GrammarError, Graph, Node, Repeat, alt, lit, opt, seq
from grammar.json_text import key_excluding

if TYPE_CHECKING:
    from grammar.json_schema import SchemaCompiler


def _count(schema: dict[str, Any], key: str, where: str) -> int | None:
    value = schema.get(key)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise GrammarError(f"{where}/{key}: must be a non-negative integer")
    return value


def object_node(sc: "SchemaCompiler", schema: dict[str, Any], where: str) -> Node:
    """`{` members `}` with declared properties in order, then additional ones if allowed."""
    props = schema.get("properties", {})
    if not isinstance(props, dict):
        raise GrammarError(f"{where}/properties: must be an object")
    required = schema.get("required", [])
    if not isinstance(required, list):
        raise GrammarError(f"{where}/required: must be an array")
    extra_schema = schema.get("additionalProperties", True)
    names = list(props)
    for name in required:
        if name not in props:
            if extra_schema is False:
                return NOTHING
            names.append(name)
    ws = sc.ws
    members: list[tuple[Node, bool]] = []
    for name in names:
        sub = props[name] if name in props else extra_schema
        value = sc.node(sub, f"{where}/properties/{_escape(name)}")
        member = seq(lit(json.dumps(name, ensure_ascii=False)), ws, lit(":"), ws, value)
        if value == NOTHING:
            if name in required:
                return NOTHING
            continue
        members.append((member, name in required))
    extra: Node | None = None
    if extra_schema is not False:
        value = sc.node(extra_schema, f"{where}/additionalProperties")
        if value != NOTHING:
            extra = seq(key_excluding(names, sc.char), ws, lit(":"), ws, value)
    _check_property_counts(schema, members, extra, where)
    return seq(lit("{"), ws, _members_graph(members, extra, seq(ws, lit(","), ws)), ws, lit("}"))


def _check_property_counts(schema: dict[str, Any], members: list[tuple[Node, bool]], extra: Node | None, where: str) -> None:
    lo, hi = _count(schema, "minProperties", where), _count(schema, "maxProperties", where)
    num_required = sum(1 for _, req in members if req)
    if lo is not None and lo > num_required:
        raise GrammarError(f"{where}/minProperties: only supported when implied by 'required'")
    if hi is not None and (extra is not None or hi < len(members)):
        raise GrammarError(f"{where}/maxProperties: only supported when implied by the properties")


def _members_graph(members: list[tuple[Node, bool]], extra: Node | None, comma: Node) -> Node:
    """States first_i / rest_i: at member i with nothing / something emitted so far; pre_i
    is shared by both so that each member's value is built once."""
    n = len(members)
    first = list(range(n + 1))
    rest = [n + 1 + i for i in range(n + 1)]
    pre = [2 * n + 2 + i for i in range(n + 1)]
    end = 3 * n + 3
    edges: list[tuple[int, int, Node | None]] = []
    for i, (member, req) in enumerate(members):
        edges += [(first[i], pre[i], None), (rest[i], pre[i], comma), (pre[i], rest[i + 1], member)]
        if not req:
            edges.append((first[i], first[i + 1], None))
            edges.append((rest[i], rest[i + 1], None))
    edges.append((first[n], end, None))
    edges.append((rest[n], end, None))
    if extra is not None:
        edges += [(first[n], pre[n], None), (rest[n], pre[n], comma), (pre[n], rest[n], extra)]
    return Graph(3 * n + 4, tuple(edges), (end,))


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def array_node(sc: "SchemaCompiler", schema: dict[str, Any], where: str) -> Node:
    """`[` elements `]`: prefix items by position, then `items`, within min/maxItems."""
    items = schema.get("items")
    prefix = schema.get("prefixItems")
    rest_where = f"{where}/items"
    if isinstance(items, list):  # draft 4-7 tuple form
        prefix, items, rest_where = items, schema.get("additionalItems", True), f"{where}/additionalItems"
    elif "additionalItems" in schema and prefix is None:
        prefix = []
    prefix = prefix or []
    lo = _count(schema, "minItems", where) or 0
    hi = _count(schema, "maxItems", where)
    if hi is not None and hi < lo:
        return NOTHING
    elements = [sc.node(s, f"{where}/prefixItems/{i}") for i, s in enumerate(prefix)]
    rest = sc.node(True if items is None else items, rest_where)
    comma = seq(sc.ws, lit(","), sc.ws)
    k = len(elements)
    # tail after max(k, lo) elements: more `rest` elements, each optional
    start = max(k, lo)
    if rest == NOTHING or (hi is not None and hi <= start):
        tail: Node = EMPTY
    else:
        tail = Repeat(seq(comma, rest), 0, None if hi is None else hi - start)
    body = tail
    for i in range(start - 1, -1, -1):
        element = elements[i] if i < k else rest
        if element == NOTHING or (hi is not None and i >= hi):
            body = EMPTY if i >= lo else NOTHING
            continue
        step = seq(element, body) if i == 0 else seq(comma, element, body)
        body = alt(EMPTY, step) if i >= lo else step
        if body == NOTHING:
            break
    if start == 0:
        if rest == NOTHING or hi == 0:
            body = EMPTY
        elif hi is None:  # rest built once: 0 -rest-> 1 -comma-> 2 -eps-> 0
            body = Graph(4, ((0, 3, None), (3, 1, rest), (1, 2, comma), (2, 3, None)), (0, 1))
        else:
            body = opt(seq(rest, Repeat(seq(comma, rest), 0, hi - 1)))
    if body == NOTHING:
        return NOTHING
    return seq(lit("["), sc.ws, body, sc.ws, lit("]"))
