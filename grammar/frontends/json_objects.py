"""JSON objects (ordered properties, required, additionalProperties, patternProperties) and arrays as grammar nodes."""

from __future__ import annotations

from typing import Any, Protocol

from grammar.errors import GrammarError
from grammar.frontends.json_closed import closes_object, closes_tuple
from grammar.frontends.json_merge import FORBID, ONE_OF_REQUIRED
from grammar.frontends.json_names import property_names
from grammar.frontends import json_order
from grammar.frontends.json_order import CopyBudget, any_order_graph, declared_order_graph, members_graph as _members_graph, required_first_order
from grammar.frontends.json_patterns import extra_members, matching, pattern_schemas
from grammar.frontends.json_presence import escape, presence_graph, presence_rule
from grammar.frontends.json_text import json_string
from grammar.frontends.json_unique import unique_array_node
from grammar.ir import EMPTY, NOTHING, Graph, Node, Repeat, alt, is_nothing, lit, node_size, opt, seq
from grammar.time_limit import check_time_limit

MAX_COUNTED_SIZE = 20_000  # NFA states the copies of counted members may take
COLON = lit(":")


class SchemaCompiler(Protocol):
    """What objects and arrays need of grammar/frontends/json_schema.py's SchemaCompiler."""

    ws: Node  # whitespace between tokens
    char: Node  # any string character
    strict: bool  # close objects and tuples (grammar/frontends/json_closed.py)
    property_order: str  # "declared" or "any" (grammar/frontends/json_order.py)
    copy_budget: CopyBudget  # what objects may still copy of their members (json_order.py)
    top: set[str]  # pointers of the document's top-level value (json_order.py HEADER_FIRST)

    def node(self, schema: Any, where: str) -> Node: ...


def _count(schema: dict[str, Any], key: str, where: str) -> int | None:
    value = schema.get(key)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise GrammarError(f"{where}/{key}: must be a non-negative integer")
    return value


