"""Builds a byte NFA with call edges from a `Grammar`: non-recursive rules inlined, recursive ones called."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from grammar.errors import GrammarError
from grammar.ir import Alt, Bytes, Grammar, Graph, Node, Ref, Repeat, Seq, node_size
from grammar.time_limit import check_time_limit

HOIST_MIN_SIZE = 150     # a repeated item at least this big becomes its own called rule...
HOIST_MIN_COPIES = 4     # ...when it is copied at least this many times
BIG_RULE_SIZE = 4000     # a rule referenced from several places is called, not inlined, above this
COMPACT_RULE_SIZE = 200  # compact: above this, a rule referenced from several places is called
MAX_NFA_STATES = 400_000
# A grammar whose inlined NFA would pass this many states is built compact: every repeat of
# COMPACT_REPEAT_SIZE states or more calls its item as a rule instead of copying it (a string with
# maxLength 32767: one state and a call per character, not a copy of the character's automaton).
COMPACT_ABOVE = 150_000
COMPACT_REPEAT_SIZE = 64
SPLIT_ABOVE = 1024  # compact: a repeat of more copies is blocks of about sqrt(copies) copies, called


@dataclass(slots=True)
class Nfa:
    """Byte edges, epsilon edges and call edges per state; one start and final state per rule."""

    byte_edges: list[list[tuple[int, int, int]]] = field(default_factory=list)
    eps: list[list[int]] = field(default_factory=list)
    calls: list[list[tuple[int, int]]] = field(default_factory=list)
    rule_start: list[int] = field(default_factory=list)
    rule_final: list[int] = field(default_factory=list)
    rule_names: list[str] = field(default_factory=list)

    def new_state(self) -> int:
        n = len(self.eps)
        self.byte_edges.append([])
        self.eps.append([])
        self.calls.append([])
        if not (n + 1) & 1023:
            self.check_size(n + 1)
        return n

    def check_size(self, num_states: int) -> None:
        """Every 1024 states: the state limit and the compile's time limit."""
        if num_states > MAX_NFA_STATES:
            raise GrammarError(f"grammar too large (over {MAX_NFA_STATES} automaton states)")
        check_time_limit()


_KINDS = (Bytes, Seq, Alt, Repeat, Ref, Graph)


def _kind(node: Node) -> type:
    """The node class `node` is (a type check: a subclass, such as Lark's group while parsing,
    is found by isinstance, the slow way)."""
    kind = type(node)
    return kind if kind in _KINDS else next(k for k in _KINDS if isinstance(node, k))


