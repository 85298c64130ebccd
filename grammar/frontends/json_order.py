"""The property-order policy of JSON objects: declared order (widened where it is cheap), or any order.

`declared` (the default) emits, and so accepts, an object's declared properties in the order the
schema lists them, as OpenAI's structured outputs, xgrammar and llguidance do; since issue 39
(measured: docs/grammar.md "Property order") it also takes an object with its required members
first, in the order `required` lists them (then the names a oneOf of `required` lists), then the
optional ones in declared order (`declared_order_graph`); extra members around the required names
no property declares; up to HEADER_MEMBERS extra members whose names start with `$` before the
first declared member of the document's top-level object (HEADER_FIRST: a "$schema" header, as
configuration files write it); objects of at most SMALL_ANY_ORDER members in any order is there too,
off (0) by measurement: 1-2 more of 1,000 dev instances for 1.5x the compile p50. `any` accepts every
order: the members graph then has a state per set of declared members written so far (each
member at most once, the closing brace only once every required one is in), extra members
(additionalProperties, patternProperties) between any two. That graph holds a copy of a member
for each set it can follow, so it is built only while the copies stay small
(MAX_ANY_ORDER_MEMBERS, MAX_ANY_ORDER_SIZE, a budget both policies spend); a larger object, and
one under property dependencies, a oneOf of `required` or min/maxProperties, keeps declared
order (`declared` with required-first beside dependencies too): a subset of its valid
documents, never a wider language.
"""
from __future__ import annotations

from grammar.errors import GrammarError
from grammar.ir import Graph, Node, alt, copy_size

PROPERTY_ORDERS = ("declared", "any")
MAX_ANY_ORDER_MEMBERS = 10  # declared properties: 2**n sets
MAX_ANY_ORDER_SIZE = 20_000  # NFA states the copies of members may take, in all of one schema's objects
# The default ("declared") policy, measured in issue 39 (docs/grammar.md "Property order"):
SMALL_ANY_ORDER = 0  # objects of 2..this many members in any order (within MAX_ANY_ORDER_SIZE); 0: none (measured)
REQUIRED_FIRST = True  # larger ones also with their required members first, in `required`'s order
HEADER_FIRST = True  # the document's top-level object: a header of extra members named `$...` before its first
# declared one ("$schema"); measured (grammar/README.md, issue 39): +2 of 400 on seed 11, +2 of the 1,000. Any
# extra name there instead (the fifth pass) gained the same for a mask p50 up to 2x: every document's first
# key was then a union with all other names, while a `$` header leaves the first key's trie at its first byte.
HEADER_MEMBERS = 1  # at most this many (unbounded, a sampler that writes extra members may never reach the required ones)
REF_COPY_SIZE = 200  # a rule the NFA builder may inline at each use (automaton/nfa.py COMPACT_RULE_SIZE)


def check_property_order(order: str) -> str:
    if order not in PROPERTY_ORDERS:
        raise GrammarError(f"property order must be one of {', '.join(PROPERTY_ORDERS)}, not {order!r}")
    return order


class CopyBudget:
    """What one schema's objects may still copy of their members (MAX_ANY_ORDER_SIZE NFA states in
    all), and the copy sizes of the nodes measured so far, kept for the compile: an object's members
    hold the objects nested in them, which were measured already (measured anew by every object
    around them, the sizes took 11-17 % of a typical schema's front end)."""

    def __init__(self, ws: Node, left: int = MAX_ANY_ORDER_SIZE) -> None:
        self.left = left
        self._sizes: dict[int, tuple[Node, int]] = {id(ws): (ws, 1)}  # free whitespace counts as one state

    def size(self, node: Node) -> int:
        """NFA states a copy of `node` may take, a rule reference counted as a rule the builder
        inlines (grammar/_ir.c: in Python, a tenth of a typical schema's front end)."""
        return copy_size(node, self._sizes, REF_COPY_SIZE)

    def spend(self, size: int) -> bool:
        """Take `size` from what is left; False (nothing taken) when it is more than that."""
        if size > self.left:
            return False
        self.left -= size
        return True


def any_order_graph(members: list[tuple[Node, bool]], extra: Node | None, comma: Node, budget: CopyBudget,
                    lead: Node | None = None) -> Node | None:
    """Members in any order, each at most once, every required one present; None when its copies
    of members would take more than what is left of `budget` (the schema's, spent here; the caller
    keeps declared order). State s < 2**n: the set s written (s == 0: nothing yet);
    state 2**n: no declared member yet but an extra one; then one `pre` state per state (after
    its comma, or after `lead` from the empty set), and the end."""
    n = len(members)
    if n > MAX_ANY_ORDER_MEMBERS:
        return None
    member_sizes = [budget.size(m) for m, _ in members]
    extra_size = budget.size(extra) if extra is not None else 0
    if not budget.spend((2 ** max(n - 1, 0)) * sum(member_sizes) + (2**n) * extra_size):
        return None
    full, some_extra = 2**n, 2**n
    pre_base, end = full + 1, 2 * (full + 1)
    required = sum(1 << i for i, (_, req) in enumerate(members) if req)
    edges: list[tuple[int, int, Node | None]] = []
    for state in range(full + 1):
        written = 0 if state == some_extra else state
        pre = pre_base + state
        if extra is not None or written != full - 1:  # (every member written, no extras: nothing can follow a comma)
            edges.append((state, pre, comma if state != 0 else lead))
        for i, (member, _) in enumerate(members):
            if not written >> i & 1:
                edges.append((pre, written | 1 << i, member))
        if extra is not None:
            edges.append((pre, some_extra if written == 0 else written, extra))
        if written & required == required:
            edges.append((state, end, None))
    return Graph(end + 1, tuple(edges), (end,))