def object_node(sc: SchemaCompiler, schema: dict[str, Any], where: str) -> Node:
    """`{` members `}` with declared properties in order (or in any order: json_order.py), then
    additional ones if allowed (by patternProperties and additionalProperties: json_patterns.py)."""
    props = schema.get("properties", {})
    if not isinstance(props, dict):
        raise GrammarError(f"{where}/properties: must be an object")
    required = schema.get("required", [])
    if not isinstance(required, list):
        raise GrammarError(f"{where}/required: must be an array")
    forbid = schema.get(FORBID, [])  # names a narrowed oneOf branch must not hold (json_one_of.py)
    name_lang, name_ok = property_names(sc, schema, where)
    if name_lang is not None:  # declared names propertyNames refuses are never written
        forbid = [*forbid, *[n for n in dict.fromkeys([*props, *required]) if isinstance(n, str) and not name_ok(n)]]
    if forbid:
        if any(name in forbid for name in required):
            return NOTHING
        props = {k: v for k, v in props.items() if k not in forbid}
    closed = closes_object(schema, sc.strict)  # strict mode: a required name is then declared too
    extra_schema = False if closed else schema.get("additionalProperties", True)
    patterns = pattern_schemas(schema, where)
    names = list(props)
    for name in required:
        if name not in props:
            if extra_schema is False and not closed and not matching(patterns, name):
                return NOTHING
            names.append(name)
    ws = sc.ws
    rule = presence_rule(schema, where)
    if rule and not closed:
        # A presence rule naming an undeclared property (`dependencies: {"shape": [...]}`, a oneOf
        # requiring `flow`): that name becomes an optional member after the declared ones, with
        # the schema an extra member of that name takes, and leaves the extra members; the rule
        # then sees it. Only its place is fixed (before the other extras): a subset of the valid
        # objects, never an invalid one. A name no extra member may take is never present.
        for name in sorted(rule.involved() - set(names) - set(forbid)):
            if (extra_schema is not False or matching(patterns, name)) and (name_lang is None or name_ok(name)):
                names.append(name)
    members: list[tuple[Node, bool]] = []
    member_names: list[str] = []
    for name in names:
        by_name = matching(patterns, name) if patterns else []  # a pattern's schema applies to a declared property too
        sub = props[name] if name in props else True if closed or by_name else extra_schema
        value = sc.node({"allOf": [sub, *by_name]} if by_name else sub, f"{where}/properties/{escape(name)}")
        if is_nothing(value):
            if name in required:
                return NOTHING
            continue
        key = lit(json_string(name) + ":") if ws is EMPTY else seq(lit(json_string(name)), ws, COLON, ws)
        members.append((seq(key, value), name in required))
        member_names.append(name)
    # a `$` header before the declared members of the document's top-level object (json_order.HEADER_FIRST)
    extra, header = extra_members(sc, patterns, extra_schema, names + [f for f in forbid if f not in names], where,
                                  name_lang, json_order.HEADER_FIRST and where in sc.top and sc.property_order == "declared")
    comma = seq(ws, lit(","), ws)
    lead = None if ws is EMPTY else ws  # the whitespace after `{`, on the first member's edge (see below)
    if rule:
        nonempty = _count(schema, "minProperties", where) == 1 and "maxProperties" not in schema
        for key in ("minProperties", "maxProperties"):
            if key in schema and not nonempty:
                raise GrammarError(f"{where}/{key}: not supported together with dependencies or a oneOf of required")
        body = presence_graph(members, member_names, extra, comma, rule, where, ws, lead, nonempty)
        # required first: `required`'s names, then those a oneOf of `required` lists (one of them is)
        first = [*required, *[n for group in schema.get(ONE_OF_REQUIRED, []) for names_ in group for n in names_]]
        order = required_first_order(sc, members, member_names, first, extra) if sc.property_order == "declared" else None
        if order is not None and not is_nothing(body):
            # the same rule over the members with the required ones first (json_order.py)
            body = alt(body, presence_graph([members[i] for i in order], [member_names[i] for i in order], extra, comma,
                                            rule, where, ws, lead, nonempty))
    elif not members and extra is not None and ("minProperties" in schema or "maxProperties" in schema):
        body = _counted(extra, comma, _count(schema, "minProperties", where) or 0, _count(schema, "maxProperties", where),
                        ws)
    else:
        lo, hi = _count(schema, "minProperties", where) or 0, _count(schema, "maxProperties", where)
        num_required = sum(1 for _, req in members if req)
        if lo == 1 and num_required == 0 and hi is None:
            # minProperties 1: the members graph without its empty object (one state says whether
            # a member was written), whatever the size of the members
            body = _members_graph(members, extra, comma, lead, nonempty=True)
        elif lo <= num_required and (hi is None or (extra is None and hi >= len(members))):
            # the counts follow from the properties
            if sc.property_order == "declared":
                undeclared = [i for i, name in enumerate(member_names) if name not in props and not closed]
                body = declared_order_graph(sc, members, member_names, required, extra, comma, lead,
                                            undeclared[0] if undeclared else None, header)
            else:
                body = (any_order_graph(members, extra, comma, sc.copy_budget, lead)
                        if len(members) > 1 else None) or _members_graph(members, extra, comma, lead)
        else:
            body = _counted_members_graph(members, extra, comma, lo, hi, where, ws, lead)
    # The whitespace after `{` leads the first member (inside the body), so that an empty object is
    # `{ ws }`, not `{ ws ws }`: two free whitespace runs one after the other made a DFA state per
    # pair of counts (49 states for one gap of up to 24 bytes, at every object and array that may be
    # empty), each built cold by a mask fill (issue 39). The same language but for an empty object of
    # 25-48 whitespace bytes, past the bound of one gap.
    return seq(lit("{"), body, ws, lit("}")) if not is_nothing(body) else NOTHING


def _counted(member: Node, comma: Node, lo: int, hi: int | None, lead: Node = EMPTY) -> Node:
    """lo..hi comma-separated members (a dictionary-like object under min/maxProperties), the
    first after `lead`."""
    if hi is not None and hi < lo:
        return NOTHING
    if hi == 0:
        return EMPTY
    more = Repeat(seq(comma, member), max(lo - 1, 0), None if hi is None else hi - 1)
    some = seq(lead, member, more)
    return some if lo > 0 else alt(EMPTY, some)