@dataclass(slots=True)
class _RuleFacts:
    """What one pass over every rule's nodes finds: the rules each refers to, how many references
    each has in all, and for the inline size each rule's own nodes (weighted by how many copies
    its repeats make) and its references with their copy counts."""

    graph: dict[str, set[str]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    own_size: dict[str, int] = field(default_factory=dict)
    ref_times: dict[str, list[tuple[str, int]]] = field(default_factory=dict)


def _rule_facts(grammar: Grammar) -> _RuleFacts:
    facts = _RuleFacts()
    counts = facts.counts
    for name, node in grammar.rules.items():
        refs: set[str] = set()
        ref_times: list[tuple[str, int]] = []
        size = 0
        ones: list[Node] = [node]  # nodes copied once (most of them: no tuple per node)...
        stack: list[tuple[Node, int]] = []  # ...and nodes inside repeats, with their copy counts
        while ones or stack:
            if ones:
                cur, times = ones.pop(), 1
            else:
                cur, times = stack.pop()
            size += times
            kind = type(cur)
            if kind not in _KINDS:
                kind = _kind(cur)
            if kind is Seq or kind is Alt:
                if times == 1:
                    ones.extend(cur.items)
                else:
                    stack.extend([(i, times) for i in cur.items])
            elif kind is Ref:
                if cur.name not in grammar.rules:
                    raise GrammarError(f"undefined rule {cur.name!r}")
                refs.add(cur.name)
                counts[cur.name] = counts.get(cur.name, 0) + 1
                ref_times.append((cur.name, times))
            elif kind is Repeat:
                copies = times * max(cur.min if cur.max is None else cur.max, 1)
                if copies == 1:
                    ones.append(cur.item)
                else:
                    stack.append((cur.item, copies))
            elif kind is Graph:
                labels = [e for _, _, e in cur.edges if e is not None]
                if times == 1:
                    ones.extend(labels)
                else:
                    stack.extend([(e, times) for e in labels])
                size += times * cur.num_states
        facts.graph[name] = refs
        facts.own_size[name] = size
        facts.ref_times[name] = ref_times
    return facts


def _recursive_rules(graph: dict[str, set[str]]) -> set[str]:
    """Rules that can reach themselves through references."""
    out: set[str] = set()
    for start in graph:
        check_time_limit()  # rules times references: thousands of $defs
        seen: set[str] = set()
        todo = list(graph[start])
        while todo:
            cur = todo.pop()
            if cur == start:
                out.add(start)
                break
            if cur not in seen:
                seen.add(cur)
                todo.extend(graph[cur])
    return out


class NfaBuilder:
    """Turns a `Grammar` into an `Nfa`; called once per compile."""

    def __init__(self, grammar: Grammar) -> None:
        self.grammar = grammar
        self.rules = dict(grammar.rules)
        self.facts = _rule_facts(grammar)
        self.num_refs = self.facts.counts
        self.recursive = _recursive_rules(self.facts.graph)
        self.sizes: dict[int, int] = {}
        self.nfa = Nfa()
        self.rule_ids: dict[str, int] = {}
        self.pending: list[str] = []
        self.hoisted: dict[int, str] = {}
        self.compact = False
        self.compact = self.inline_size(grammar.start, {}) > COMPACT_ABOVE

    def build(self) -> Nfa:
        self.rule_id(self.grammar.start)
        while self.pending:
            name = self.pending.pop()
            rid = self.rule_ids[name]
            self.emit(self.rules[name], self.nfa.rule_start[rid], self.nfa.rule_final[rid])
        return self.nfa

    def rule_id(self, name: str) -> int:
        if name not in self.rule_ids:
            self.rule_ids[name] = len(self.nfa.rule_start)
            self.nfa.rule_start.append(self.nfa.new_state())
            self.nfa.rule_final.append(self.nfa.new_state())
            self.nfa.rule_names.append(name)
            self.pending.append(name)
        return self.rule_ids[name]

    def inline_size(self, name: str, memo: dict[str, int]) -> int:
        """About how many NFA states rule `name` takes with the rules it inlines (its nodes, each
        counted once per copy; refs of called rules count one). Only compared with COMPACT_ABOVE."""
        if name in memo:
            return memo[name]
        memo[name] = 1  # (a recursive rule is called: counted once)
        total = self.facts.own_size[name]
        for ref, times in self.facts.ref_times[name]:
            if total > COMPACT_ABOVE:
                break
            if not self.is_call(ref):
                total += times * self.inline_size(ref, memo)
        memo[name] = total
        return total

    def is_call(self, name: str) -> bool:
        if name in self.recursive:
            return True
        big = node_size(self.rules[name], self.rules, self.sizes) > (COMPACT_RULE_SIZE if self.compact else BIG_RULE_SIZE)
        return big and self.num_refs.get(name, 0) > 1

    def emit(self, node: Node, s: int, t: int) -> None:
        nfa = self.nfa
        kind = type(node)
        if kind is Bytes:
            ranges = node.ranges
            if len(ranges) == 1:
                ((lo, hi),) = ranges
                nfa.byte_edges[s].append((lo, hi, t))
            else:
                nfa.byte_edges[s].extend([(lo, hi, t) for lo, hi in ranges])
        elif kind is Seq:
            self.emit_seq(node.items, s, t)
        elif kind is Alt:
            for item in node.items:
                self.emit(item, s, t)
        elif kind is Repeat:
            self.emit_repeat(node, s, t)
        elif kind is Ref:
            if node.name not in self.rules:
                raise GrammarError(f"undefined rule {node.name!r}")
            if self.is_call(node.name):
                nfa.calls[s].append((self.rule_id(node.name), t))
            else:
                self.emit(self.rules[node.name], s, t)
        elif kind is Graph:
            self.emit_graph(node, s, t)
        else:  # a subclass (such as Lark's group while parsing): as a node of its base class
            base = _kind(node)
            self.emit(base(*(getattr(node, f) for f in base.__slots__)), s, t)

    def emit_seq(self, items: tuple[Node, ...], s: int, t: int) -> None:
        if not items:
            self.nfa.eps[s].append(t)
            return
        cur = s
        last = len(items) - 1
        nfa = self.nfa
        emit, byte_edges, eps, calls = self.emit, nfa.byte_edges, nfa.eps, nfa.calls
        for i, item in enumerate(items):
            if i == last:
                nxt = t
            else:  # nfa.new_state(), inline
                nxt = len(eps)
                byte_edges.append([])
                eps.append([])
                calls.append([])
                if not (nxt + 1) & 1023:
                    nfa.check_size(nxt + 1)
            if type(item) is Bytes and len(item.ranges) == 1:  # a literal's byte: emit's first case, inline
                lo, hi = item.ranges[0]
                byte_edges[cur].append((lo, hi, nxt))
            else:
                emit(item, cur, nxt)
            cur = nxt

    def emit_repeat(self, node: Repeat, s: int, t: int) -> None:
        if self.compact and (node.min > SPLIT_ABOVE or (node.max is not None and node.max - node.min > SPLIT_ABOVE)):
            self.emit(_split(node), s, t)
            return
        item = node.item
        copies = node.min if node.max is None else node.max
        size = node_size(item, self.rules, self.sizes) if copies >= HOIST_MIN_COPIES else 0
        if size >= HOIST_MIN_SIZE or (self.compact and size * copies >= COMPACT_REPEAT_SIZE):
            name = self.hoisted.setdefault(id(item), f"@repeat{len(self.hoisted)}")
            self.rules[name] = item
            item = Ref(name)
            self.recursive.add(name)  # force a call
        cur = s
        for _ in range(node.min):
            nxt = self.nfa.new_state()
            self.emit(item, cur, nxt)
            cur = nxt
        if node.max is None:
            loop = self.nfa.new_state()
            self.nfa.eps[cur].append(loop)
            self.emit(item, loop, loop)
            self.nfa.eps[loop].append(t)
            return
        for _ in range(node.max - node.min):
            self.nfa.eps[cur].append(t)
            nxt = self.nfa.new_state()
            self.emit(item, cur, nxt)
            cur = nxt
        self.nfa.eps[cur].append(t)

    def emit_graph(self, node: Graph, s: int, t: int) -> None:
        states = [self.nfa.new_state() for _ in range(node.num_states)]
        self.nfa.eps[s].append(states[0])
        for a, b, label in node.edges:
            if label is None:
                self.nfa.eps[states[a]].append(states[b])
            else:
                self.emit(label, states[a], states[b])
        for f in node.finals:
            self.nfa.eps[states[f]].append(t)


def _split(node: Repeat) -> Node:
    """The same language with no repeat of more than about SPLIT_ABOVE copies, in blocks of b
    copies that are then called rules: item^n as (item^b)^(n // b) item^(n % b), and item^0..m
    (m = k b + r, r < b) as (item^b)^0..k-1 (item^0..b-1 | item^b item^0..r), where at each point
    only the block, the short tail and the last block can be under way (a few pushdown
    configurations, not one per way of cutting the text into blocks)."""
    item, parts = node.item, []
    lo = node.min
    if lo > SPLIT_ABOVE:
        b = math.isqrt(lo)
        parts += [Repeat(Repeat(item, b, b), lo // b, lo // b), Repeat(item, lo % b, lo % b)]
    else:
        parts.append(Repeat(item, lo, lo))
    if node.max is None:
        parts.append(Repeat(item, 0, None))
    elif node.max - lo > SPLIT_ABOVE:
        m = node.max - lo
        b = math.isqrt(m)
        k, r = divmod(m, b)
        block = Repeat(item, b, b)
        parts += [Repeat(block, 0, k - 1), Alt((Repeat(item, 0, b - 1), Seq((block, Repeat(item, 0, r)))))]
    else:
        parts.append(Repeat(item, 0, node.max - lo))
    return Seq(tuple(p for p in parts if not (isinstance(p, Repeat) and p.max == 0)))


def build_nfa(grammar: Grammar) -> Nfa:
    return NfaBuilder(grammar).build()