def declared_order_graph(sc, members: list[tuple[Node, bool]], names: list[str], required: list, extra: Node | None,
                         comma: Node, lead: Node | None, extra_from: int | None = None,
                         header: Node | None = None) -> Node:
    """The default policy's members: an object of 2..SMALL_ANY_ORDER members in any order (within
    the schema's copy budget; none by default); others in declared order, or with the required members first
    in the order `required` lists them and then the optional ones in declared order (a second copy
    of the members, within the budget too); extra members (additionalProperties,
    patternProperties) after the declared ones, and `header` (the document's top-level object: a
    `$` member, json_patterns.extra_members(header=True)) before the first. Each object it takes is one `any`
    takes: a subset of the valid objects. (Extra members before every declared one were measured
    and dropped: 2 of 1,000 dev instances more, mask p99 6x, the key tries of extra names at every
    member.)"""
    n = len(members)
    if 1 < n <= SMALL_ANY_ORDER:
        graph = any_order_graph(members, extra, comma, sc.copy_budget, lead)
        if graph is not None:
            return sc.shared(graph)  # (an enclosing presence graph counts it once, as a $ref)
    shared_extra = sc.shared(extra) if extra is not None and extra_from is not None and extra_from < n else extra
    declared = members_graph(members, shared_extra, comma, lead, extra_from=extra_from, header=header)
    order = required_first_order(sc, members, names, required, extra)
    if order is None:
        return declared
    return sc.shared(alt(declared, members_graph([members[i] for i in order], extra, comma, lead, header=header)))


def required_first_order(sc, members: list[tuple[Node, bool]], names: list[str], required: list,
                         extra: Node | None) -> list[int] | None:
    """Member indexes with the required ones first, in the order `required` lists them, then the
    others in declared order; None when that is the declared order, or when a second copy of the
    members would pass what is left of the schema's copy budget (spent here)."""
    if not REQUIRED_FIRST:
        return None
    at = {name: i for i, name in enumerate(names)}
    first = [at[name] for name in dict.fromkeys(r for r in required if isinstance(r, str)) if name in at]
    order = first + [i for i in range(len(names)) if i not in set(first)]
    if order == list(range(len(names))):
        return None
    budget = sc.copy_budget
    if not budget.spend(sum(budget.size(m) for m, _ in members) + (budget.size(extra) if extra is not None else 0)):
        return None
    return order


def members_graph(members: list[tuple[Node, bool]], extra: Node | None, comma: Node, lead: Node | None = None,
                  nonempty: bool = False, extra_from: int | None = None, header: Node | None = None) -> Node:
    """Members in the order given. States first_i / rest_i: at member i with nothing / something
    emitted so far; pre_i is shared by both so that each member's value is built once. The first
    member comes after `lead` (the whitespace after `{`), the others after a comma; extra members
    after the last one, and also before each member from `extra_from` on (the required names no
    property declares, which json_objects.py puts last: they and the extra members in any mix, the
    required ones in their order), and up to HEADER_MEMBERS `header` members (extra members of a
    narrower name language: json_patterns.extra_members(header=True)) before the first member.
    `nonempty`: no empty object (minProperties 1)."""
    n = len(members)
    first = list(range(n + 1))
    rest = [n + 1 + i for i in range(n + 1)]
    pre = [2 * n + 2 + i for i in range(n + 1)]
    end = 3 * n + 3
    edges: list[tuple[int, int, Node | None]] = []
    for i, (member, req) in enumerate(members):
        edges += [(first[i], pre[i], lead), (rest[i], pre[i], comma), (pre[i], rest[i + 1], member)]
        if not req:
            edges.append((first[i], first[i + 1], None))
            edges.append((rest[i], rest[i + 1], None))
    if not nonempty:
        edges.append((first[n], end, None))
    edges.append((rest[n], end, None))
    if extra is not None:
        edges += [(first[n], pre[n], lead), (rest[n], pre[n], comma), (pre[n], rest[n], extra)]
    num_states = 3 * n + 4
    if extra is not None and extra_from is not None:
        for i in range(extra_from, n):  # an extra member before member i: its own pre state
            edges += [(first[i], num_states, lead), (rest[i], num_states, comma), (num_states, rest[i], extra)]
            num_states += 1
    if header is not None and n:  # 1..HEADER_MEMBERS header members, then the members
        before, sep = first[0], lead
        for _ in range(HEADER_MEMBERS):
            edges += [(before, num_states, sep), (num_states, num_states + 1, header), (num_states + 1, rest[0], None)]
            before, sep = num_states + 1, comma
            num_states += 2
    return Graph(num_states, tuple(edges), (end,))