def _counted_members_graph(members: list[tuple[Node, bool]], extra: Node | None, comma: Node, lo: int,
                           hi: int | None, where: str, ws: Node, lead: Node | None = None) -> Node:
    """`_members_graph` that also counts the members emitted, for min/maxProperties beside
    declared properties: state (i, c) is at member i with c emitted (saturating at `lo` when
    there is no maximum). Each member is built once per count, so the counts are bounded."""
    if hi is not None and hi < lo:
        return NOTHING
    top = lo if hi is None else hi
    sizes = {id(ws): 1}  # free whitespace counts as one state: the limit is the same in both modes
    size = sum(node_size(m, sizes) for m in [m for m, _ in members] + ([extra] if extra is not None else []))
    if (top + 1) * size > MAX_COUNTED_SIZE:
        raise GrammarError(f"{where}/{'minProperties' if hi is None else 'maxProperties'}: too many properties "
                           f"to count ({top}) for these property schemas")  # fmt: skip
    n, width = len(members), top + 1

    def at(i: int, c: int) -> int:
        return i * width + c

    def pre(i: int, c: int) -> int:
        return (n + 1) * width + i * width + c

    end = 2 * (n + 1) * width
    edges: list[tuple[int, int, Node | None]] = []
    for i in range(n + 1):
        member, req = members[i] if i < n else (extra, False)
        for c in range(width):
            if member is not None and (hi is None or c < hi):
                nxt = min(c + 1, top)
                edges.append((at(i, c), pre(i, c), comma if c else lead))
                edges.append((pre(i, c), at(i + 1, nxt) if i < n else at(n, nxt), member))
            if i < n and not req:
                edges.append((at(i, c), at(i + 1, c), None))
            if i == n and c >= lo:
                edges.append((at(n, c), end, None))
    return Graph(end + 1, tuple(edges), (end,))




def array_node(sc: SchemaCompiler, schema: dict[str, Any], where: str) -> Node:
    """`[` elements `]`: prefix items by position, then `items`, within min/maxItems."""
    items = schema.get("items")
    prefix = schema.get("prefixItems")
    rest_where = f"{where}/items"
    closed = closes_tuple(schema, sc.strict)
    if isinstance(items, list):  # draft 4-7 tuple form
        prefix, items, rest_where = items, False if closed else schema.get("additionalItems", True), f"{where}/additionalItems"
    elif "additionalItems" in schema and prefix is None:
        prefix = []
    elif closed:
        items = False
    prefix = prefix or []
    lo = _count(schema, "minItems", where) or 0
    hi = _count(schema, "maxItems", where)
    if hi is not None and hi < lo:
        return NOTHING
    if schema.get("uniqueItems") is True and (hi is None or hi > 1):
        return unique_array_node(sc, schema, where, lo, hi)  # raises unless the items are a few values
    elements = [sc.node(s, f"{where}/prefixItems/{i}") for i, s in enumerate(prefix)]
    rest = sc.node(True if items is None else items, rest_where)
    comma = seq(sc.ws, lit(","), sc.ws)
    k = len(elements)
    # tail after max(k, lo) elements: more `rest` elements, each optional
    start = max(k, lo)
    if is_nothing(rest) or (hi is not None and hi <= start):
        tail: Node = EMPTY
    else:
        tail = Repeat(seq(comma, rest), 0, None if hi is None else hi - start)
    body = tail
    if lo > k:  # the required `rest` elements after the prefix, as one counted repeat (minItems may be huge)
        if is_nothing(rest):
            return NOTHING
        n = lo - k - (k == 0)
        counted = Repeat(seq(comma, rest), n, n) if n else EMPTY
        body = seq(counted, tail) if k else seq(sc.ws, rest, counted, tail)
    for i in range(k - 1, -1, -1):
        check_time_limit()
        element = elements[i]
        if is_nothing(element) or (hi is not None and i >= hi):
            body = EMPTY if i >= lo else NOTHING
            continue
        step = seq(sc.ws, element, body) if i == 0 else seq(comma, element, body)
        body = alt(EMPTY, step) if i >= lo else step
        if is_nothing(body):
            break
    if start == 0:
        if is_nothing(rest) or hi == 0:
            body = EMPTY
        elif hi is None:  # rest built once: 0 -ws-> 3 -rest-> 1 -comma-> 2 -eps-> 3
            body = Graph(4, ((0, 3, None if sc.ws is EMPTY else sc.ws), (3, 1, rest), (1, 2, comma), (2, 3, None)), (0, 1))
        else:
            body = opt(seq(sc.ws, rest, Repeat(seq(comma, rest), 0, hi - 1)))
    if is_nothing(body):
        return NOTHING
    return seq(lit("["), body, sc.ws, lit("]"))  # the whitespace after `[` leads the first element, as in objects
