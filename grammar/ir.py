"""The internal grammar form: regular-expression-like nodes over bytes plus named rules."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union


@dataclass(frozen=True, slots=True)
class Bytes:
    """One byte from a set given as inclusive (lo, hi) ranges."""

    ranges: tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class Seq:
    items: tuple["Node", ...]


@dataclass(frozen=True, slots=True)
class Alt:
    items: tuple["Node", ...]


@dataclass(frozen=True, slots=True)
class Repeat:
    """`item` repeated between `min` and `max` times (`max` None = unbounded)."""

    item: "Node"
    min: int
    max: int | None


@dataclass(frozen=True, slots=True)
class Ref:
    """A reference to a named rule of the enclosing `Grammar` (may be recursive)."""

    name: str


@dataclass(frozen=True, slots=True)
class Graph:
    """A small automaton whose edges are labelled by nodes (None = epsilon); state 0 starts."""

    num_states: int
    edges: tuple[tuple[int, int, "Node | None"], ...]
    finals: tuple[int, ...]


Node = Union[Bytes, Seq, Alt, Repeat, Ref, Graph]
EMPTY = Seq(())
NOTHING = Alt(())


@dataclass(slots=True)
class Grammar:
    """Named rules; `start` names the rule that the whole output must match. `likely`: texts a
    model is likely to write (a frontend's guess, grammar/frontends/json_likely.py), whose states
    the compiled grammar makes masks for first; they constrain nothing."""

    rules: dict[str, Node] = field(default_factory=dict)
    start: str = "start"
    likely: tuple[bytes, ...] = ()


def seq(*items: Node) -> Node:
    """Concatenation (flattened); NOTHING anywhere makes the whole sequence NOTHING."""
    flat: list[Node] = []
    for item in items:
        kind = type(item)  # the common classes by type (a dataclass's == is a Python call)
        if kind is Seq:
            flat.extend(item.items)
        elif kind is Alt:
            if item.items == ():  # item == NOTHING
                return NOTHING
            flat.append(item)
        elif kind is Bytes or kind is Repeat or kind is Ref or kind is Graph:
            flat.append(item)
        elif item == NOTHING:  # a subclass or another object: the general rule
            return NOTHING
        elif isinstance(item, Seq):
            flat.extend(item.items)
        else:
            flat.append(item)
    return flat[0] if len(flat) == 1 else Seq(tuple(flat))


def is_nothing(node: Node) -> bool:
    """`node == NOTHING`, without a dataclass comparison's Python call for the common classes."""
    kind = type(node)
    if kind is Alt:
        return node.items == ()
    return False if kind in _NOT_ALT else node == NOTHING


_NOT_ALT = (Bytes, Seq, Repeat, Ref, Graph)


def alt(*items: Node) -> Node:
    """Alternation (flattened, duplicates and NOTHING dropped)."""
    flat: dict[object, Node] = {}  # ordered, and duplicates found by hash (an enum may have 100,000 values)
    for item in items:
        for one in item.items if isinstance(item, Alt) else (item,):
            kind = type(one)  # _dedupe_key, inline
            if kind is Bytes or kind is Ref:
                key: object = one
            elif kind is Seq or kind is Alt:
                for i in one.items:
                    if type(i) is not Bytes and type(i) is not Ref:
                        key = ("id", id(one))
                        break
                else:
                    key = one
            elif kind is Repeat:
                key = one if type(one.item) in _LEAVES else ("id", id(one))
            else:
                key = _dedupe_key(one)
            flat.setdefault(key, one)
    return next(iter(flat.values())) if len(flat) == 1 else Alt(tuple(flat.values()))


_LEAVES = (Bytes, Ref)


def _dedupe_key(node: Node) -> object:
    """What `alt` finds duplicates by: a leaf, a literal (a sequence or alternation of leaves) or
    a repeat of a leaf by value; a larger node by identity (the same object twice). A frozen
    dataclass's hash walks its whole tree each time: hashing every value alternative of a
    schema (objects of objects) by value was a tenth of a compile. A larger duplicate left in
    only adds branches for the same language. (`alt` inlines this for the node classes.)"""
    kind = type(node)
    if kind in _LEAVES:
        return node
    if kind is Seq or kind is Alt:
        if all(type(i) in _LEAVES for i in node.items):
            return node
    elif kind is Repeat and type(node.item) in _LEAVES:
        return node
    return ("id", id(node))


def renewed(node: Node) -> Node:
    """A copy of `node` that `alt` treats as a node of its own, as if built anew: a new top node
    and, for an alternation, new items (alt dedupes larger nodes by identity); what lies below
    is shared. For the results of pure functions that cache nodes (grammar/frontends/json_numbers.py):
    callers get what they got before, the same automaton, without building it again."""
    if type(node) is Alt:
        return Alt(tuple([_renewed_one(i) for i in node.items]))
    return _renewed_one(node)


def _renewed_one(node: Node) -> Node:
    kind = type(node)
    if kind is Seq:
        return Seq(node.items)
    if kind is Alt:
        return Alt(node.items)
    if kind is Repeat:
        return Repeat(node.item, node.min, node.max)
    if kind is Graph:
        return Graph(node.num_states, node.edges, node.finals)
    return node  # a leaf: compared by value


def opt(item: Node) -> Node:
    return Repeat(item, 0, 1)


def star(item: Node) -> Node:
    return Repeat(item, 0, None)


def plus(item: Node) -> Node:
    return Repeat(item, 1, None)


def byte_set(chars: str | bytes) -> Bytes:
    """A byte class from the listed (ASCII) characters."""
    data = chars.encode() if isinstance(chars, str) else chars
    return Bytes(merge_ranges([(b, b) for b in data]))


def lit(text: str | bytes) -> Node:
    """The exact byte string (UTF-8 for `str`)."""
    if type(text) is str and len(text) == 1 and text < "\x80":
        return _SINGLE_BYTES[ord(text)]
    data = text.encode() if isinstance(text, str) else text
    if len(data) == 1:
        return _SINGLE_BYTES[data[0]]
    return Seq(tuple(map(_SINGLE_BYTES.__getitem__, data))) if data else EMPTY


def literals(texts: list[bytes]) -> Node:
    """Any one of the byte strings, as a trie (a Graph: shared prefixes built once, every
    leaf one shared final state), so an enum of 100,000 values is some 100,000 states, not a
    million. Few strings stay a plain alternation."""
    if len(texts) <= LITERALS_AS_ALT:
        return alt(*[lit(t) for t in texts])
    children: list[dict[int, int]] = [{}]
    final: set[int] = set()
    for text in texts:
        node = 0
        for b in text:
            nxt = children[node].get(b)
            if nxt is None:
                nxt = children[node][b] = len(children)
                children.append({})
            node = nxt
        final.add(node)
    number = {}  # inner nodes numbered in creation order (the root is 0); every leaf is `end`
    for i, kids in enumerate(children):
        if kids or i == 0:
            number[i] = len(number)
    end = len(number)
    edges = tuple((number[a], number.get(c, end), _SINGLE_BYTES[b])
                  for a, kids in enumerate(children) for b, c in kids.items())
    finals = tuple(sorted(number[f] for f in final if f in number)) + (end,)
    return Graph(end + 1, edges, finals)


LITERALS_AS_ALT = 16
_SINGLE_BYTES = tuple(Bytes(((b, b),)) for b in range(256))  # immutable: lit's nodes, built once


def merge_ranges(ranges: list[tuple[int, int]] | tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    """Sort and merge overlapping or adjacent inclusive ranges."""
    if len(ranges) == 1:  # (a pattern's literal character, most calls: nothing to sort or merge)
        ((lo, hi),) = ranges
        return ((lo, hi),)
    out: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return tuple((lo, hi) for lo, hi in out)


def subtract_ranges(base: tuple[tuple[int, int], ...], minus: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    """Ranges of `base` not covered by `minus` (both merged)."""
    out: list[tuple[int, int]] = []
    for lo, hi in base:
        cur = lo
        for mlo, mhi in minus:
            if mhi < cur or mlo > hi:
                continue
            if mlo > cur:
                out.append((cur, mlo - 1))
            cur = max(cur, mhi + 1)
        if cur <= hi:
            out.append((cur, hi))
    return tuple(out)


_SIZES: dict[int, tuple[Node, int]] = {}  # node_size's answers by node identity, the node kept (its id stays its own)
MAX_KEPT_SIZES = 1 << 17  # then forgotten all at once (the nodes of old compiles with them)


def node_size(node: Node, memo: dict[int, int] | None = None) -> int:
    """Rough count of NFA states that building `node` inline produces (refs count 1). Without
    `memo`, remembered per node for the process: IR nodes are immutable, and the shared fragments
    (the `@any` rule, strings' characters, numbers by bounds) were walked again by every compile's
    NFA builder and at every `shared` check of the front end. A `memo` (seeded, such as whitespace
    counted as one state) keeps the answers to one call."""
    if memo is None:
        if len(_SIZES) >= MAX_KEPT_SIZES:
            _SIZES.clear()
        return _kept_size(node)
    key = id(node)
    if key in memo:
        return memo[key]
    memo[key] = size = _size_of(node, node_size, memo)
    return size


def size_exceeds(node: Node, limit: int) -> bool:
    """`node_size(node) > limit`, having walked only about `limit` nodes (a size node_size kept
    counts at once): the front end's threshold checks on nodes that are often large, which a whole
    walk in Python made 10-18 % of a typical schema's front end (the NFA builder reads rules'
    sizes from its C pass instead)."""
    total = 0
    stack: list[tuple[Node, int]] = [(node, 1)]
    while stack:
        cur, times = stack.pop()
        hit = _SIZES.get(id(cur))
        if hit is not None and hit[0] is cur:
            total += times * hit[1]
        elif isinstance(cur, Bytes) or isinstance(cur, Ref):
            total += times
        elif isinstance(cur, (Seq, Alt)):
            total += times
            stack.extend([(i, times) for i in cur.items])
        elif isinstance(cur, Repeat):
            total += times
            stack.append((cur.item, times * (max(cur.min, 1) if cur.max is None else max(cur.max, 1))))
        else:
            total += times * cur.num_states
            stack.extend([(e, times) for _, _, e in cur.edges if e is not None])
        if total > limit:
            return True
    return False


def _kept_size(node: Node) -> int:
    hit = _SIZES.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    size = _size_of(node, _kept_size)
    _SIZES[id(node)] = (node, size)
    return size


def _size_of(node: Node, size: Any, *memo: dict[int, int]) -> int:
    """node_size of `node` from its children's, each `size(child, *memo)`."""
    if isinstance(node, Bytes) or isinstance(node, Ref):
        return 1
    if isinstance(node, (Seq, Alt)):
        return 1 + sum(size(i, *memo) for i in node.items)
    if isinstance(node, Repeat):
        copies = max(node.min, 1) if node.max is None else max(node.max, 1)
        return 1 + copies * size(node.item, *memo)
    return node.num_states + sum(size(e, *memo) for _, _, e in node.edges if e is not None)


def accepts_empty(node: Node, rules: dict[str, Node] | None = None) -> bool:
    """Whether `node` takes the empty string (a rule reference: by its rule in `rules`, else True,
    the answer that claims nothing)."""
    kind = type(node)
    if kind is Bytes:
        return False
    if kind is Seq:
        return all(accepts_empty(i, rules) for i in node.items)
    if kind is Alt:
        return any(accepts_empty(i, rules) for i in node.items)
    if kind is Repeat:
        return node.min == 0 or accepts_empty(node.item, rules)
    if kind is Ref:
        return True if rules is None or node.name not in rules else accepts_empty(rules[node.name], None)
    seen, todo = {0}, [0]  # a Graph: a state reached from 0 by edges that take the empty string
    while todo:
        state = todo.pop()
        if state in node.finals:
            return True
        for a, b, label in node.edges:
            if a == state and b not in seen and (label is None or accepts_empty(label, rules)):
                seen.add(b)
                todo.append(b)
    return False


def copy_size_py(node: Node, memo: dict[int, tuple[Node, int]], ref_size: int) -> int:
    """NFA states a copy of `node` may take: its node_size with each rule reference counted as
    `ref_size` (a rule the NFA builder may inline). `memo` keeps the sizes measured, by node identity
    (id -> (node, size): the node kept, its id stays its own), and may be seeded (free whitespace as
    one state). The Python reference of grammar/_ir.c's `copy_size` (the same answers)."""
    hit = memo.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    if isinstance(node, Bytes):
        size = 1
    elif isinstance(node, Ref):
        size = ref_size
    elif isinstance(node, Repeat):
        copies = max(node.min, 1) if node.max is None else max(node.max, 1)
        size = 1 + copies * copy_size_py(node.item, memo, ref_size)
    elif isinstance(node, Graph):
        size = node.num_states + sum(copy_size_py(e, memo, ref_size) for _, _, e in node.edges if e is not None)
    else:
        size = 1 + sum(copy_size_py(i, memo, ref_size) for i in node.items)
    memo[id(node)] = (node, size)
    return size


try:  # (at the end: the C module looks the node classes up here on its first call)
    from grammar._ir import copy_size
except ImportError:  # not built: the reference
    copy_size = copy_size_py
