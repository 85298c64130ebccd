"""Regular byte languages as small DFAs: from a grammar node without rule references, their intersection and
difference, and back to a node.

For keyword combinations one regular expression cannot state: a string `pattern` with a
`minLength`/`maxLength` or a `format` (the intersection of their languages), and the property
names that no `patternProperties` pattern matches (a difference). The languages are over the
bytes of JSON string content in its canonical encodings (grammar/frontends/json_text.py
`json_char`: raw UTF-8, escapes only where JSON needs them, and `\\/`), so the same characters
are the same bytes on both sides. Built in Python at compile time; bounded by MAX_STATES.
"""

from __future__ import annotations

from dataclasses import dataclass

from grammar.errors import GrammarError
from grammar.ir import NOTHING, Alt, Bytes, Graph, Node, Repeat, Seq, merge_ranges
from grammar.time_limit import check_time_limit

MAX_NFA_STATES = 30_000
MAX_STATES = 5_000  # DFA states of one determinized language (before minimizing)
MAX_PRODUCT_STATES = 20_000  # states of an intersection or difference (each costs a row of classes)


@dataclass(slots=True)
class Dfa:
    """State 0 starts; `trans[s][c]` is the next state on a byte of class c (-1: none), where
    `classes[b]` is the class of byte b."""

    classes: bytes  # [256] byte -> class
    trans: list[list[int]]
    finals: list[bool]

    @property
    def num_classes(self) -> int:
        return max(self.classes) + 1

    def is_empty(self) -> bool:
        return not any(self.finals[s] for s in self._live())

    def _live(self) -> set[int]:
        seen, todo = {0}, [0]
        while todo:
            for t in self.trans[todo.pop()]:
                if t >= 0 and t not in seen:
                    seen.add(t)
                    todo.append(t)
        return seen

    def accepts(self, data: bytes) -> bool:
        s = 0
        for b in data:
            s = self.trans[s][self.classes[b]]
            if s < 0:
                return False
        return self.finals[s]


class _Nfa:
    """A Thompson NFA of a node: byte edges and epsilon edges per state."""

    def __init__(self) -> None:
        self.edges: list[list[tuple[int, int, int]]] = []
        self.eps: list[list[int]] = []

    def state(self) -> int:
        self.edges.append([])
        self.eps.append([])
        if len(self.eps) > MAX_NFA_STATES:
            raise GrammarError("a combination of string constraints is too large to intersect")
        if len(self.eps) & 4095 == 0:
            check_time_limit()
        return len(self.eps) - 1

    def emit(self, node: Node, s: int, t: int) -> None:
        if isinstance(node, Bytes):
            self.edges[s].extend((lo, hi, t) for lo, hi in node.ranges)
        elif isinstance(node, Seq):
            cur = s
            for i, item in enumerate(node.items):
                nxt = t if i == len(node.items) - 1 else self.state()
                self.emit(item, cur, nxt)
                cur = nxt
            if not node.items:
                self.eps[s].append(t)
        elif isinstance(node, Alt):
            for item in node.items:
                self.emit(item, s, t)
        elif isinstance(node, Repeat):
            self._repeat(node, s, t)
        elif isinstance(node, Graph):
            states = [self.state() for _ in range(node.num_states)]
            self.eps[s].append(states[0])
            for a, b, label in node.edges:
                if label is None:
                    self.eps[states[a]].append(states[b])
                else:
                    self.emit(label, states[a], states[b])
            for f in node.finals:
                self.eps[states[f]].append(t)
        else:
            raise GrammarError("a rule reference inside a string constraint is not supported")

    def _repeat(self, node: Repeat, s: int, t: int) -> None:
        cur = s
        for _ in range(node.min):
            nxt = self.state()
            self.emit(node.item, cur, nxt)
            cur = nxt
        if node.max is None:
            loop = self.state()
            self.eps[cur].append(loop)
            self.emit(node.item, loop, loop)
            self.eps[loop].append(t)
            return
        for _ in range(node.max - node.min):
            self.eps[cur].append(t)
            nxt = self.state()
            self.emit(node.item, cur, nxt)
            cur = nxt
        self.eps[cur].append(t)


def _classes(bounds: set[int]) -> bytes:
    """The byte partition that cuts at each of `bounds` (a class starts at each)."""
    out = bytearray(256)
    c = -1
    for b in range(256):
        if b in bounds or b == 0:
            c += 1
        out[b] = c
    return bytes(out)


