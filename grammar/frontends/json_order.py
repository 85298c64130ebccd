"""The property-order policy of JSON objects: declared order, or any order (a state per set of members written).

`declared` (the default; OpenAI's structured outputs, xgrammar and llguidance) emits, and so
accepts, an object's declared properties in the order the schema lists them. `any` accepts
them in every order: the members graph then has a state per set of declared members written
so far (each member at most once, the closing brace only once every required one is in),
extra members (additionalProperties, patternProperties) between any two. That graph holds a
copy of a member for each set it can follow, so it is built only while the copies stay small
(MAX_ANY_ORDER_MEMBERS, MAX_ANY_ORDER_SIZE); a larger object, and one under property
dependencies, a oneOf of `required` or min/maxProperties, keeps declared order: a subset of
its valid documents, never a wider language.
"""

from __future__ import annotations

from grammar.errors import GrammarError
from grammar.ir import Bytes, Graph, Node, Ref, Repeat

PROPERTY_ORDERS = ("declared", "any")
MAX_ANY_ORDER_MEMBERS = 10  # declared properties: 2**n sets
MAX_ANY_ORDER_SIZE = 20_000  # NFA states the copies of members may take, in all of one schema's objects
REF_COPY_SIZE = 200  # a rule the NFA builder may inline at each use (automaton/nfa.py COMPACT_RULE_SIZE)


def check_property_order(order: str) -> str:
    if order not in PROPERTY_ORDERS:
        raise GrammarError(f"property order must be one of {', '.join(PROPERTY_ORDERS)}, not {order!r}")
    return order


def any_order_graph(members: list[tuple[Node, bool]], extra: Node | None, comma: Node, ws: Node,
                    budget: list[int], lead: Node | None = None) -> Node | None:
    """Members in any order, each at most once, every required one present; None when its copies
    of members would take more than what is left of `budget` (the schema's, one int, spent here;
    the caller keeps declared order). State s < 2**n: the set s written (s == 0: nothing yet);
    state 2**n: no declared member yet but an extra one; then one `pre` state per state (after
    its comma, or after `lead` from the empty set), and the end."""
    n = len(members)
    if n > MAX_ANY_ORDER_MEMBERS:
        return None
    sizes = {id(ws): 1}
    member_sizes = [_copy_size(m, sizes) for m, _ in members]
    extra_size = _copy_size(extra, sizes) if extra is not None else 0
    size = (2 ** max(n - 1, 0)) * sum(member_sizes) + (2**n) * extra_size
    if size > budget[0]:
        return None
    budget[0] -= size
    full, some_extra = 2**n, 2**n
    pre_base, end = full + 1, 2 * (full + 1)
    required = sum(1 << i for i, (_, req) in enumerate(members) if req)
    edges: list[tuple[int, int, Node | None]] = []
    for state in range(full + 1):
        written = 0 if state == some_extra else state
        pre = pre_base + state
        edges.append((state, pre, comma if state != 0 else lead))
        for i, (member, _) in enumerate(members):
            if not written >> i & 1:
                edges.append((pre, written | 1 << i, member))
        if extra is not None:
            edges.append((pre, some_extra if written == 0 else written, extra))
        if written & required == required:
            edges.append((state, end, None))
    return Graph(end + 1, tuple(edges), (end,))


def _copy_size(node: Node, memo: dict[int, int]) -> int:
    """NFA states a copy of `node` may take, a rule reference counted as a rule the builder inlines."""
    key = id(node)
    if key in memo:
        return memo[key]
    if isinstance(node, Bytes):
        size = 1
    elif isinstance(node, Ref):
        size = REF_COPY_SIZE
    elif isinstance(node, Repeat):
        copies = max(node.min, 1) if node.max is None else max(node.max, 1)
        size = 1 + copies * _copy_size(node.item, memo)
    elif isinstance(node, Graph):
        size = node.num_states + sum(_copy_size(e, memo) for _, _, e in node.edges if e is not None)
    else:
        size = 1 + sum(_copy_size(i, memo) for i in node.items)
    memo[key] = size
    return size