def to_dfa(node: Node) -> Dfa:
    """The DFA of a node made of bytes, sequences, alternatives, repeats and graphs."""
    nfa = _Nfa()
    start, end = nfa.state(), nfa.state()
    nfa.emit(node, start, end)
    bounds = {0}
    for edges in nfa.edges:
        for lo, hi, _ in edges:
            bounds.add(lo)
            if hi < 255:
                bounds.add(hi + 1)
    classes = _classes(bounds)
    firsts = sorted(bounds)  # the first byte of each class
    closure: dict[frozenset[int], frozenset[int]] = {}  # target set -> its epsilon closure

    def close(states: set[int] | list[int]) -> frozenset[int]:
        out: set[int] = set()
        todo = list(states)
        while todo:
            x = todo.pop()
            if x not in out:
                out.add(x)
                todo.extend(nfa.eps[x])
        return frozenset(out)

    first = close([start])
    index = {first: 0}
    sets, trans, finals = [first], [], []
    while len(trans) < len(sets):
        cur = sets[len(trans)]
        row = [-1] * len(firsts)
        moves: dict[int, set[int]] = {}
        for x in cur:
            for lo, hi, tgt in nfa.edges[x]:
                for c in range(classes[lo], classes[hi] + 1):
                    moves.setdefault(c, set()).add(tgt)
        for c, targets in moves.items():
            key = frozenset(targets)
            nxt = closure.get(key)
            if nxt is None:
                nxt = closure[key] = close(targets)
            d = index.get(nxt)
            if d is None:
                d = index[nxt] = len(sets)
                sets.append(nxt)
                if len(sets) > MAX_STATES:
                    raise GrammarError("a combination of string constraints is too large to intersect")
            row[c] = d
        trans.append(row)
        finals.append(end in cur)
        if len(trans) & 1023 == 0:
            check_time_limit()
    return minimize(Dfa(classes, trans, finals))


def counted(char: Dfa, lo: int, hi: int | None) -> Dfa:
    """The strings of `lo` to `hi` (None: no bound) units of a prefix-free language (`char`: one
    character in its encodings), built directly: state (units done, state within the unit),
    the units done saturating at `lo` when there is no bound."""
    if any(char.finals[s] and any(t >= 0 for t in row) for s, row in enumerate(char.trans)):
        raise GrammarError("counting needs a prefix-free unit")
    top = lo if hi is None else hi
    ids: dict[tuple[int, int], int] = {(0, 0): 0}
    order = [(0, 0)]
    trans: list[list[int]] = []
    while len(trans) < len(order):
        i, c = order[len(trans)]
        row = []
        for t in char.trans[c]:
            if t < 0 or (hi is not None and i >= hi):
                row.append(-1)
                continue
            key = (min(i + 1, top), 0) if char.finals[t] else (i, t)
            d = ids.get(key)
            if d is None:
                d = ids[key] = len(order)
                order.append(key)
                if len(order) > MAX_PRODUCT_STATES:
                    raise GrammarError("a combination of string constraints is too large to intersect")
            row.append(d)
        trans.append(row)
    return Dfa(char.classes, trans, [c == 0 and i >= lo for i, c in order])


def _product(a: Dfa, b: Dfa, keep: str) -> Dfa:
    """The product automaton: `keep` "and" (both accept) or "minus" (a accepts, b does not)."""
    pairs: dict[tuple[int, int], int] = {}
    joint: dict[tuple[int, int], int] = {}
    classes = bytearray(256)
    for byte in range(256):
        classes[byte] = joint.setdefault((a.classes[byte], b.classes[byte]), len(joint))
    cls_pairs = list(joint)
    # With "minus", a pair whose b state accepts everything from there (a final sink) never ends
    # in a final pair: dropped, so that subtracting `.*x.*` does not track what follows an x.
    sinks = {s for s, row in enumerate(b.trans) if b.finals[s] and all(t == s for t in row)} if keep == "minus" else set()
    order: list[tuple[int, int]] = [(0, 0)]
    pairs[(0, 0)] = 0
    trans: list[list[int]] = []
    finals: list[bool] = []
    both = keep == "and"
    while len(trans) < len(order):
        sa, sb = order[len(trans)]
        arow = a.trans[sa] if sa >= 0 else None
        brow = b.trans[sb] if sb >= 0 else None
        row = []
        for ca, cb in cls_pairs:
            ta = arow[ca] if arow is not None else -1
            tb = brow[cb] if brow is not None else -1
            if ta < 0 or (tb < 0 and both) or tb in sinks:
                row.append(-1)
                continue
            key = (ta, tb)
            d = pairs.get(key)
            if d is None:
                d = pairs[key] = len(order)
                order.append(key)
                if len(order) > MAX_PRODUCT_STATES:
                    raise GrammarError("a combination of string constraints is too large to intersect")
            row.append(d)
        trans.append(row)
        fa = a.finals[sa]
        fb = sb >= 0 and b.finals[sb]
        finals.append(fa and fb if keep == "and" else fa and not fb)
        if len(trans) & 1023 == 0:
            check_time_limit()
    return Dfa(bytes(classes), trans, finals)


def intersect(a: Dfa, b: Dfa) -> Dfa:
    return minimize(_product(a, b, "and"))


def minus(a: Dfa, b: Dfa) -> Dfa:
    """The strings of `a` that `b` does not accept."""
    return minimize(_product(a, b, "minus"))


MINIMIZE_UP_TO = 600  # states: Moore's refinement takes a round per step of the longest distinction


def minimize(dfa: Dfa) -> Dfa:
    """The minimal DFA of the same language (Moore's partition refinement over the live states),
    so that products of products stay as small as their languages need; a DFA of more than
    MINIMIZE_UP_TO states (a counted length, already near minimal) is kept as it is."""
    if len(dfa.trans) > MINIMIZE_UP_TO:
        return dfa
    live = _coreachable(dfa, dfa._live())
    if 0 not in live:
        return Dfa(dfa.classes, [[-1] * dfa.num_classes], [False])
    states = sorted(live)
    rows = [[t if t in live else -1 for t in dfa.trans[s]] for s in states]  # dead targets: -1, once
    # block[s] for every state, and block[-1] (the last slot) -1 for "no transition"
    block = [-1] * (len(dfa.trans) + 1)
    for s in states:
        block[s] = int(dfa.finals[s])
    num_blocks = len(set(block[s] for s in states))
    while True:
        signature: dict[tuple, int] = {}
        new = [-1] * len(block)
        for s, row in zip(states, rows):
            new[s] = signature.setdefault((block[s], tuple(map(block.__getitem__, row))), len(signature))
        block = new
        if len(signature) == num_blocks:
            break
        num_blocks = len(signature)
        check_time_limit()
    ids = {block[0]: 0}
    for s in states:
        ids.setdefault(block[s], len(ids))
    trans: list[list[int]] = [[] for _ in ids]
    finals = [False] * len(ids)
    for s, row in zip(states, rows):
        b = ids[block[s]]
        if not trans[b]:
            trans[b] = [ids[block[t]] if t >= 0 else -1 for t in row]
            finals[b] = dfa.finals[s]
    return Dfa(dfa.classes, trans, finals)


def between(dfa: Dfa, first: int, last: int) -> Dfa:
    """The strings s with `first` s `last` accepted (neither byte inside s): the language of a
    pattern whose anchors are the marker bytes `first` and `last` around the text."""
    start = dfa.trans[0][dfa.classes[first]]
    if start < 0:
        return Dfa(bytes(256), [[-1]], [False])
    dead = dfa.num_classes  # the markers' own class, leading nowhere
    classes = bytes(dead if b in (first, last) else dfa.classes[b] for b in range(256))
    ids = {start: 0}
    order = [start]
    trans: list[list[int]] = []
    finals: list[bool] = []
    while len(trans) < len(order):
        s = order[len(trans)]
        row = []
        for t in dfa.trans[s] + [-1]:
            if t >= 0 and t not in ids:
                ids[t] = len(order)
                order.append(t)
            row.append(ids[t] if t >= 0 else -1)
        trans.append(row)
        end = dfa.trans[s][dfa.classes[last]]
        finals.append(end >= 0 and dfa.finals[end])
    return minimize(Dfa(classes, trans, finals))


def to_node(dfa: Dfa) -> Node:
    """The DFA as a grammar graph (NOTHING for the empty language), live states only."""
    reach = dfa._live()
    coreach = _coreachable(dfa, reach)
    if 0 not in coreach:
        return NOTHING
    ids = {0: 0}
    for s in sorted(coreach):
        ids.setdefault(s, len(ids))
    by_class: list[list[tuple[int, int]]] = [[] for _ in range(dfa.num_classes)]
    for byte in range(256):
        by_class[dfa.classes[byte]].append((byte, byte))
    edges: list[tuple[int, int, Node | None]] = []
    for s, i in ids.items():
        targets: dict[int, list[tuple[int, int]]] = {}
        for c, t in enumerate(dfa.trans[s]):
            if t in coreach:
                targets.setdefault(ids[t], []).extend(by_class[c])
        edges += [(i, j, Bytes(merge_ranges(r))) for j, r in targets.items()]
    finals = tuple(ids[s] for s in ids if dfa.finals[s])
    return Graph(len(ids), tuple(edges), finals)


def _coreachable(dfa: Dfa, reach: set[int]) -> set[int]:
    """Reachable states from which a final state is reachable."""
    back: dict[int, list[int]] = {}
    for s in reach:
        for t in dfa.trans[s]:
            if t >= 0:
                back.setdefault(t, []).append(s)
    live = {s for s in reach if dfa.finals[s]}
    todo = list(live)
    while todo:
        for p in back.get(todo.pop(), ()):
            if p not in live:
                live.add(p)
                todo.append(p)
    return live


def unbounded(node: Node, over: int) -> Node:
    """`node` with each repeat of more than `over` optional copies taken without its upper bound:
    a superset of its language, whose automaton does not count (to subtract a larger language
    where the exact one is too large to build)."""
    if isinstance(node, Repeat):
        item = unbounded(node.item, over)
        if node.max is not None and node.max - node.min > over:
            return Repeat(item, node.min, None)
        return Repeat(item, node.min, node.max) if item is not node.item else node
    if isinstance(node, Seq):
        return Seq(tuple(unbounded(i, over) for i in node.items))
    if isinstance(node, Alt):
        return Alt(tuple(unbounded(i, over) for i in node.items))
    if isinstance(node, Graph):
        edges = tuple((a, b, None if e is None else unbounded(e, over)) for a, b, e in node.edges)
        return Graph(node.num_states, edges, node.finals)
    return node
